"""The apply journal: what one ``apply`` meant to do on each host and what came of it.

It is the operator's record of root changes made across the fleet, so it must survive whatever
happens to the run: it is created before anything is printed, each host's intent (the changes,
with the values seen before them) is written before any apply script starts, and it is finished
on success, on a refusal, on Ctrl-C and on SIGTERM. Every write replaces the whole file
atomically (see ``planfile.write_private``), 0600: it holds host facts. File contents are never
recorded, only their hashes (a change's ``before``/``after``).
"""

from __future__ import annotations

import getpass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from ascendprep.base.yamlsource import InputError, Located
from ascendprep.plan.changes import Change
from ascendprep.plan.planfile import TRUST_RULE, compact_json, trust_problem, write_private

SCHEMA_VERSION = 2  # 2: typed changes (kind, target, before, after, text), as in plan files
KIND = "apply-journal"
JOURNAL_DIR = "journal"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def public_change(change: Change) -> dict[str, Any]:
    """A change for the journal: values before/after (a file's by sha256), never file contents."""
    return {**change.entry(), "key": change.key}


def _user() -> Optional[str]:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


class ApplyJournal:
    """One journal file, ``<plan folder>/journal/apply-<time>.json``, rewritten at each stage."""

    def __init__(self, plan_path: Path, cluster: str) -> None:
        """Raises InputError when the journal folder is one someone else may change (they could
        remove or rewrite root's record of what it did): :data:`~ascendprep.plan.planfile.TRUST_RULE`."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        self.path = plan_path.parent / JOURNAL_DIR / f"apply-{stamp}.json"
        problem = trust_problem(self.path.parent)
        if problem is not None:
            raise InputError([Located(str(self.path.parent), None, "", f"{problem}: {TRUST_RULE}")])
        self.record: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "plan": str(plan_path),
            "cluster": cluster,
            "user": _user(),
            "started_at": _now(),
            "finished_at": None,
            "status": "started",
            "detail": None,
            "hosts": [],
        }
        self._by_node: dict[str, dict[str, Any]] = {}
        self.write()

    def write(self) -> None:
        write_private(
            self.path, compact_json(self.record) + "\n"
        )  # rewritten 3 times per apply: compact, by the C encoder

    def intend(self, to_apply: dict[str, list[Change]], done: dict[str, list[Change]]) -> None:
        """Record every host's changes as "pending", before any script runs."""
        for name, changes in to_apply.items():
            if not changes:
                continue
            host = {
                "node": name,
                "status": "pending",
                "already_done": [c.key for c in done.get(name, [])],
                "intent": [public_change(c) for c in changes],
                "steps": [],
                "error": None,
            }
            self._by_node[name] = host
            self.record["hosts"].append(host)
        self.record["status"] = "applying"
        self.write()

    def host_result(self, name: str, status: str, steps: list[dict[str, Any]], error: Optional[str]) -> None:
        host = self._by_node[name]
        host.update(status=status, steps=steps, error=error)

    def finish(self, status: str, detail: Optional[str] = None) -> None:
        """Close the record. Hosts still "pending" then ran for an unknown part of their script."""
        if self.record["finished_at"] is not None:
            return
        for host in self._by_node.values():
            if host["status"] == "pending" and status != "finished":
                host["status"] = "unknown"
                host["error"] = (
                    f"apply was {status} while this host's script may have been running; run 'ascendprep plan' to see where it stands"
                )
        self.record.update(status=status, detail=detail, finished_at=_now())
        self.write()
