"""Host facts: the shell that gathers them and the pure parsers that read its output.

- :mod:`~ascendprep.probes.gather`: one read-only script per host → :class:`~ascendprep.facts.HostFacts`,
  rendered and read by looping over the probe units of :mod:`~ascendprep.probes.units` (the
  interface: :mod:`~ascendprep.probes.unit`; adding a probe is one declaration there).
- :mod:`~ascendprep.probes.ping`: NPU-to-NPU pings from one node → ``PingResult`` list.
- One parser module per tool or file (``hccn``, ``npu_smi``, ``versions``, ``hccn_conf``,
  ``sysctl``, ``firewall``, ``python_pkgs``, ``system``): text in, values out, no I/O.
- :mod:`~ascendprep.probes.paths`: where things live on a host (shared with apply and desired state).
- :mod:`~ascendprep.probes.sections` / :mod:`~ascendprep.probes.shell`: the output framing and
  the sh helpers both scripts share.
"""
