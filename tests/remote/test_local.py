"""LocalTransport behaves like SSHTransport: same results for the same scripts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sshd_server import Sshd, wait_until_gone

from ascendprep.remote.errors import RemoteError
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.result import TIMED_OUT_RC
from ascendprep.remote.ssh import SSHTransport
from ascendprep.remote.transport import Transport

SCRIPTS = [
    "echo out; echo err >&2; exit 5",
    "printf 'no newline'",
    "cat <<'EOF'\n$HOME is not expanded; 'quotes' \"too\"\nEOF",
    'read -r line; echo "read: $line"\nsecond line of the script',  # sh -s: stdin *is* the script
    "printf '\\377\\376 bytes\\n'",
    "exit 0",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_local_and_ssh_agree(script: str, sshd: Sshd, known_hosts: Path) -> None:
    local = LocalTransport().run_script(script)
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        remote = host.run_script(script)
    assert (local.rc, local.stdout, local.stderr) == (remote.rc, remote.stdout, remote.stderr)


def test_local_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sh -c 'trap \"\" TERM; echo $$ >> {pids}; exec sleep 300' &\nsleep 300 & echo $! >> {pids}\nsleep 300\n"
    transport = LocalTransport()
    started = time.monotonic()
    result = transport.run_script(script, timeout=0.5)
    assert result.timed_out and result.rc == TIMED_OUT_RC
    assert time.monotonic() - started < 6
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 2 and wait_until_gone(recorded, seconds=0.5) == []


def test_local_put_and_exec_count(tmp_path: Path) -> None:
    transport: Transport = LocalTransport()
    target = tmp_path / "worker.py"
    transport.put(b"print('hi')\n", str(target), 0o755)
    assert target.read_bytes() == b"print('hi')\n" and target.stat().st_mode & 0o7777 == 0o755
    assert os.listdir(tmp_path) == ["worker.py"]
    with pytest.raises(RemoteError, match="cannot write"):
        transport.put(b"x", str(tmp_path / "missing" / "f"), 0o644)
    transport.run_script("true")
    transport.run_script("true")
    assert transport.exec_count == 2


def test_local_fetch_reads_the_bytes_and_keeps_no_more_than_the_cap(tmp_path: Path) -> None:
    from ascendprep.remote.errors import OutputTooLarge

    source = tmp_path / "log"
    source.write_bytes(bytes(range(256)) * 100)
    host = LocalTransport("here")
    assert host.fetch(str(source)) == bytes(range(256)) * 100
    with pytest.raises(OutputTooLarge, match="is over 10 KB"):
        host.fetch(str(source), cap=10 * 1024)
    with pytest.raises(RemoteError, match=r"^here: cannot read .*absent: .*No such file"):
        host.fetch(str(tmp_path / "absent"))


def test_scripts_and_exec_via_wrappers_on_this_machine_never_get_the_sudo_password(monkeypatch) -> None:
    """A secret in ascendprep's environment stays in ascendprep: a local script (``verify --local``)
    and an ``--exec-via`` wrapper it runs (``docker exec -e NAME`` would copy NAME from there) see
    the rest of the user's environment, never the password."""
    from ascendprep.run.execvia import parse_exec_via, wrap_script

    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "s3cret-sudo-pw")
    monkeypatch.setenv("SITE_SETTING", "kept")
    direct = LocalTransport().run_script("env\n")
    wrapped = LocalTransport().run_script(wrap_script("env\n", parse_exec_via("env")))
    for result in (direct, wrapped):
        assert result.rc == 0, result.stderr
        assert "SITE_SETTING=kept" in result.stdout.splitlines()
        assert "s3cret-sudo-pw" not in result.stdout + result.stderr
        assert "ASCENDPREP_SUDO_PASSWORD" not in result.stdout
