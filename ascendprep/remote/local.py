"""LocalTransport: the Transport interface on this machine, for single-node use and tests.

Scripts run exactly as over SSH (the same launcher, ``sh -s`` with the script on stdin), in a
new session so that a timed-out script and everything it started can be killed as one group.
Scripts run as the current user: to prepare this machine as root, run ascendprep as root. They
get this process's environment less its secrets (:data:`~ascendprep.remote.sudo.SECRET_ENV`), as
does whatever they start (an ``--exec-via`` wrapper, srun).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import Optional

from ascendprep.base.limits import HOST_OUTPUT_CAP
from ascendprep.base.outputfile import new_temp_file, write_file
from ascendprep.remote.capture import CappedOutput
from ascendprep.remote.errors import RemoteError
from ascendprep.remote.sudo import without_secrets
from ascendprep.remote.transport import RawExec, ScriptTransport

#: Between SIGTERM and SIGKILL for a timed-out script, as the SSH kill script does.
TERM_GRACE_SECONDS = 2.0


class LocalTransport(ScriptTransport):
    """Run scripts and write files on this machine, behind the same interface as SSHTransport."""

    def __init__(
        self, name: str = "localhost", command_timeout: Optional[float] = 120.0, output_cap: int = HOST_OUTPUT_CAP
    ) -> None:
        super().__init__(name, command_timeout, output_cap=output_cap)

    def __repr__(self) -> str:
        return f"LocalTransport({self.name!r}, execs={self.exec_count})"

    def close(self) -> None:
        """Nothing is held open between scripts."""

    def __enter__(self) -> "LocalTransport":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _exec(self, command: str, stdin: bytes, timeout: Optional[float], cap: int) -> RawExec:
        process = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=without_secrets(os.environ),
        )
        output = CappedOutput(cap)
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = not _pump_pipes(process, stdin, output, deadline)
        if timed_out:
            self._kill_session(process, output)
        else:
            process.wait()
        return RawExec(
            -1 if timed_out else process.returncode,
            bytes(output.stdout),
            bytes(output.stderr),
            timed_out,
            output.dropped,
        )

    def _kill_session(self, process: "subprocess.Popen[bytes]", output: CappedOutput) -> None:
        """SIGTERM the script's whole session, SIGKILL what is left; keep reading what it prints."""
        group = process.pid  # start_new_session: the shell leads its own process group
        _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_SECONDS
        while time.monotonic() < deadline and _group_alive(group):
            time.sleep(0.05)
        _signal_group(group, signal.SIGKILL)
        # Something outside the group may still hold our pipes: stop reading at the grace period.
        _pump_pipes(process, b"", output, time.monotonic() + TERM_GRACE_SECONDS)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        process.wait()

    def _stop_group(self, pgid: int) -> None:
        """Nothing left to do: ``_exec`` killed the session (== ``pgid``) before returning.

        Signalling the group again here could hit an unrelated group that reused the number.
        """

    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        try:
            write_file(remote_path, data, mode)  # temp file beside it, no link followed, rename
        except OSError as exc:
            raise RemoteError(self.name, f"{self.name}: cannot write {remote_path}: {exc.strerror}") from None

    def _upload_temp(self, data: bytes) -> str:
        return new_temp_file(data, "ascendprep-upload")


def _pump_pipes(
    process: "subprocess.Popen[bytes]", stdin: bytes, output: CappedOutput, deadline: Optional[float]
) -> bool:
    """Write ``stdin`` and read stdout/stderr in chunks until both close; False at the deadline.

    Unlike ``communicate()`` this keeps at most the cap of ``output``: a script printing 50 MB
    costs the cap, not 50 MB.
    """
    with selectors.DefaultSelector() as selector:
        for stream, sink in ((process.stdout, output.add_stdout), (process.stderr, output.add_stderr)):
            if stream is not None and not stream.closed:
                selector.register(stream, selectors.EVENT_READ, sink)
        view = memoryview(stdin)
        if process.stdin is not None and not process.stdin.closed:
            if view:
                os.set_blocking(process.stdin.fileno(), False)
                selector.register(process.stdin, selectors.EVENT_WRITE, None)
            else:
                process.stdin.close()
        while selector.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return False
            for key, _ in selector.select(wait):
                if key.data is None:  # stdin is writable
                    try:
                        written = os.write(key.fd, view[:_CHUNK])
                    except BrokenPipeError:
                        written = len(view)  # the script exited without reading all of its stdin
                    view = view[written:]
                    if not view:
                        selector.unregister(key.fileobj)
                        key.fileobj.close()
                    continue
                data = os.read(key.fd, _CHUNK)
                if data:
                    key.data(data)
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
    return True


_CHUNK = 65536


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
