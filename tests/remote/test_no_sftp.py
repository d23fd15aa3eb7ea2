"""Hosts without an SFTP subsystem: put() and fetch() go through the exec channel instead.

The server here is the in-process paramiko server with no sftp subsystem at all (as a hardened
sshd without ``Subsystem sftp``); the same calls against the real sshd (with SFTP) are in
test_ssh.py, so both variants are covered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from fakeserver import FakeSSHServer
from sshd_server import Sshd

from ascendprep.remote.errors import OutputTooLarge, RemoteError
from ascendprep.remote.ssh import SSHTransport


@pytest.fixture
def no_sftp(tmp_path: Path) -> Iterator[FakeSSHServer]:
    folder = tmp_path / "server"
    folder.mkdir()
    with FakeSSHServer(folder, exec_mode="run", sftp_mode="none") as server:
        yield server


# Every byte value, the shell's special characters, a leading '-', and more than one printf chunk.
AWKWARD = b"-n %s %% \\ ' \" $HOME `id` \n\r\t\x00" + bytes(range(256)) * 40


def test_put_without_sftp_streams_the_file_through_exec(no_sftp: FakeSSHServer, tmp_path: Path) -> None:
    target = tmp_path / "run" / "worker.py"
    target.parent.mkdir()
    with SSHTransport(no_sftp.access()) as host:
        host.put(AWKWARD, str(target), 0o640)
        host.put(b"second\n", str(target), 0o600)  # replaces, and remembers SFTP is absent
        execs = host.exec_count
    assert target.read_bytes() == b"second\n"
    assert target.stat().st_mode & 0o7777 == 0o600
    assert os.listdir(target.parent) == ["worker.py"]  # no temp file left
    assert execs == 2


def test_put_without_sftp_keeps_every_byte(no_sftp: FakeSSHServer, tmp_path: Path) -> None:
    target = tmp_path / "blob"
    with SSHTransport(no_sftp.access()) as host:
        host.put(AWKWARD, str(target), 0o644)
    assert target.read_bytes() == AWKWARD
    assert target.stat().st_mode & 0o7777 == 0o644


def test_put_without_sftp_into_a_missing_folder_is_a_clear_error(no_sftp: FakeSSHServer) -> None:
    with SSHTransport(no_sftp.access(name="node5")) as host:
        with pytest.raises(RemoteError) as caught:
            host.put(b"x", "/nonexistent/dir/f", 0o644)
    assert caught.value.kind == "error"
    assert str(caught.value).startswith("writing /nonexistent/dir/f on node5 exited with rc")


def test_fetch_without_sftp(no_sftp: FakeSSHServer, tmp_path: Path) -> None:
    source = tmp_path / "rank0.log"
    source.write_bytes(AWKWARD)
    with SSHTransport(no_sftp.access(name="node2")) as host:
        assert host.fetch(str(source)) == AWKWARD
        with pytest.raises(RemoteError, match=r"^node2: cannot read /nonexistent/log: .*No such file"):
            host.fetch("/nonexistent/log")
        with pytest.raises(OutputTooLarge, match=r"^node2: .*rank0.log is over 1 KB") as caught:
            host.fetch(str(source), cap=1024)
    assert (caught.value.limit, caught.value.cap) == ("FETCH_FILE_CAP", 1024)


def test_put_and_fetch_with_sftp_on_the_real_sshd(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    """The same calls where SFTP exists: put() uses it (no extra exec), fetch() reads via exec."""
    target = tmp_path / "blob"
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        host.put(AWKWARD, str(target), 0o640)
        assert host.exec_count == 0
        assert host.fetch(str(target)) == AWKWARD
    assert target.read_bytes() == AWKWARD and target.stat().st_mode & 0o7777 == 0o640
