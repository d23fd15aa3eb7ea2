"""Keep at most N bytes of what a remote command prints; count, and drop, the rest.

Every transport reads its command's stdout and stderr in chunks into one :class:`CappedOutput`.
Past the cap nothing more is stored (so the controller's memory does not grow with what a host
prints) but reading goes on, so the command is not blocked on a full pipe or SSH window and
still ends (or times out) on its own.
"""

from __future__ import annotations

#: The first bytes of stderr are kept even when stdout has used up the cap: they carry the
#: launcher's started-marker and sudo's messages, which stdout may race past.
STDERR_RESERVE = 4096


class CappedOutput:
    """stdout and stderr of one command, sharing one byte budget of ``cap``.

    The first :data:`STDERR_RESERVE` bytes of stderr are kept on top of the budget.
    """

    __slots__ = ("cap", "stdout", "stderr", "dropped")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"an output cap must be at least 1 byte, not {cap}")
        self.cap = cap
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.dropped = 0

    @property
    def kept(self) -> int:
        return len(self.stdout) + len(self.stderr)

    @property
    def over_cap(self) -> bool:
        """True when some output was dropped: what is kept is not the whole output."""
        return self.dropped > 0

    def add_stdout(self, data: bytes) -> None:
        self._add(self.stdout, data, self._room())

    def add_stderr(self, data: bytes) -> None:
        self._add(self.stderr, data, self._room() + max(0, STDERR_RESERVE - len(self.stderr)))

    def _room(self) -> int:
        """Bytes the shared budget still has (stderr's reserved first bytes do not count)."""
        return self.cap - len(self.stdout) - max(0, len(self.stderr) - STDERR_RESERVE)

    def _add(self, target: bytearray, data: bytes, room: int) -> None:
        if room >= len(data):
            target += data
            return
        if room > 0:
            target += data[:room]
        self.dropped += len(data) - max(room, 0)
