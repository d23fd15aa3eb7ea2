"""SSHTransport: one fabric ``Connection`` (paramiko underneath) per host, reused for every call.

Why not ``Connection.run``: we need the script on stdin while output is read (no deadlock on
large scripts or outputs), the launcher's started-marker from stderr before anything else, a
hard per-script deadline, and a kill of the remote process group when it passes. That is a
small loop over one paramiko channel (:func:`pump_channel`); fabric still provides the
connection and the jump-host tunnel (``gateway=``).

Every step has a deadline, because a host may accept a request and never answer it: connect,
banner, auth and channel open use the host's ``connect_timeout``; the exec request that starts
a script and the SFTP subsystem request :data:`~ascendprep.base.limits.SSH_REQUEST_TIMEOUT`; the
script its ``command_timeout``; each SFTP operation
:data:`~ascendprep.base.limits.SFTP_OPERATION_TIMEOUT`. A step that passes its deadline raises
CommandTimeout ("timed out in STEP") for this host only.

SFTP is optional: on a host whose sshd has no sftp subsystem, put() streams the bytes through
the exec channel instead (see :func:`ascendprep.remote.shell.write_file_script`).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import select
import socket
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Tuple, TypeVar, Union

import paramiko
from fabric import Config, Connection

from ascendprep.base.limits import (
    HOST_OUTPUT_CAP,
    PRIVATE_KEY_MAX_BYTES,
    SFTP_OPERATION_TIMEOUT,
    SSH_REQUEST_TIMEOUT,
    SUDO_AUTH_TIMEOUT,
)
from ascendprep.remote import shell
from ascendprep.remote.access import HostAccess
from ascendprep.remote.capture import CappedOutput
from ascendprep.remote.diagnose import describe_connect_failure
from ascendprep.remote.errors import AuthError, RemoteError, UnreachableError, step_timeout
from ascendprep.remote.hostkeys import KnownKey, prepare_client
from ascendprep.remote.sudo import SudoGate, SudoPassword
from ascendprep.remote.transport import KILL_TIMEOUT, FileChannelUnavailable, RawExec, ScriptTransport

T = TypeVar("T")

log = logging.getLogger(__name__)

#: Pause before the one retry of a connection that could not be set up (unreachable kinds only).
RETRY_DELAY = 1.0
#: After the remote shell exited, how long to wait for its output streams to close. A daemon
#: the script started may hold them open forever; we do not wait for it.
EXIT_DRAIN_SECONDS = 2.0
KEEPALIVE_SECONDS = 30
_CHUNK = 32768
_READS_PER_ROUND = 64
#: How long an idle round of :func:`pump_channel` waits on the channel while the script runs.
#: Output, EOF and close wake it at once (paramiko signals the channel's pipe), and the waits
#: end at the script's deadline and the sudo gate's, so this only spaces the rounds in which
#: nothing happens: a shorter wait only adds idle rounds per host while a gather runs for seconds.
_IDLE_WAIT = 0.25
#: The wait while stdin is still to be sent (a full window's reopening wakes nothing) and while
#: the output drains after the exit status.
_SEND_WAIT = 0.05


#: Private keys parsed this run, by path and the sha256 of the file's bytes (the bytes
#: themselves are not kept): one parse per run, not per host (every host of an inventory usually
#: shares one key). A file changed meanwhile is parsed again.
_keys: Dict[Tuple[str, bytes], Tuple[Optional[paramiko.PKey], bool]] = {}
_keys_lock = threading.Lock()


def load_private_key(access: HostAccess) -> Tuple[Optional[paramiko.PKey], bool]:
    """The key to log in with: (key or None, whether ssh-agent may be used).

    Loading it up front turns "file missing", "unreadable" and "not a key" into clear errors
    instead of paramiko's generic "Authentication failed". A passphrase-protected key falls back
    to ssh-agent, where the user can unlock it once. Errors are worded per host.
    """
    if access.key_file is None:
        return None, True
    path = os.path.expanduser(access.key_file)
    if not os.path.exists(path):
        raise AuthError(access.name, f"{access.name}: SSH key file {access.key_file} does not exist")
    try:
        with open(path, "rb") as handle:
            data = handle.read(PRIVATE_KEY_MAX_BYTES + 1)
    except OSError as exc:
        raise AuthError(
            access.name, f"{access.name}: cannot read SSH key file {access.key_file}: {exc.strerror}"
        ) from None
    if len(data) > PRIVATE_KEY_MAX_BYTES:
        raise AuthError(
            access.name,
            f"{access.name}: {access.key_file} is not a private key paramiko can read (larger than {PRIVATE_KEY_MAX_BYTES // 1024} KiB)",
        )
    slot = (path, hashlib.sha256(data).digest())
    with _keys_lock:
        known = _keys.get(slot)
    if known is not None:
        return known
    loaded = _parse_private_key(access, data)
    with _keys_lock:
        _keys[slot] = loaded
    return loaded


def _parse_private_key(access: HostAccess, data: bytes) -> Tuple[Optional[paramiko.PKey], bool]:
    problems: List[str] = []
    text = data.decode("utf-8", errors="replace")
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key(io.StringIO(text)), False
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
    raise AuthError(
        access.name, f"{access.name}: {access.key_file} is not a private key paramiko can read ({problems[-1]})"
    )


#: Ciphers asked for first: AES-GCM, where the server offers it. It authenticates each packet as
#: part of decrypting it (one C call), where a CTR cipher with an HMAC (paramiko's default order)
#: also compares every packet's MAC in a Python loop: a third of the transport thread's CPU on a
#: plan. Every other cipher paramiko knows stays acceptable, in its own order, so a server that
#: allows no GCM is reached as before; host keys and key exchange are left to paramiko.
PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


def _transport_preferring_gcm(sock: object, **kwargs: object) -> paramiko.Transport:
    transport = paramiko.Transport(sock, **kwargs)  # type: ignore[arg-type]
    options = transport.get_security_options()
    offered = tuple(options.ciphers)
    options.ciphers = tuple(c for c in PREFERRED_CIPHERS if c in offered) + tuple(
        c for c in offered if c not in PREFERRED_CIPHERS
    )
    return transport


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
        "transport_factory": _transport_preferring_gcm,
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
        sudo_password: Union[SudoPassword, SudoGate, None] = None,
    ) -> None:
        super().__init__(access.name, access.command_timeout, access.needs_sudo, sudo_password)
        self.access = access
        self._jumps = jumps if jumps is not None else JumpHosts()
        self._owns_jumps = jumps is None
        self._connection: Optional[Connection] = None
        #: Deadlines of a session request (exec, subsystem) and of one SFTP operation.
        self.request_timeout = SSH_REQUEST_TIMEOUT
        self.sftp_timeout = SFTP_OPERATION_TIMEOUT
        self._sftp_client: Optional[paramiko.SFTPClient] = None
        #: Set once the host refused the sftp subsystem: put() streams through exec from then on.
        self._sftp_missing: Optional[str] = None

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
        self._drop_sftp()
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

    def _exec(self, command: str, stdin: bytes, timeout: Optional[float], cap: int) -> RawExec:
        channel = self._open_channel()
        transport = channel.get_transport()
        try:
            send_request(
                channel, lambda: channel.exec_command(command), self.name, "exec request", self.request_timeout
            )
            raw = pump_channel(channel, stdin, timeout, cap)
            if raw.rc == -1 and not raw.timed_out and (transport is None or not transport.is_active()):
                raise EOFError("the connection closed")
            return raw
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise UnreachableError(
                self.name, f"{self.name}: lost the SSH connection while running a script: {exc}"
            ) from exc
        finally:
            channel.close()

    def _exec_password(
        self, command: str, password_line: bytes, body: bytes, timeout: Optional[float], cap: int
    ) -> RawExec:
        channel = self._open_channel()
        transport = channel.get_transport()
        gate = StdinGate(shell.STARTED_TAG.encode() + b" ", body, shell.sudo_rejected, SUDO_AUTH_TIMEOUT)
        try:
            send_request(
                channel, lambda: channel.exec_command(command), self.name, "exec request", self.request_timeout
            )
            raw = pump_channel(channel, password_line, timeout, cap, gate)
            pid, stderr = shell.split_sudo_pid(raw.stderr)
            if raw.held and pid is not None:
                # Before the channel closes: its EOF would be read by sudo as another attempt.
                self._kill_sudo(pid)
            if raw.rc == -1 and not raw.timed_out and not raw.held and (transport is None or not transport.is_active()):
                raise EOFError("the connection closed")
            return replace(raw, stderr=stderr)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise UnreachableError(
                self.name, f"{self.name}: lost the SSH connection while running a script: {exc}"
            ) from exc
        finally:
            channel.close()

    def _kill_sudo(self, pid: int) -> None:
        """Kill our own sudo process that is waiting for a second password attempt."""
        try:
            result = self._exec(shell.kill_pid_command(pid), b"", KILL_TIMEOUT, 64 * 1024)
        except RemoteError as exc:
            log.warning("%s: could not stop sudo (pid %d) after a rejected password: %s", self.name, pid, exc)
            return
        if result.rc != 0:
            log.warning("%s: stopping sudo (pid %d) failed (rc %s)", self.name, pid, result.rc)

    def _open_channel(self) -> paramiko.Channel:
        """A new session channel, within the host's connect_timeout ("timed out in channel open")."""
        transport = self._live_transport()
        try:
            return transport.open_session(timeout=self.access.connect_timeout)
        except paramiko.SSHException as exc:
            if "timeout" in str(exc).lower():
                raise step_timeout(
                    self.name,
                    "channel open",
                    self.access.connect_timeout,
                    "the SSH server did not answer the session request",
                ) from exc
            raise UnreachableError(self.name, f"{self.name}: cannot open an SSH session: {exc}") from exc
        except (OSError, EOFError) as exc:
            raise UnreachableError(self.name, f"{self.name}: cannot open an SSH session: {exc}") from exc

    def _stop_group(self, pgid: int) -> None:
        # Closing the channel does not signal a remote process that has no pty; kill its group.
        try:
            result = self._run_helper(shell.kill_group_script(pgid), KILL_TIMEOUT)
        except RemoteError as exc:
            log.warning("%s: could not kill timed-out process group %d: %s", self.name, pgid, exc)
            return
        if result.rc != 0 or result.timed_out:
            log.warning("%s: killing timed-out process group %d failed (rc %s)", self.name, pgid, result.rc)

    # -- files over SFTP, when the host has it --------------------------------------------------

    def _sftp(self) -> paramiko.SFTPClient:
        """This host's SFTP client, opened once with deadlines on every request.

        Raises FileChannelUnavailable when the host refuses the sftp subsystem (put() then streams
        through exec), CommandTimeout when it does not answer in time.
        """
        if self._sftp_missing is not None:
            raise FileChannelUnavailable(self._sftp_missing)
        if self._sftp_client is not None:
            return self._sftp_client
        channel = self._open_channel()
        try:
            send_request(
                channel,
                lambda: channel.invoke_subsystem("sftp"),
                self.name,
                "sftp subsystem request",
                self.request_timeout,
            )
            channel.settimeout(self.sftp_timeout)
            self._sftp_client = paramiko.SFTPClient(channel)
        except (paramiko.SSHException, EOFError) as exc:
            channel.close()
            self._sftp_missing = f"the SSH server of {self.name} offers no SFTP ({exc or type(exc).__name__})"
            raise FileChannelUnavailable(self._sftp_missing) from exc
        except socket.timeout as exc:
            channel.close()
            raise step_timeout(self.name, "sftp start", self.sftp_timeout) from exc
        except BaseException:
            channel.close()
            raise
        return self._sftp_client

    def _drop_sftp(self) -> None:
        if self._sftp_client is not None:
            self._sftp_client.close()
            self._sftp_client = None

    def _sftp_step(self, step: str, action: Callable[[], T]) -> T:
        """Run one SFTP operation; its deadline turns into "timed out in sftp STEP"."""
        try:
            return action()
        except socket.timeout as exc:
            self._drop_sftp()  # a late answer would confuse the next request: start afresh
            raise step_timeout(self.name, f"sftp {step}", self.sftp_timeout) from exc

    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        temp = f"{shell.parent_dir(remote_path)}/.{os.path.basename(remote_path)}.ascendprep-{uuid.uuid4().hex[:8]}"
        self._sftp_put(data, temp, mode & 0o700, f"cannot write {remote_path}")  # private until complete
        sftp = self._sftp()
        try:
            self._sftp_step("chmod", lambda: sftp.chmod(temp, mode))
            self._sftp_step("rename", lambda: sftp.posix_rename(temp, remote_path))
        except (OSError, paramiko.SSHException) as exc:
            self._remove_quietly(temp)
            reason = getattr(exc, "strerror", None) or str(exc)
            raise RemoteError(self.name, f"{self.name}: cannot write {remote_path}: {reason}") from exc
        except RemoteError:
            self._remove_quietly(temp)
            raise

    def _upload_temp(self, data: bytes) -> str:
        temp = f"/tmp/.ascendprep-upload-{uuid.uuid4().hex}"
        self._sftp_put(data, temp, 0o600, f"cannot upload to {temp}")
        return temp

    def _sftp_put(self, data: bytes, path: str, mode: int, failure: str) -> None:
        """Create ``path`` (exclusively) with ``mode`` and write ``data`` to it, every step bounded."""
        sftp = self._sftp()
        try:
            handle = self._sftp_step("open", lambda: sftp.open(path, "wx"))
            try:
                self._sftp_step("chmod", lambda: sftp.chmod(path, mode))
                self._sftp_step("write", lambda: handle.write(data))
            finally:
                self._sftp_step("close", handle.close)
        except (OSError, paramiko.SSHException) as exc:
            self._remove_quietly(path)
            reason = getattr(exc, "strerror", None) or str(exc)
            raise RemoteError(self.name, f"{self.name}: {failure}: {reason}") from exc
        except RemoteError:
            self._remove_quietly(path)
            raise

    def _remove_quietly(self, path: str) -> None:
        sftp = self._sftp_client
        if sftp is None:
            return  # the SFTP session was dropped after a timeout: nothing can be removed with it
        try:
            self._sftp_step("remove", lambda: sftp.remove(path))
        except (OSError, paramiko.SSHException, RemoteError) as exc:
            log.debug("%s: temp file %s not removed: %s", self.name, path, exc)


