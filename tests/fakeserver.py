"""An in-process SSH server (paramiko) on 127.0.0.1 that misbehaves on request.

OpenSSH cannot be told to accept a session and then never answer the exec request, or to stall
one SFTP operation; this server can. It accepts any public key, and per instance:

* ``hang_in="auth"`` or ``"channel open"`` never answers that step of the login;
* ``exec_mode="run"`` runs the command with ``sh -c`` as the test user (a tiny sshd: stdin,
  stdout, stderr and the exit status go through the channel); ``"hang"`` never answers the exec
  request;
* ``sftp_mode="none"`` has no sftp subsystem (the request is refused, as on hardened hosts);
  ``"hang"`` starts SFTP but never answers the first file operation.

Anything blocked is released when the server stops, so no thread outlives the test.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from pathlib import Path
from typing import List, Optional

import paramiko

from ascendprep.remote.access import HostAccess


class _Interface(paramiko.ServerInterface):
    def __init__(self, server: "FakeSSHServer") -> None:
        self.server = server

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        if self.server.hang_in == "auth":
            self.server.release.wait()
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if self.server.hang_in == "channel open":
            self.server.release.wait()
        if kind == "session":
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.server.exec_requests += 1
        if self.server.exec_mode == "hang":
            self.server.release.wait()  # never answers while the test runs
            return False
        thread = threading.Thread(target=_run_command, args=(channel, command.decode()), daemon=True)
        self.server.threads.append(thread)
        thread.start()
        return True


class _StalledSFTP(paramiko.SFTPServerInterface):
    """Every file operation waits until the server stops: an SFTP server that stopped answering."""

    release: threading.Event

    def open(self, path: str, flags: int, attr: paramiko.SFTPAttributes):  # type: ignore[override]
        self.release.wait()
        return paramiko.SFTP_FAILURE

    def remove(self, path: str) -> int:
        self.release.wait()
        return paramiko.SFTP_FAILURE


def _run_command(channel: paramiko.Channel, command: str) -> None:
    """Run ``command`` like sshd does without a pty and relay its streams over ``channel``."""
    process = subprocess.Popen(
        ["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def feed() -> None:
        assert process.stdin is not None
        # BrokenPipeError: the command exited without reading all of its stdin, as with sshd.
        with contextlib.suppress(BrokenPipeError):
            for data in iter(lambda: channel.recv(32768), b""):
                process.stdin.write(data)
                process.stdin.flush()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()

    def relay(stream, send) -> None:  # type: ignore[no-untyped-def]
        for chunk in iter(lambda: stream.read1(32768), b""):
            try:
                send(chunk)
            except (OSError, EOFError):
                return

    threads = [
        threading.Thread(target=feed, daemon=True),
        threading.Thread(target=relay, args=(process.stdout, channel.sendall), daemon=True),
        threading.Thread(target=relay, args=(process.stderr, channel.sendall_stderr), daemon=True),
    ]
    for thread in threads:
        thread.start()
    threads[1].join()
    threads[2].join()
    rc = process.wait()
    try:
        channel.send_exit_status(rc)
        channel.shutdown_write()
        channel.close()
    except (OSError, EOFError):
        return  # the client closed the channel first


class FakeSSHServer:
    """``with FakeSSHServer(tmp_path, exec_mode="hang") as server: server.access(...)``."""

    def __init__(self, directory: Path, exec_mode: str = "run", sftp_mode: str = "none", hang_in: str = "") -> None:
        self.directory = directory
        self.hang_in = hang_in
        self.exec_mode = exec_mode
        self.sftp_mode = sftp_mode
        self.exec_requests = 0
        self.release = threading.Event()
        self.threads: List[threading.Thread] = []
        self._transports: List[paramiko.Transport] = []
        self.host_key = paramiko.ECDSAKey.generate()
        self.client_key_path = directory / "client_key"
        paramiko.ECDSAKey.generate().write_private_key_file(str(self.client_key_path))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.known_hosts = directory / "known_hosts"
        self.known_hosts.write_text(
            f"[127.0.0.1]:{self.port} {self.host_key.get_name()} {self.host_key.get_base64()}\n"
        )
        self._acceptor: Optional[threading.Thread] = None

    def __enter__(self) -> "FakeSSHServer":
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self._listener.close()
        for transport in self._transports:
            transport.close()

    def access(self, name: str = "node1", **overrides: object) -> HostAccess:
        fields = dict(
            name=name,
            address="127.0.0.1",
            port=self.port,
            user="root",
            key_file=str(self.client_key_path),
            known_hosts=[str(self.known_hosts)],
            connect_timeout=5,
            command_timeout=30,
        )
        fields.update(overrides)
        return HostAccess(**fields)  # type: ignore[arg-type]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # listener closed: the test is over
            transport = paramiko.Transport(client)
            transport.add_server_key(self.host_key)
            if self.sftp_mode == "hang":
                _StalledSFTP.release = self.release
                transport.set_subsystem_handler("sftp", paramiko.SFTPServer, _StalledSFTP)
            self._transports.append(transport)
            try:
                transport.start_server(server=_Interface(self))
            except (paramiko.SSHException, EOFError, OSError):
                continue  # a client that gave up during the handshake
