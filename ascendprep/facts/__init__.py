"""Host facts: the shell that gathers them and the pure parsers that read its output.

- :mod:`~ascendprep.facts.gather`: one read-only script per host → :class:`~ascendprep.facts.model.HostFacts`,
  rendered and read by looping over the probe units of :mod:`~ascendprep.facts.units` (the
  interface: :mod:`~ascendprep.facts.unit`; adding a probe is one declaration there).
- :mod:`~ascendprep.facts.ping`: NPU-to-NPU pings from one node → ``PingResult`` list.
- One parser module per tool or file (``hccn``, ``npu_smi``, ``versions``, ``hccn_conf``,
  ``sysctl``, ``firewall``, ``python_pkgs``, ``system``): text in, values out, no I/O.
- :mod:`~ascendprep.base.paths`: where things live on a host (shared with apply and desired state).
- :mod:`~ascendprep.facts.sections` / :mod:`~ascendprep.facts.shell`: the output framing and
  the sh helpers both scripts share.
"""