def send_request(channel: paramiko.Channel, request: Callable[[], None], host: str, step: str, timeout: float) -> None:
    """Send a channel request (exec, subsystem) and wait for its answer at most ``timeout``.

    paramiko waits for the reply without a deadline; an sshd that accepts the channel and never
    answers would block us forever. A timer closes the channel at the deadline, which wakes
    paramiko's wait up with an error that becomes "timed out in STEP".
    """
    expired = threading.Event()

    def give_up() -> None:
        expired.set()
        try:
            channel.close()  # marks the channel closed (waking the waiter) before sending
        except (EOFError, OSError) as exc:
            log.debug("%s: closing the channel after the %s deadline: %s", host, step, exc)

    timer = threading.Timer(timeout, give_up)
    timer.daemon = True
    timer.start()
    try:
        request()
    except (paramiko.SSHException, EOFError, OSError) as exc:
        if expired.is_set():
            raise step_timeout(host, step, timeout, "the SSH server accepted the session but never answered") from exc
        raise
    finally:
        timer.cancel()
    if expired.is_set():  # answered just as the timer fired: the channel is closed all the same
        raise step_timeout(host, step, timeout, "the SSH server answered too late")


@dataclass(frozen=True)
class StdinGate:
    """Hold ``rest`` of stdin back until ``marker`` shows on stderr (password-mode sudo).

    While held: stop (``held``) when ``refused(stderr)`` says so, or after ``wait`` seconds.
    """

    marker: bytes
    rest: bytes
    refused: Callable[[bytes], bool]
    wait: float


