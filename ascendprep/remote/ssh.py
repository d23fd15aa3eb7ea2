"""SSHTransport: one fabric ``Connection`` (paramiko underneath) per host, reused for every call.

Why not ``Connection.run``: we need the script on stdin while output is read (no deadlock on
large scripts or outputs), the launcher's started-marker from stderr before anything else, a
hard per-script deadline, and a kill of the remote process group when it passes. That is a
small loop over one paramiko channel (:func:`pump_channel`); fabric still provides the
connection, the jump-host tunnel (``gateway=``) and SFTP.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
import uuid
from typing import Dict, List, Optional, Tuple

import paramiko
from fabric import Config, Connection

from ascendprep.remote import shell
from ascendprep.remote.access import HostAccess
from ascendprep.remote.diagnose import describe_connect_failure
from ascendprep.remote.errors import AuthError, RemoteError, UnreachableError
from ascendprep.remote.hostkeys import KnownKey, prepare_client
from ascendprep.remote.sudo import SudoPassword
from ascendprep.remote.transport import KILL_TIMEOUT, RawExec, ScriptTransport

log = logging.getLogger(__name__)

#: Pause before the one retry of a connection that could not be set up (unreachable kinds only).
RETRY_DELAY = 1.0
#: After the remote shell exited, how long to wait for its output streams to close. A daemon
#: the script started may hold them open forever; we do not wait for it.
EXIT_DRAIN_SECONDS = 2.0
KEEPALIVE_SECONDS = 30
_CHUNK = 32768


def load_private_key(access: HostAccess) -> Tuple[Optional[paramiko.PKey], bool]:
    """The key to log in with: (key or None, whether ssh-agent may be used).

    Loading it up front turns "file missing", "unreadable" and "not a key" into clear errors
    instead of paramiko's generic "Authentication failed". A passphrase-protected key falls back
    to ssh-agent, where the user can unlock it once.
    """
    if access.key_file is None:
        return None, True
    path = os.path.expanduser(access.key_file)
    if not os.path.exists(path):
        raise AuthError(access.name, f"{access.name}: SSH key file {access.key_file} does not exist")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise AuthError(access.name, f"{access.name}: cannot read SSH key file {access.key_file}: {exc.strerror}") from None
    problems: List[str] = []
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key_file(path), False
        except paramiko.PasswordRequiredException:
            if os.environ.get("SSH_AUTH_SOCK"):
                return None, True
            raise AuthError(
                access.name,
                f"{access.name}: SSH key file {access.key_file} is protected by a passphrase: "
                "load it into ssh-agent (ssh-add) first",
            ) from None
        except (paramiko.SSHException, ValueError) as exc:
            problems.append(str(exc))
    raise AuthError(access.name, f"{access.name}: {access.key_file} is not a private key paramiko can read ({problems[-1]})")


def open_connection(access: HostAccess, gateway: Optional[Connection] = None) -> Connection:
    """Connect and authenticate to ``access`` (through ``gateway`` if given), retrying once.

    Only setup failures of the *unreachable* kind are retried (a dropped SYN, sshd's MaxStartups);
    a rejected key or a host key problem would fail the same way again.
    """
    pkey, use_agent = load_private_key(access)
    timeout = access.connect_timeout
    connect_kwargs = {
        "pkey": pkey,
        "allow_agent": use_agent,
        "look_for_keys": access.key_file is None,
        "timeout": timeout,
        "banner_timeout": timeout,
        "auth_timeout": timeout,
        "channel_timeout": timeout,
    }
    attempt = 1
    while True:
        # ssh_config files are not read: the inventory is the single source of how to connect.
        connection = Connection(
            host=access.address,
            user=access.user,
            port=access.port,
            config=Config(overrides={"load_ssh_configs": False}),
            gateway=gateway,
            connect_kwargs=dict(connect_kwargs),
        )
        known: List[KnownKey] = prepare_client(connection.client, access)
        try:
            connection.open()
        except Exception as exc:  # every failure is classified; unknown ones keep their type name
            connection.close()
            error = describe_connect_failure(exc, access, known)
            if error.kind != "unreachable" or attempt == 2:
                raise error from exc
            log.info("%s: %s; retrying once", access.name, error)
            attempt += 1
            time.sleep(RETRY_DELAY)
            continue
        connection.transport.set_keepalive(KEEPALIVE_SECONDS)
        return connection


class JumpHosts:
    """One open connection per jump host, shared by every target tunnelled through it.

    Sixty targets behind one bastion must not mean sixty logins to the bastion (its sshd would
    drop them: MaxStartups). paramiko transports accept new channels from many threads.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._connections: Dict[HostAccess, Connection] = {}
        # A jump host that failed is not tried again by every target behind it: with 64 targets
        # that would be 64 connect timeouts in a row.
        self._failures: Dict[HostAccess, RemoteError] = {}

    def connection(self, jump: HostAccess) -> Connection:
        with self._lock:
            current = self._connections.get(jump)
            if current is not None and current.is_connected:
                return current
            failed = self._failures.get(jump)
            if failed is not None:
                raise type(failed)(failed.host, failed.message)
            try:
                parent = self.connection(jump.jump) if jump.jump is not None else None
                current = open_connection(jump, parent)
            except RemoteError as exc:
                error = type(exc)(exc.host, f"via jump host {exc}")
                self._failures[jump] = error
                raise type(error)(error.host, error.message) from exc
            self._connections[jump] = current
            return current

    def close(self) -> None:
        with self._lock:
            for connection in self._connections.values():
                connection.close()
            self._connections.clear()
            self._failures.clear()


class SSHTransport(ScriptTransport):
    """Run scripts and put files on one host over a single SSH connection."""

    def __init__(
        self,
        access: HostAccess,
        jumps: Optional[JumpHosts] = None,
        sudo_password: Optional[SudoPassword] = None,
    ) -> None:
        super().__init__(access.name, access.command_timeout, access.needs_sudo, sudo_password)
        self.access = access
        self._jumps = jumps if jumps is not None else JumpHosts()
        self._owns_jumps = jumps is None
        self._connection: Optional[Connection] = None

    def __repr__(self) -> str:
        state = "open" if self._connection is not None else "closed"
        return f"SSHTransport({self.access.target}, {state}, execs={self.exec_count})"

    def open(self) -> "SSHTransport":
        """Connect now (idempotent); raises a RemoteError describing any failure."""
        if self._connection is None:
            gateway = None
            if self.access.jump is not None:
                try:
                    gateway = self._jumps.connection(self.access.jump)
                except RemoteError as exc:
                    raise type(exc)(self.name, f"{self.name}: {exc}") from exc
            self._connection = open_connection(self.access, gateway)
        return self

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._owns_jumps:
            self._jumps.close()

    def __enter__(self) -> "SSHTransport":
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _live_transport(self) -> paramiko.Transport:
        self.open()
        assert self._connection is not None
        transport = self._connection.transport
        if transport is None or not transport.is_active():
            raise UnreachableError(self.name, f"{self.name}: the SSH connection was closed")
        return transport

    # -- ScriptTransport primitives -------------------------------------------------------------

    def _exec(self, command: str, stdin: bytes, timeout: Optional[float]) -> RawExec:
        transport = self._live_transport()
        try:
            channel = transport.open_session(timeout=self.access.connect_timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise UnreachableError(self.name, f"{self.name}: cannot open an SSH session: {exc}") from exc
        try:
            channel.exec_command(command)
            raw = pump_channel(channel, stdin, timeout)
            if raw.rc == -1 and not raw.timed_out and not transport.is_active():
                raise EOFError("the connection closed")
            return raw
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise UnreachableError(self.name, f"{self.name}: lost the SSH connection while running a script: {exc}") from exc
        finally:
            channel.close()

    def _stop_group(self, pgid: int) -> None:
        # Closing the channel does not signal a remote process that has no pty; kill its group.
        try:
            result = self._run_helper(shell.kill_group_script(pgid), KILL_TIMEOUT)
        except RemoteError as exc:
            log.warning("%s: could not kill timed-out process group %d: %s", self.name, pgid, exc)
            return
        if result.rc != 0 or result.timed_out:
            log.warning("%s: killing timed-out process group %d failed (rc %s)", self.name, pgid, result.rc)

    def _sftp(self) -> paramiko.SFTPClient:
        self._live_transport()
        assert self._connection is not None
        return self._connection.sftp()

    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        temp = f"{shell.parent_dir(remote_path)}/.{os.path.basename(remote_path)}.ascendprep-{uuid.uuid4().hex[:8]}"
        sftp = self._sftp()
        try:
            with sftp.open(temp, "wx") as handle:
                handle.set_pipelined(True)
                sftp.chmod(temp, mode & 0o700)  # private until complete
                handle.write(data)
            sftp.chmod(temp, mode)
            sftp.posix_rename(temp, remote_path)
        except (OSError, paramiko.SSHException) as exc:
            self._remove_quietly(sftp, temp)
            reason = getattr(exc, "strerror", None) or str(exc)
            raise RemoteError(self.name, f"{self.name}: cannot write {remote_path}: {reason}") from exc

    def _upload_temp(self, data: bytes) -> str:
        temp = f"/tmp/.ascendprep-upload-{uuid.uuid4().hex}"
        sftp = self._sftp()
        try:
            with sftp.open(temp, "wx") as handle:
                handle.set_pipelined(True)
                sftp.chmod(temp, 0o600)
                handle.write(data)
        except (OSError, paramiko.SSHException) as exc:
            self._remove_quietly(sftp, temp)
            reason = getattr(exc, "strerror", None) or str(exc)
            raise RemoteError(self.name, f"{self.name}: cannot upload to {temp}: {reason}") from exc
        return temp

    def _remove_quietly(self, sftp: paramiko.SFTPClient, path: str) -> None:
        try:
            sftp.remove(path)
        except (OSError, paramiko.SSHException) as exc:
            log.debug("%s: temp file %s not removed: %s", self.name, path, exc)


def pump_channel(channel: paramiko.Channel, stdin: bytes, timeout: Optional[float]) -> RawExec:
    """Feed ``stdin`` and collect stdout/stderr until the command ends or ``timeout`` passes.

    Writing and reading are interleaved so that neither side can block the other on a full
    window. On timeout the channel is left for the caller to close.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    view = memoryview(stdin)
    sent = 0
    if not stdin:
        channel.shutdown_write()
    exited_at: Optional[float] = None
    while True:
        busy = False
        if sent < len(view) and exited_at is None and channel.send_ready():
            try:
                sent += channel.send(view[sent : sent + _CHUNK])
                if sent == len(view):
                    channel.shutdown_write()
            except OSError:
                # The script exited without reading all of its stdin (an early ``exit``): the
                # rest is not wanted. A lost connection shows up as a closed channel below.
                sent = len(view)
            busy = True
        while channel.recv_ready():
            out += channel.recv(_CHUNK)
            busy = True
        while channel.recv_stderr_ready():
            err += channel.recv_stderr(_CHUNK)
            busy = True
        now = time.monotonic()
        if channel.exit_status_ready():
            exited_at = exited_at or now
            if channel.eof_received or channel.closed or now - exited_at > EXIT_DRAIN_SECONDS:
                if not channel.recv_ready() and not channel.recv_stderr_ready():
                    return RawExec(channel.recv_exit_status(), bytes(out), bytes(err), False)
                continue
        elif channel.closed:
            # Closed without an exit status: the remote side died (e.g. killed by a signal).
            return RawExec(-1, bytes(out), bytes(err), False)
        if deadline is not None and now >= deadline:
            return RawExec(-1, bytes(out), bytes(err), True)
        if not busy:
            wait = 0.05 if deadline is None else max(0.0, min(0.05, deadline - now))
            select.select([channel], [], [], wait)
