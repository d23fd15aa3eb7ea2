"""Everything that touches hosts: SSH (or local) transports, the fan-out over many, and the phases.

The rest of ascendprep is pure (inventory, desired state, plan, checks, probe parsers); this
package is the edge where that core meets the machines::

    access = HostAccess(name="node1", address="10.0.0.11", key_file="lab_key",
                        known_hosts=known_hosts_files(["known_hosts"]))
    with SSHTransport(access) as host:
        result = host.run_script(PROBE_SCRIPT)          # ExecResult(rc, stdout, stderr, ...)
        host.put(worker_bytes, "/tmp/worker.py", 0o644)

    with Session(hosts, forks=64) as session:           # one connection per host per command
        facts = gather_facts(session, inventory, progress_for_terminal("facts"))
        results = apply_changes(session, changes, tools) # same connections

Modules, by layer:

* connecting: ``access`` (what to reach a host with), ``ssh`` (paramiko, jump hosts, SFTP or
  streamed uploads), ``local`` (the same interface on this machine), ``transport`` (the
  interface), ``hostkeys``, ``sudo``, ``shell`` (wrapping scripts), ``capture`` (output caps),
  ``result``, ``errors`` (failure kinds, :data:`~ascendprep.remote.errors.HOST_ERROR_KINDS`),
  ``diagnose`` (what a failed connect means);
* many hosts: ``fanout`` (:class:`~ascendprep.run.fanout.Session`), ``deadline`` (the
  command's ``--timeout``), ``progress``;
* the phases: ``hosts`` (accesses from the inventory, gather, apply), ``evidence`` (verify's
  gather and pings), ``allreduce`` (the all-reduce jobs over SSH), ``bundle`` (verify's
  evidence saved to disk and read back).

This file imports nothing, so that a command (or ``--help``) that needs one light module, say
``fleet.sudo``, does not load paramiko and fabric with it: import from the modules.
"""
