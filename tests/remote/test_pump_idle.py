"""A script that runs a while without printing costs the controller few wake-ups, not 20 a second.

Output, EOF and close wake :func:`ascendprep.remote.ssh.pump_channel` at once, so its idle rounds
only space out waiting; at 4,096 hosts (64 at a time) every wasted round is controller CPU.
"""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sshd_server import Sshd

from ascendprep.remote import ssh
from ascendprep.remote.ssh import SSHTransport


def _counting_select(monkeypatch: pytest.MonkeyPatch) -> list:
    """Count the waits of ``ssh.py``'s own ``select`` in this thread (other tests' leftover
    threads may be in ``select.select`` too: the module itself is left alone)."""
    calls: list = []
    real = select.select
    me = threading.get_ident()

    def counted(*args, **kwargs):
        if threading.get_ident() == me:
            calls.append(args[3] if len(args) > 3 else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssh, "select", SimpleNamespace(select=counted))
    return calls


def test_a_quiet_script_wakes_the_controller_a_few_times_a_second(
    sshd: Sshd, known_hosts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        calls = _counting_select(monkeypatch)
        started = time.monotonic()
        result = host.run_script("sleep 2\necho done\n")
        elapsed = time.monotonic() - started
    assert (result.rc, result.stdout) == (0, "done\n")
    # At most 4 idle rounds a second plus the rounds that output, EOF and close cut short (the
    # old 0.05 s rounds made ~20 a second).
    assert len(calls) <= 5 * elapsed + 8, f"{len(calls)} waits in {elapsed:.1f} s"


def test_the_deadline_still_ends_a_quiet_script_on_time(
    sshd: Sshd, known_hosts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unlike case: longer idle waits never carry the pump past the script's deadline."""
    returned: list = []
    real = ssh.pump_channel

    def timed(channel, stdin, timeout, *args, **kwargs):
        started = time.monotonic()
        try:
            return real(channel, stdin, timeout, *args, **kwargs)
        finally:
            returned.append((timeout, time.monotonic() - started))

    monkeypatch.setattr(ssh, "pump_channel", timed)
    with SSHTransport(sshd.access(known_hosts=[known_hosts], command_timeout=4.0)) as host:
        result = host.run_script("sleep 30\n")
    assert result.timed_out
    timeout, took = returned[0]
    assert timeout is not None and timeout <= 4.0
    assert timeout - 0.01 <= took < timeout + 0.1
