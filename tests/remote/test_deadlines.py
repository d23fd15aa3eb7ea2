"""Every SSH step has a deadline: a server that accepts a request and never answers it costs
that host its deadline, never the command (in-process paramiko servers that misbehave)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest
from fakeserver import FakeSSHServer

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import CommandTimeout
from ascendprep.remote.ssh import SSHTransport
from ascendprep.run.fanout import Session


def _quick(transport: SSHTransport) -> SSHTransport:
    transport.request_timeout = 1.0
    transport.sftp_timeout = 1.0
    return transport


@pytest.fixture
def hung_exec(tmp_path: Path) -> Iterator[FakeSSHServer]:
    with FakeSSHServer(tmp_path / "hung", exec_mode="hang") as server:
        yield server


@pytest.fixture
def hung_sftp(tmp_path: Path) -> Iterator[FakeSSHServer]:
    with FakeSSHServer(tmp_path / "sftp", exec_mode="run", sftp_mode="hang") as server:
        yield server


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path) -> None:
    (tmp_path / "hung").mkdir()
    (tmp_path / "sftp").mkdir()
    (tmp_path / "good").mkdir()


def test_an_exec_request_that_is_never_answered_times_out(hung_exec: FakeSSHServer) -> None:
    started = time.monotonic()
    with _quick(SSHTransport(hung_exec.access(name="node7"))) as host:
        with pytest.raises(CommandTimeout) as caught:
            host.run_script("echo never", timeout=30)
    assert time.monotonic() - started < 10
    assert caught.value.kind == "timeout"
    assert str(caught.value).startswith("node7: timed out in exec request after 1s")
    assert hung_exec.exec_requests == 1


def test_a_hung_host_in_a_fanout_does_not_hold_up_the_others(hung_exec: FakeSSHServer, tmp_path: Path) -> None:
    with FakeSSHServer(tmp_path / "good", exec_mode="run") as good:
        hosts = [hung_exec.access(name="stuck"), good.access(name="fine")]
        factory = lambda access: _quick(SSHTransport(access)).open()  # noqa: E731
        started = time.monotonic()
        with Session(hosts, forks=2, transport_factory=factory) as session:
            outcomes = session.run(lambda transport, _: transport.run_script("echo hello").stdout)
    assert time.monotonic() - started < 15
    assert outcomes["fine"].ok and outcomes["fine"].value == "hello\n"
    assert outcomes["stuck"].kind == "timeout"
    assert "timed out in exec request" in (outcomes["stuck"].error or "")


def test_an_sftp_operation_that_is_never_answered_times_out(hung_sftp: FakeSSHServer, tmp_path: Path) -> None:
    target = tmp_path / "worker.py"
    started = time.monotonic()
    with _quick(SSHTransport(hung_sftp.access(name="node3"))) as host:
        with pytest.raises(CommandTimeout) as caught:
            host.put(b"print('hi')\n", str(target), 0o644)
        assert host.run_script("echo still usable").stdout == "still usable\n"
    assert time.monotonic() - started < 15
    assert str(caught.value).startswith("node3: timed out in sftp open after 1s")
    assert not target.exists()


def test_a_host_that_never_finishes_the_handshake_times_out_in_key_exchange(tmp_path: Path) -> None:
    """A TCP listener that answers the SSH greeting and then goes silent (slow auth)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            held.append(client)
            client.sendall(b"SSH-2.0-OpenSSH_9.0\r\n")  # then nothing: no key exchange

    threading.Thread(target=serve, daemon=True).start()
    access = HostAccess(
        name="mute",
        address="127.0.0.1",
        port=listener.getsockname()[1],
        known_hosts=[tmp_path / "kh"],
        connect_timeout=1,
    )
    started = time.monotonic()
    try:
        with pytest.raises(CommandTimeout) as caught:
            SSHTransport(access).open()
    finally:
        listener.close()
        for client in held:
            client.close()
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith("mute: timed out in key exchange after 1s")


@pytest.mark.parametrize("step", ["auth", "channel open"])
def test_a_login_step_that_is_never_answered_times_out(tmp_path: Path, step: str) -> None:
    with FakeSSHServer(tmp_path / "good", hang_in=step) as server:
        started = time.monotonic()
        with pytest.raises(CommandTimeout) as caught:
            with SSHTransport(server.access(name="node4", connect_timeout=1)) as host:
                host.run_script("echo never")
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith(f"node4: timed out in {step} after 1s")


def test_plan_against_a_host_that_never_answers_exec_ends_and_names_the_step(
    hung_exec: FakeSSHServer, tmp_path: Path
) -> None:
    """The user's view: ``ascendprep plan`` ends (today it hangs forever) and says where it stuck."""
    import os
    import subprocess
    import sys

    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        f"""name: t
product: atlas-a2
npus_per_node: 2
device_network: {{subnet: 10.20.0.0/24, detect: peer}}
ssh: {{key: {hung_exec.client_key_path}, known_hosts: {hung_exec.known_hosts}, connect_timeout: 5}}
nodes:
  - {{name: node1, host: 127.0.0.1, port: {hung_exec.port}}}
firewall: leave
"""
    )
    worktree = str(Path(__file__).resolve().parents[2])
    environment = {**os.environ, "PYTHONPATH": worktree, "HOME": str(tmp_path), "COLUMNS": "300"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ascendprep", "plan", str(inventory)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert time.monotonic() - started < 120
    assert done.returncode != 0
    assert "node1: timed out in exec request after 15s" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
