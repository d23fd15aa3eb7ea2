"""The saved plan: a versioned JSON file that ``apply`` carries out exactly.

It records the inventory it was computed from (path and sha256, so apply refuses a plan whose
inventory has changed), every host's changes with the values seen before them (what apply
compares to tell "already done" from "changed since planning"), and the hosts that could not be
planned. It holds no secrets: the inventory names a key file, never a key.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from ascendprep.plan import Change, HostPlan
from ascendprep.yamlsource import InputError, Located
from ascendprep.jsoninput import read_json

PLAN_SCHEMA_VERSION = 1
PLAN_KIND = "ascendprep-plan"
STATE_DIR = ".ascendprep"
DEFAULT_PLAN = Path(STATE_DIR) / "plan.json"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class SavedHost:
    node: str
    address: str
    reachable: bool
    changes: list[Change]
    incomplete: list[str] = field(default_factory=list)
    error: Optional[str] = None


@dataclass
class PlanFile:
    inventory_path: str
    inventory_sha256: str
    cluster: str
    created_at: str
    hosts: list[SavedHost]
    applied_at: Optional[str] = None

    @property
    def complete(self) -> bool:
        return all(h.reachable and not h.incomplete for h in self.hosts)

    @property
    def change_count(self) -> int:
        return sum(len(h.changes) for h in self.hosts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": PLAN_SCHEMA_VERSION,
            "kind": PLAN_KIND,
            "created_at": self.created_at,
            "applied_at": self.applied_at,
            "cluster": self.cluster,
            "inventory": {"path": self.inventory_path, "sha256": self.inventory_sha256},
            "complete": self.complete,
            "hosts": [
                {
                    "node": h.node,
                    "address": h.address,
                    "reachable": h.reachable,
                    "error": h.error,
                    "incomplete": h.incomplete,
                    "changes": [c.to_dict() for c in h.changes],
                }
                for h in self.hosts
            ],
        }


def from_host_plans(inventory_path: Path, cluster: str, plans: list[HostPlan]) -> PlanFile:
    return PlanFile(
        inventory_path=str(inventory_path.resolve()),
        inventory_sha256=file_sha256(inventory_path),
        cluster=cluster,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        hosts=[SavedHost(p.node, p.address, p.reachable, list(p.changes), list(p.incomplete), p.error) for p in plans],
    )


def write_plan(plan: PlanFile, path: Path) -> None:
    """Write atomically (temp file + rename) so a half-written plan is never read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(plan.to_dict(), handle, indent=1)
        handle.write("\n")
    os.replace(tmp, path)


def read_plan(path: Path) -> PlanFile:
    """Read a plan file; anything else (missing, not JSON, other version) is an InputError."""
    def bad(message: str) -> InputError:
        return InputError([Located(str(path), None, "", message)])

    try:
        data = read_json(path)  # bounded: size, depth, strict JSON (ascendprep.jsoninput)
    except FileNotFoundError:
        raise bad("no such plan file (run 'ascendprep plan INVENTORY' first)") from None
    except (OSError, ValueError) as exc:
        raise bad(f"not a readable plan file: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise bad("not an ascendprep plan file")
    if data.get("schema_version") != PLAN_SCHEMA_VERSION:
        raise bad(f"plan schema_version {data.get('schema_version')!r} is not {PLAN_SCHEMA_VERSION}: plan again with this version")
    try:
        hosts = [
            SavedHost(h["node"], h["address"], h["reachable"], [Change.from_dict(c) for c in h["changes"]], list(h.get("incomplete", [])), h.get("error"))
            for h in data["hosts"]
        ]
        return PlanFile(data["inventory"]["path"], data["inventory"]["sha256"], data["cluster"], data["created_at"], hosts, data.get("applied_at"))
    except (KeyError, TypeError) as exc:
        raise bad(f"plan file is missing {exc}") from None
