"""The overall deadline of one command (``--timeout``), shared by every fan-out of that command.

Per-step limits (connect, per-script) bound each remote step; this bounds the whole command, so
that no combination of faults (a hung tool, a host that floods, a thread stuck in paramiko) keeps
it running. When it passes, the fan-out stops waiting for the hosts still at work, reports them
as "timed out in STEP" and the command writes its report with what it has.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from ascendprep.base import limits

#: Name of the limit in ``limits_hit`` entries of ``--format json`` output.
LIMIT_NAME = "command_timeout"


@dataclass
class Deadline:
    """``seconds`` from ``started`` (monotonic). ``source``: ``--timeout`` or ``default``."""

    seconds: float
    source: str = "--timeout"
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    started: float = -1.0

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.started + self.seconds - self.clock())

    @property
    def passed(self) -> bool:
        return self.remaining() <= 0

    def describe(self) -> str:
        """How messages name it: ``the command's deadline (120s, --timeout)``."""
        how = "--timeout" if self.source == "--timeout" else "default; set --timeout"
        return f"the command's deadline ({self.seconds:g}s, {how})"


def default_timeout(hosts: int, forks: int, connect_timeout: float, command_timeout: float, phases: int) -> float:
    """The deadline when ``--timeout`` is not given, in seconds.

    Each phase works through the hosts in ``ceil(hosts / forks)`` waves; a wave's host takes at
    most its connect timeout plus the per-script limit (``ssh.command_timeout``). Plus
    :data:`limits.COMMAND_DEADLINE_SLACK_S` for the local work. A fleet in one wave with the
    default 10 s / 300 s limits: 340 s for plan, 650 s for verify.
    """
    waves = max(1, math.ceil(max(1, hosts) / max(1, forks)))
    return phases * waves * (connect_timeout + command_timeout) + limits.COMMAND_DEADLINE_SLACK_S


def command_deadline(
    timeout: Optional[float], hosts: int, forks: int, connect_timeout: float, command_timeout: float, phases: int
) -> Deadline:
    """The deadline from ``--timeout`` when given, else :func:`default_timeout`."""
    if timeout is not None:
        return Deadline(float(timeout), "--timeout")
    return Deadline(default_timeout(hosts, forks, connect_timeout, command_timeout, phases), "default")
