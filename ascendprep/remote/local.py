"""LocalTransport: the Transport interface on this machine, for single-node use and tests.

Scripts run exactly as over SSH (the same launcher, ``sh -s`` with the script on stdin), in a
new session so that a timed-out script and everything it started can be killed as one group.
Scripts run as the current user: to prepare this machine as root, run ascendprep as root.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from typing import Optional

from ascendprep.remote import shell
from ascendprep.remote.errors import RemoteError
from ascendprep.remote.transport import RawExec, ScriptTransport

#: Between SIGTERM and SIGKILL for a timed-out script, as the SSH kill script does.
TERM_GRACE_SECONDS = 2.0


class LocalTransport(ScriptTransport):
    """Run scripts and write files on this machine, behind the same interface as SSHTransport."""

    def __init__(self, name: str = "localhost", command_timeout: Optional[float] = 120.0) -> None:
        super().__init__(name, command_timeout)

    def __repr__(self) -> str:
        return f"LocalTransport({self.name!r}, execs={self.exec_count})"

    def close(self) -> None:
        """Nothing is held open between scripts."""

    def __enter__(self) -> "LocalTransport":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _exec(self, command: str, stdin: bytes, timeout: Optional[float]) -> RawExec:
        process = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(stdin, timeout=timeout)
            return RawExec(process.returncode, out, err, False)
        except subprocess.TimeoutExpired:
            out, err = self._kill_session(process)
            return RawExec(-1, out, err, True)

    def _kill_session(self, process: "subprocess.Popen[bytes]") -> "tuple[bytes, bytes]":
        """SIGTERM the script's whole session, SIGKILL what is left; return what it printed."""
        group = process.pid  # start_new_session: the shell leads its own process group
        _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        while time.monotonic() < deadline and _group_alive(group):
            time.sleep(0.05)
        _signal_group(group, signal.SIGKILL)
        try:
            return process.communicate(timeout=TERM_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            # Something outside the group still holds our pipes; stop reading rather than hang.
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait()
            return b"", b""

    def _stop_group(self, pgid: int) -> None:
        """Nothing left to do: ``_exec`` killed the session (== ``pgid``) before returning.

        Signalling the group again here could hit an unrelated group that reused the number.
        """

    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        directory = shell.parent_dir(remote_path)
        try:
            fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(remote_path)}.ascendprep-", dir=directory)
        except OSError as exc:
            raise RemoteError(self.name, f"{self.name}: cannot write {remote_path}: {exc.strerror}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(temp, mode)
            os.replace(temp, remote_path)
        except OSError as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise RemoteError(self.name, f"{self.name}: cannot write {remote_path}: {exc.strerror}") from None

    def _upload_temp(self, data: bytes) -> str:
        fd, temp = tempfile.mkstemp(prefix=".ascendprep-upload-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return temp


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return  # already gone: nothing to stop


def _group_alive(pgid: int) -> bool:
    """Does group ``pgid`` still have a member that is not a zombie?

    ``killpg(pgid, 0)`` alone says yes as long as an unreaped zombie is in the group, which would
    make every kill wait out the whole grace period; /proc tells the states apart.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return True  # no /proc: trust killpg
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # exited while we looked
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
