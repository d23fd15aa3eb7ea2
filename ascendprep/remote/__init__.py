"""Transports: run batched shell scripts on hosts over SSH (or locally), and fan out over many.

The rest of ascendprep sees only this interface::

    access = HostAccess(name="node1", address="10.0.0.11", key_file="lab_key",
                        known_hosts=known_hosts_files(["known_hosts"]))
    with SSHTransport(access) as host:
        result = host.run_script(PROBE_SCRIPT)          # ExecResult(rc, stdout, stderr, ...)
        host.put(worker_bytes, "/tmp/worker.py", 0o644)

    with Session(hosts, forks=64) as session:           # one connection per host per command
        facts = session.run(gather_facts, progress_for_terminal("facts"))
        results = session.run(apply_changes)            # same connections
"""

from ascendprep.remote.access import HostAccess, known_hosts_files
from ascendprep.remote.errors import (
    ERROR_KINDS,
    AuthError,
    CommandFailed,
    CommandTimeout,
    HostKeyError,
    RemoteError,
    SudoError,
    UnreachableError,
)
from ascendprep.remote.fanout import HostOutcome, Session, run_on_hosts
from ascendprep.remote.hostkeys import fingerprint
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.progress import Progress, progress_for_terminal
from ascendprep.remote.result import TIMED_OUT_RC, ExecResult
from ascendprep.remote.ssh import JumpHosts, SSHTransport
from ascendprep.remote.sudo import SUDO_PASSWORD_ENV
from ascendprep.remote.transport import Transport

__all__ = [
    "ERROR_KINDS",
    "SUDO_PASSWORD_ENV",
    "TIMED_OUT_RC",
    "AuthError",
    "CommandFailed",
    "CommandTimeout",
    "ExecResult",
    "HostAccess",
    "HostKeyError",
    "HostOutcome",
    "JumpHosts",
    "LocalTransport",
    "Progress",
    "RemoteError",
    "SSHTransport",
    "Session",
    "SudoError",
    "Transport",
    "UnreachableError",
    "fingerprint",
    "known_hosts_files",
    "progress_for_terminal",
    "run_on_hosts",
]
