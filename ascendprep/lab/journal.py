"""An append-only record of what ``lab up`` created, so ``lab down`` can undo a partial up.

Each step is written *before* it is carried out (one JSON object per line). If ``up`` dies in
the middle, the record names everything that might exist; ``down`` removes what it finds and
shrugs at what never came to be. A line torn by a crash mid-write is ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class Journal:
    """``created.jsonl`` in the lab dir: ``{"kind": "netns", "name": ...}`` and friends."""

    def __init__(self, path: Path):
        self.path = path

    def record(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, **fields}, sort_keys=True) + "\n"
        # O_APPEND writes of one short line are atomic with respect to other writers.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def entries(self, kind: str | None = None) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        found = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the torn last line of a crashed up
            if isinstance(entry, dict) and (kind is None or entry.get("kind") == kind):
                found.append(entry)
        return found