def pump_channel(
    channel: paramiko.Channel,
    stdin: bytes,
    timeout: Optional[float],
    cap: int = HOST_OUTPUT_CAP,
    gate: Optional[StdinGate] = None,
) -> RawExec:
    """Feed ``stdin`` and collect stdout/stderr until the command ends or ``timeout`` passes.

    Writing and reading are interleaved so that neither side can block the other on a full
    window. At most ``cap`` bytes of output are kept; the rest is read and dropped (counted in
    ``RawExec.dropped``), so memory does not grow with what the host prints. With a ``gate``,
    stdin stays open after ``stdin`` and ``gate.rest`` follows only once ``gate.marker`` was
    seen. On timeout (or a stop at the gate) the channel is left for the caller to close.
    """
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    output = CappedOutput(cap)
    view = memoryview(stdin)
    sent = 0
    held = gate is not None
    if not stdin and not held:
        channel.shutdown_write()
    exited_at: Optional[float] = None

    def result(rc: int, timed_out: bool, stopped: bool = False) -> RawExec:
        return RawExec(rc, bytes(output.stdout), bytes(output.stderr), timed_out, output.dropped, stopped)

    while True:
        busy = False
        if held and gate is not None and gate.marker in output.stderr:
            held = False
            view = memoryview(bytes(view[sent:]) + gate.rest)
            sent = 0
            if not view:
                channel.shutdown_write()
        if sent < len(view) and exited_at is None and channel.send_ready():
            try:
                sent += channel.send(view[sent : sent + _CHUNK])
                if sent == len(view) and not held:
                    channel.shutdown_write()
            except OSError:
                # The script exited without reading all of its stdin (an early ``exit``): the
                # rest is not wanted. A lost connection shows up as a closed channel below.
                sent = len(view)
            busy = True
        # A bounded number of reads per round, so that a host printing without pause cannot keep
        # us from checking the deadline.
        for _ in range(_READS_PER_ROUND):
            if not channel.recv_ready():
                break
            output.add_stdout(channel.recv(_CHUNK))
            busy = True
        for _ in range(_READS_PER_ROUND):
            if not channel.recv_stderr_ready():
                break
            output.add_stderr(channel.recv_stderr(_CHUNK))
            busy = True
        now = time.monotonic()
        if channel.exit_status_ready():
            exited_at = exited_at or now
            if channel.eof_received or channel.closed or now - exited_at > EXIT_DRAIN_SECONDS:
                if not channel.recv_ready() and not channel.recv_stderr_ready():
                    return result(channel.recv_exit_status(), False)
                continue
        elif channel.closed:
            # Closed without an exit status: the remote side died (e.g. killed by a signal).
            return result(-1, False)
        elif held and gate is not None:
            if gate.refused(bytes(output.stderr)):
                return result(-1, False, stopped=True)
            if now - started >= gate.wait:
                return result(-1, True, stopped=True)
        if deadline is not None and now >= deadline:
            return result(-1, True, stopped=held)
        if not busy:
            wait = _SEND_WAIT if sent < len(view) or exited_at is not None else _IDLE_WAIT
            if held and gate is not None:
                wait = min(wait, max(0.0, started + gate.wait - now))
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - now))
            select.select([channel], [], [], wait)
