"""A live "done / failed / in flight / remaining, ETA" line for fan-outs, on stderr, for people.

At 4,096 hosts a read takes minutes; the line says how far it is and how long is left (rich's
estimate from the hosts finished so far). It is transient: erased when the fan-out ends, so the
report that follows stands alone. When stderr is not a terminal (CI logs, pipes, and a
``FORCE_COLOR`` that makes rich think a pipe is one) there is no progress output at all: logs
stay clean and the final report says everything.
"""

from __future__ import annotations

import sys
import threading
from typing import Optional, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import (
    Progress as RichProgress,
)


class Progress:
    """Counts hosts as a fan-out runs and shows the counts live with rich.

    Thread-safe: workers report from their own threads.
    """

    def __init__(self, description: str, console: Optional[Console] = None) -> None:
        self.description = description
        self.done = 0
        self.failed = 0
        self.in_flight = 0
        self.total = 0
        self._lock = threading.Lock()
        self._bar = RichProgress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=True,
        )
        self._task: Optional[TaskID] = None

    def start(self, total: int) -> None:
        with self._lock:
            self.total = total
            self._task = self._bar.add_task(self.description, total=total, counts=self.summary())
        self._bar.start()

    def host_started(self, host: str) -> None:
        with self._lock:
            self.in_flight += 1
            self._refresh()

    def host_finished(self, host: str, ok: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self._refresh()

    def stop(self) -> None:
        self._bar.stop()

    def summary(self) -> str:
        remaining = max(self.total - self.done - self.failed - self.in_flight, 0)
        return f"{self.done} done · {self.failed} failed · {self.in_flight} in flight · {remaining} remaining"

    def _refresh(self) -> None:
        if self._task is not None:
            self._bar.update(self._task, completed=self.done + self.failed, counts=self.summary())


def progress_for_terminal(description: str, stream: Optional[TextIO] = None) -> Optional[Progress]:
    """A Progress when ``stream`` (default stderr) is a terminal, else None (stay quiet).

    Both must agree: the stream is a tty, and rich sees a terminal (``console.is_terminal``, so
    ``TERM=dumb`` or rich's own switches are honoured); ``FORCE_COLOR`` alone never draws it into
    a log file."""
    stream = sys.stderr if stream is None else stream
    console = Console(file=stream)
    if not (stream.isatty() and console.is_terminal):
        return None
    return Progress(description, console)
