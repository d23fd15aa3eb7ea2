"""WHAT IS TRUE: the fact model of a host and the read-only shell that gathers it.

- the model: :mod:`~ascendprep.facts.model` (``HostFacts`` and its parts), with the blockers'
  and the job environment's facts in ``blocker_model`` and ``jobenv_model``;
- the gather: :mod:`~ascendprep.facts.gather`, one read-only script per host, rendered and read by
  looping over the probe units of :mod:`~ascendprep.facts.units` (the interface:
  :mod:`~ascendprep.facts.unit`; adding a probe is one declaration there), framed by
  ``sections`` and built from ``shell``'s sh helpers;
- :mod:`~ascendprep.facts.ping`: NPU-to-NPU pings from one node -> ``PingResult`` list;
- one parser module per tool or file (``hccn``, ``npu_smi``, ``optics``, ``port_stats``,
  ``versions``, ``hccn_conf``, ``sysctl``, ``firewall``, ``python_pkgs``, ``system``, ...):
  text in, values out, no I/O.
"""
