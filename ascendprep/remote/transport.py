"""The Transport interface, and the part of it every transport shares.

Callers (probes, apply, verify) see only :class:`Transport`: run a script, put a file, count
execs, close. :class:`ScriptTransport` implements the shared rules on top of one primitive,
``_exec(command, stdin, timeout, cap)``: the launcher and its started-marker, sudo (with the
password retry), killing a script that ran past its limit, and put() through sudo.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional, Protocol, Tuple, Union, runtime_checkable

from ascendprep.base.limits import FETCH_FILE_CAP, HOST_OUTPUT_CAP, SUDO_AUTH_TIMEOUT
from ascendprep.remote import shell
from ascendprep.remote.errors import CommandTimeout, OutputTooLarge, RemoteError, SudoError
from ascendprep.remote.result import TIMED_OUT_RC, ExecResult
from ascendprep.remote.sudo import SudoGate, SudoPassword, as_gate, password_required_message

log = logging.getLogger(__name__)

#: Time allowed for the helper exec that kills a timed-out script's process group.
KILL_TIMEOUT = 15.0


@runtime_checkable
class Transport(Protocol):
    """Runs scripts on one host. One instance per host, reused for every call."""

    name: str

    @property
    def exec_count(self) -> int:
        """How many remote commands this transport started (benchmarks count round trips)."""
        ...

    def run_script(self, script: str, timeout: Optional[float] = None) -> ExecResult:
        """Run ``script`` with ``sh -s`` (the script on stdin); ``timeout`` defaults to the host's.

        Because stdin *is* the script, a command inside it that reads stdin (``read``, ``ssh``,
        ``python -``) eats the following lines: give such commands ``</dev/null``. A script that
        runs past ``timeout`` is killed with its whole process group, and the result says
        ``timed_out``. Raises SudoError when sudo refuses, UnreachableError when the connection
        is lost; a script's own failure is only its ``rc``.
        """
        ...

    def put(self, data: bytes, remote_path: str, mode: int) -> None:
        """Write ``data`` to ``remote_path`` atomically with permission bits ``mode``.

        Over SSH this uses SFTP where the host offers it and streams the bytes through the exec
        channel where it does not (hardened sshd without the sftp subsystem).
        """
        ...

    def fetch(self, remote_path: str, cap: int = FETCH_FILE_CAP, timeout: Optional[float] = None) -> bytes:
        """The bytes of ``remote_path`` (read through the exec channel: no SFTP needed).

        A file longer than ``cap`` raises OutputTooLarge (the rest is read and dropped).
        """
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class RawExec:
    """What ``_exec`` saw: exit status and undecoded output, marker still in stderr."""

    rc: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    #: Bytes dropped past the output cap (0: the output is whole).
    dropped: int = 0
    #: Password mode: we stopped waiting for sudo (it rejected the password or did not answer)
    #: while it still ran, and killed it before it could read another attempt.
    held: bool = False

    @property
    def over_cap(self) -> bool:
        return self.dropped > 0


class FileChannelUnavailable(Exception):
    """The host offers no file-transfer channel (no SFTP subsystem): stream through exec instead.

    Internal to the transports; never reaches a caller of put().
    """


class ScriptTransport(ABC):
    """Shared behaviour of the transports; subclasses provide ``_exec`` and file writing."""

    def __init__(
        self,
        name: str,
        command_timeout: Optional[float],
        needs_sudo: bool = False,
        sudo_password: Union[SudoPassword, SudoGate, None] = None,
        output_cap: int = HOST_OUTPUT_CAP,
    ) -> None:
        self.name = name
        self.command_timeout = command_timeout
        #: Bytes of one command's output (stdout and stderr together) kept; see limits.HOST_OUTPUT_CAP.
        self.output_cap = output_cap
        self._needs_sudo = needs_sudo
        self._sudo_mode = shell.SUDO_NOPASSWD if needs_sudo else shell.NO_SUDO
        #: The command's shared sudo password gate (a Session passes one to all its hosts).
        self._sudo = as_gate(sudo_password)
        self._exec_count = 0
        self._count_lock = threading.Lock()

    @property
    def exec_count(self) -> int:
        return self._exec_count

    # -- what subclasses provide -------------------------------------------------------------

    @abstractmethod
    def _exec(self, command: str, stdin: bytes, timeout: Optional[float], cap: int) -> RawExec:
        """Run ``command`` with ``stdin`` fed to it; on timeout stop waiting and say so.

        At most ``cap`` bytes of output are kept; the rest is read, counted and dropped.
        """

    def _exec_password(
        self, command: str, password_line: bytes, body: bytes, timeout: Optional[float], cap: int
    ) -> RawExec:
        """Password-mode sudo: send only ``password_line``, then ``body`` once the script started.

        On a rejection (or no answer within SUDO_AUTH_TIMEOUT) sudo is killed before it can read
        a second attempt; the result is ``held``. Only transports that run sudo provide this.
        """
        raise NotImplementedError(f"{type(self).__name__} does not run scripts through sudo")

    @abstractmethod
    def _stop_group(self, pgid: int) -> None:
        """Make sure no process of a timed-out script's group keeps running."""

    @abstractmethod
    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        """Write a file as the login user, atomically (temp file + rename).

        Raises FileChannelUnavailable when the host has no file channel (put() then streams).
        """

    @abstractmethod
    def _upload_temp(self, data: bytes) -> str:
        """Write ``data`` to a fresh private temp file as the login user; return its path.

        Raises FileChannelUnavailable like ``_write_file``.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection (idempotent)."""

    # -- the shared rules -------------------------------------------------------------------------

    def run_script(self, script: str, timeout: Optional[float] = None) -> ExecResult:
        started = time.monotonic()
        raw, stderr = self._run_raw(script.encode(), timeout, self.output_cap)
        if raw.over_cap:
            raise OutputTooLarge(
                self.name,
                f"{self.name}: output over {self.output_cap // 1024} KB: the remote script printed "
                f"{raw.dropped + len(raw.stdout) + len(stderr)} bytes; the controller keeps "
                f"{self.output_cap // 1024} KB per host and step (HOST_OUTPUT_CAP) and dropped the rest",
                "HOST_OUTPUT_CAP",
                self.output_cap,
            )
        return ExecResult(
            rc=TIMED_OUT_RC if raw.timed_out else raw.rc,
            stdout=raw.stdout.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace"),
            seconds=time.monotonic() - started,
            timed_out=raw.timed_out,
        )

    def fetch(self, remote_path: str, cap: int = FETCH_FILE_CAP, timeout: Optional[float] = None) -> bytes:
        raw, stderr = self._run_raw(shell.read_file_script(remote_path).encode(), timeout, cap)
        if raw.timed_out:
            limit = self.command_timeout if timeout is None else timeout
            raise CommandTimeout(self.name, f"{self.name}: timed out in reading {remote_path} after {limit:g}s")
        if raw.over_cap:
            raise OutputTooLarge(
                self.name,
                f"{self.name}: {remote_path} is over {cap // 1024} KB; the controller keeps {cap // 1024} KB "
                "of a fetched file (FETCH_FILE_CAP) and dropped the rest",
                "FETCH_FILE_CAP",
                cap,
            )
        if raw.rc != 0:
            reason = stderr.decode("utf-8", errors="replace").strip().splitlines()
            raise RemoteError(
                self.name, f"{self.name}: cannot read {remote_path}: {reason[-1] if reason else f'rc {raw.rc}'}"
            )
        return raw.stdout

    def _run_raw(self, body: bytes, timeout: Optional[float], cap: int) -> Tuple[RawExec, bytes]:
        """Run ``body`` behind the launcher (sudo rules included): (raw result, stderr without the marker)."""
        limit = self.command_timeout if timeout is None else timeout
        started = time.monotonic()
        raw = self._launch(body, limit, cap)
        pgid, stderr = shell.split_started_marker(raw.stderr)
        if pgid is None and self._sudo_mode == shell.SUDO_NOPASSWD and b"password is required" in raw.stderr:
            # sudo -n refused before reading stdin, so nothing ran: safe to try again with -S.
            if self._sudo.password() is None:
                raise SudoError(self.name, password_required_message(self.name))
            # One host checks the password (one attempt) before any other host is sent it.
            self._sudo.admit(self.name, self._password_accepted)
            self._sudo_mode = shell.SUDO_PASSWORD
            remaining = None if limit is None else max(0.1, limit - (time.monotonic() - started))
            raw = self._launch(body, remaining, cap)
            pgid, stderr = shell.split_started_marker(raw.stderr)
        if pgid is None:
            raise self._not_started_error(raw, limit)
        if raw.timed_out:
            self._stop_group(pgid)
        return raw, stderr

    def put(self, data: bytes, remote_path: str, mode: int) -> None:
        shell.check_put_arguments(remote_path, mode)
        try:
            if not self._needs_sudo:
                self._write_file(data, remote_path, mode)
                return
            temp = self._upload_temp(data)
        except FileChannelUnavailable as exc:
            log.info("%s: %s; writing %s through the exec channel", self.name, exc, remote_path)
            self._stream_file(data, remote_path, mode)
            return
        result = self.run_script(shell.install_file_script(temp, remote_path, mode))
        result.raise_for_status(self.name, f"installing {remote_path}")

    def _stream_file(self, data: bytes, remote_path: str, mode: int) -> None:
        """put() without a file channel: the bytes travel inside a script (through sudo if on)."""
        result = self.run_script(shell.write_file_script(data, remote_path, mode))
        result.raise_for_status(self.name, f"writing {remote_path}")

    def _launch(self, body: bytes, timeout: Optional[float], cap: Optional[int] = None) -> RawExec:
        return self._launch_as(self._sudo_mode, body, timeout, self.output_cap if cap is None else cap)

    def _launch_as(self, sudo_mode: str, body: bytes, timeout: Optional[float], cap: int) -> RawExec:
        command = shell.launch_command(sudo_mode)
        with self._count_lock:
            self._exec_count += 1
        if sudo_mode != shell.SUDO_PASSWORD:
            return self._exec(command, body, timeout, cap)
        password = self._sudo.password()
        assert password is not None  # the mode is only entered with a password at hand
        return self._exec_password(command, password.stdin_line(), body, timeout, cap)

    def _password_accepted(self) -> bool:
        """The one password check before fan-out: does sudo on this host take the password?

        Same launcher as a script (so it tests exactly what scripts will do), with a script that
        does nothing; one password line, so at most one failed attempt. Problems other than a
        wrong password (not in sudoers, no answer) raise their own SudoError.
        """
        raw = self._launch_as(shell.SUDO_PASSWORD, b"exit 0\n", SUDO_AUTH_TIMEOUT, 64 * 1024)
        pgid, _ = shell.split_started_marker(raw.stderr)
        if pgid is not None:
            return True
        if shell.sudo_rejected(raw.stderr):
            return False
        raise self._not_started_error(raw, SUDO_AUTH_TIMEOUT, shell.SUDO_PASSWORD)

    def _run_helper(self, script: str, timeout: float) -> RawExec:
        """Run one of our own small scripts (kill, install) through the same launcher."""
        return self._launch(script.encode(), timeout)

    def _not_started_error(self, raw: RawExec, limit: Optional[float], sudo_mode: Optional[str] = None) -> RemoteError:
        """Why the launcher never reported the script as started."""
        mode = self._sudo_mode if sudo_mode is None else sudo_mode
        text = raw.stderr.decode("utf-8", errors="replace").strip()
        tail = " | ".join(text.splitlines()[-3:]) or "no output"
        if mode == shell.NO_SUDO:
            if raw.timed_out:
                return CommandTimeout(self.name, f"sh did not start on {self.name} within {limit:g}s")
            return RemoteError(self.name, f"could not start sh on {self.name} (rc {raw.rc}): {tail}")
        if raw.timed_out:
            return SudoError(self.name, f"sudo on {self.name} did not start the script within {limit:g}s")
        if mode == shell.SUDO_PASSWORD and shell.sudo_rejected(raw.stderr):
            return SudoError(
                self.name,
                f"sudo on {self.name} rejected the sudo password (from ASCENDPREP_SUDO_PASSWORD or --ask-sudo-password); "
                "one attempt was made",
            )
        if raw.rc == 127 and "sudo" in text:
            return SudoError(self.name, f"sudo is not installed on {self.name}: install it or connect as root")
        return SudoError(self.name, f"sudo on {self.name} refused to run the script (rc {raw.rc}): {tail}")
