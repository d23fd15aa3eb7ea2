"""The outcome of one remote script."""

from __future__ import annotations

from dataclasses import dataclass

from ascendprep.remote.errors import CommandFailed, CommandTimeout

#: ``rc`` reported for a script that was killed at its time limit (as coreutils ``timeout`` does).
TIMED_OUT_RC = 124


@dataclass(frozen=True)
class ExecResult:
    """Exit status and output of one script run with ``sh -s``.

    ``stdout`` and ``stderr`` are decoded as UTF-8 (undecodable bytes become U+FFFD) so that
    parsers never trip over a stray byte from a vendor tool. ``rc`` is -1 when the remote shell
    died from a signal, and :data:`TIMED_OUT_RC` when we killed it at its time limit.
    """

    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    def raise_for_status(self, host: str, what: str = "remote script") -> "ExecResult":
        """Return self when the script succeeded; otherwise raise the matching RemoteError.

        Jobs in a fan-out call this to turn "rc 2" into a host outcome with a readable error.
        """
        if self.timed_out:
            raise CommandTimeout(host, f"{what} on {host} timed out after {self.seconds:.0f}s and was killed")
        if self.rc != 0:
            detail = _last_lines(self.stderr) or _last_lines(self.stdout) or "no output"
            raise CommandFailed(host, f"{what} on {host} exited with rc {self.rc}: {detail}")
        return self


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])
