"""SSHTransport against a real sshd: scripts, one connection, timeouts, host keys, auth, put."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, List

import paramiko
import pytest
from sshd_server import Sshd, free_port, keygen, wait_until_gone

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import AuthError, HostKeyError, RemoteError, UnreachableError
from ascendprep.remote.hostkeys import fingerprint
from ascendprep.remote.result import TIMED_OUT_RC
from ascendprep.remote.ssh import SSHTransport


class FlakyProxy:
    """A TCP forwarder to the sshd that hangs up on the first ``drop`` connections at once,
    as an overloaded sshd (MaxStartups) or a flapping link would."""

    def __init__(self, target_port: int, drop: int) -> None:
        self.target_port = target_port
        self.drop = drop
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: List[socket.socket] = [self._listener]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # listener closed: the test is over
            self.accepted += 1
            if self.accepted <= self.drop:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            return  # the other direction closed the pair
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                return

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def flaky_proxy(sshd: Sshd) -> Iterator[FlakyProxy]:
    proxy = FlakyProxy(sshd.port, drop=1)
    yield proxy
    proxy.close()


def _server_key(sshd: Sshd) -> paramiko.PKey:
    return paramiko.Ed25519Key.from_private_key_file(str(sshd.directory / "host_ed25519"))


def test_run_script_returns_rc_stdout_and_stderr(sshd: Sshd, known_hosts: Path) -> None:
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        result = host.run_script("echo \"it's $((6 * 7))\"\necho 'to stderr' >&2\nexit 3\n")
    assert (result.rc, result.stdout, result.stderr, result.timed_out) == (3, "it's 42\n", "to stderr\n", False)
    assert result.seconds > 0


def test_large_script_and_large_output_do_not_deadlock(sshd: Sshd, known_hosts: Path) -> None:
    # 2 MB of script in, 4 MB of output back: more than any SSH window, in both directions.
    filler = "".join(f": filler line {i} {'x' * 40}\n" for i in range(40000))
    script = filler + "head -c 4000000 /dev/zero | tr '\\0' a\necho done >&2\n"
    assert len(script) > 2_000_000
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        result = host.run_script(script)
    assert result.rc == 0 and result.stderr == "done\n"
    assert len(result.stdout) == 4_000_000 and set(result.stdout) == {"a"}


def test_every_call_reuses_one_connection(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    before = sshd.logins()
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        outputs = [host.run_script(f"echo {i}").stdout for i in range(5)]
        host.put(b"payload", str(tmp_path / "file"), 0o600)
        assert host.exec_count == 5
    assert outputs == [f"{i}\n" for i in range(5)]
    assert sshd.logins() - before == 1


def test_timeout_kills_the_script_and_everything_it_started(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        f"sleep 300 & echo $! >> {pids}\n"
        # a child that ignores SIGTERM (and SIGHUP): only SIGKILL stops it
        f"sh -c 'trap \"\" TERM HUP; echo $$ >> {pids}; exec sleep 300' &\n"
        f"echo $$ >> {pids}\n"
        "echo started\n"
        "sleep 300\n"
    )
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        started = time.monotonic()
        result = host.run_script(script, timeout=1.5)
        elapsed = time.monotonic() - started
        assert host.run_script("echo still usable").stdout == "still usable\n"
    assert result.timed_out and result.rc == TIMED_OUT_RC
    assert result.stdout == "started\n"
    assert elapsed < 10
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 3
    assert wait_until_gone(recorded) == []


def test_unknown_host_key_is_refused_with_its_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(HostKeyError) as caught:
        SSHTransport(sshd.access(known_hosts=[empty])).open()
    message = str(caught.value)
    assert caught.value.kind == "host_key"
    assert "node1" in message and fingerprint(_server_key(sshd)) in message
    assert "--accept-new-host-keys" in message
    assert empty.read_text() == ""


def test_missing_known_hosts_file_is_named(sshd: Sshd, tmp_path: Path) -> None:
    absent = tmp_path / "inventory_known_hosts"
    with pytest.raises(HostKeyError, match=f"missing known_hosts file: {absent}"):
        SSHTransport(sshd.access(known_hosts=[absent])).open()


def test_accepted_new_key_is_recorded_in_the_first_file_and_trusted_next_time(sshd: Sshd, tmp_path: Path) -> None:
    first, second = tmp_path / "inventory_known_hosts", tmp_path / "user_known_hosts"
    second.write_text("")
    with SSHTransport(sshd.access(known_hosts=[first, second], accept_new_host_keys=True)) as host:
        assert host.run_script("echo ok").stdout == "ok\n"
    assert first.read_text() == sshd.known_hosts_line()
    assert second.read_text() == ""
    with SSHTransport(sshd.access(known_hosts=[first, second])) as host:  # no flag needed now
        assert host.run_script("echo again").stdout == "again\n"
    assert first.read_text() == sshd.known_hosts_line()  # not recorded twice


def test_hashed_known_hosts_entries_are_trusted(sshd: Sshd, known_hosts: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known_hosts)], check=True, capture_output=True)
    assert known_hosts.read_text().startswith("|1|")
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        assert host.run_script("echo ok").stdout == "ok\n"


def test_changed_host_key_is_refused_even_with_accept_new(sshd: Sshd, tmp_path: Path) -> None:
    impostor = keygen(tmp_path / "impostor")
    path = tmp_path / "known_hosts"
    path.write_text(f"[127.0.0.1]:{sshd.port} {impostor}\n")
    before = path.read_text()
    with pytest.raises(HostKeyError) as caught:
        SSHTransport(sshd.access(known_hosts=[path], accept_new_host_keys=True)).open()
    message = str(caught.value)
    assert "HOST KEY CHANGED for node1" in message
    assert fingerprint(_server_key(sshd)) in message and f"{path}:1" in message
    assert path.read_text() == before


def test_rejected_key_is_an_auth_error(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    with pytest.raises(AuthError) as caught:
        SSHTransport(sshd.access(known_hosts=[known_hosts], key_file=str(tmp_path / "stranger"))).open()
    assert f"authentication as {sshd.user} on 127.0.0.1:{sshd.port} failed" in str(caught.value)


def test_missing_and_unreadable_key_files(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="SSH key file .*/absent does not exist"):
        SSHTransport(sshd.access(known_hosts=[known_hosts], key_file=str(tmp_path / "absent"))).open()
    not_a_key = tmp_path / "notes.txt"
    not_a_key.write_text("hello\n")
    with pytest.raises(AuthError, match="is not a private key"):
        SSHTransport(sshd.access(known_hosts=[known_hosts], key_file=str(not_a_key))).open()
    with pytest.raises(AuthError, match="cannot read SSH key file"):
        SSHTransport(sshd.access(known_hosts=[known_hosts], key_file=str(tmp_path))).open()


def test_dead_port_is_unreachable_quickly(tmp_path: Path) -> None:
    access = HostAccess(
        name="dead", address="127.0.0.1", port=free_port(), known_hosts=[tmp_path / "kh"], connect_timeout=5
    )
    started = time.monotonic()
    with pytest.raises(UnreachableError, match="connection refused by 127.0.0.1"):
        SSHTransport(access).open()
    assert time.monotonic() - started < 3  # one retry after 1 s, no waiting for the timeout


def test_jump_host_tunnels_to_the_target(sshd: Sshd, known_hosts: Path) -> None:
    jump = sshd.access(name="bastion", known_hosts=[known_hosts])
    target = sshd.access(name="node1", known_hosts=[known_hosts], jump=jump)
    before = sshd.logins()
    with SSHTransport(target) as host:
        assert host.run_script("echo through").stdout == "through\n"
        assert host.run_script("echo twice").stdout == "twice\n"
    assert sshd.logins() - before == 2  # the bastion once, the target once


def test_jump_host_failure_names_the_jump_host(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    jump = HostAccess(name="bastion", address="127.0.0.1", port=free_port(), known_hosts=[known_hosts])
    with pytest.raises(UnreachableError, match="node1: via jump host bastion: connection refused"):
        SSHTransport(sshd.access(known_hosts=[known_hosts], jump=jump)).open()


def test_put_writes_atomically_with_the_mode(sshd: Sshd, known_hosts: Path, tmp_path: Path) -> None:
    target = tmp_path / "conf" / "hccn.conf"
    target.parent.mkdir()
    target.write_text("old\n")
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        host.put(b"address_0=10.20.0.5\n", str(target), 0o640)
        with pytest.raises(RemoteError, match="cannot write /nonexistent/dir/f"):
            host.put(b"x", "/nonexistent/dir/f", 0o644)
    assert target.read_bytes() == b"address_0=10.20.0.5\n"
    assert target.stat().st_mode & 0o7777 == 0o640
    assert os.listdir(target.parent) == ["hccn.conf"]


def test_a_dropped_connection_is_retried_once(sshd: Sshd, flaky_proxy: FlakyProxy, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{flaky_proxy.port} {sshd.host_key_line}\n")
    access = sshd.access(known_hosts=[known], port=flaky_proxy.port)
    with SSHTransport(access) as host:
        assert host.run_script("echo second try").stdout == "second try\n"
    assert flaky_proxy.accepted == 2


def test_a_rejected_key_is_not_retried(sshd: Sshd, flaky_proxy: FlakyProxy, tmp_path: Path) -> None:
    flaky_proxy.drop = 0
    keygen(tmp_path / "stranger")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{flaky_proxy.port} {sshd.host_key_line}\n")
    access = sshd.access(known_hosts=[known], port=flaky_proxy.port, key_file=str(tmp_path / "stranger"))
    with pytest.raises(AuthError):
        SSHTransport(access).open()
    assert flaky_proxy.accepted == 1


def test_a_script_that_exits_before_reading_all_of_stdin(sshd: Sshd, known_hosts: Path) -> None:
    script = "echo bye; exit 4\n" + ": never read\n" * 300000
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        results = [host.run_script(script) for _ in range(3)]
    assert [(r.rc, r.stdout) for r in results] == [(4, "bye\n")] * 3


def test_revoked_host_key_is_refused_even_with_accept_new(sshd: Sshd, tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    path.write_text(f"@revoked [127.0.0.1]:{sshd.port} {sshd.host_key_line}\n")
    before = path.read_text()
    with pytest.raises(HostKeyError) as caught:
        SSHTransport(sshd.access(known_hosts=[path], accept_new_host_keys=True)).open()
    message = str(caught.value)
    assert "is REVOKED" in message and f"{path}:1" in message
    assert fingerprint(_server_key(sshd)) in message
    assert path.read_text() == before  # not recorded as a new key


def test_revoked_key_wins_over_a_trusted_line_for_the_same_key(sshd: Sshd, tmp_path: Path) -> None:
    trusted, revocations = tmp_path / "known_hosts", tmp_path / "revocations"
    trusted.write_text(sshd.known_hosts_line())
    revocations.write_text(f"@revoked * {sshd.host_key_line}\n")
    with pytest.raises(HostKeyError, match=f"is REVOKED: .* marked @revoked at {revocations}:1"):
        SSHTransport(sshd.access(known_hosts=[trusted, revocations], accept_new_host_keys=True)).open()
