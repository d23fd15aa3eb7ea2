"""Node and cluster checks for ``ascendprep verify``: evidence in, named results out.

Pure: nothing here touches a host. The evidence comes from :mod:`ascendprep.run.evidence`
(live) or :mod:`ascendprep.run.bundle` (``--from-bundle``)::

    hosts, pings = collect(session, desired, mesh="ring", with_pings=True)   # fleet.evidence (I/O)
    results = run_checks(desired, hosts, pings, Selection.parse(only, skip))  # runner.py (pure)
    findings = [r.finding() for r in results if r.failed]

Modules: ``model`` (Check, Verdict, CheckResult), ``registry`` (every check, --only/--skip),
``runner``, ``context`` (what checks read), one module per family (``node``, ``network``,
``host``, ``software``, ``cluster``, ``reachability``; grey failures: ``optics``, ``ports``,
``npu_firmware``, ``counters`` (port counter rates), ``health_codes`` (NPU event codes)),
``mesh`` (which NPU pairs to ping). ``data/`` holds the compatibility matrix and thresholds
(owned by ascendprep.compat), and the grey-failure data: ``grey_thresholds.yaml`` (named
thresholds, read by ``grey_thresholds``, overridable in the inventory) and ``health_codes.yaml``.

This file imports nothing on purpose: ``ascendprep.compat`` loads ``data/`` through this package
(importlib.resources), and that must not pull in the whole registry.
"""
