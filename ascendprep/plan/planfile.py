"""The saved plan: a versioned JSON file that ``apply`` carries out exactly.

It records the inventory it was computed from (path and sha256, so apply refuses a plan whose
inventory has changed), every host's changes with the values seen before them (what apply
compares to tell "already done" from "changed since planning"), and the hosts that could not be
planned. It holds no secrets: the inventory names a key file, never a key, but it does hold
host facts, so it is written 0600 whatever the umask.

A plan file is data, never commands: ``apply`` runs what a fresh diff of the inventory produces
and only uses the saved changes to confirm that nothing moved (see ``plan.reconcile``). Reading
one therefore checks every field's type, so a hand-edited file is a located error, not a crash.

Schema 2 records typed changes (``kind``, ``target``, machine values ``before``/``after``, and
the ``text`` people read, which must say what the values do); schema 1 files (an ``action``
per change) are refused with the advice to plan again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from ascendprep.plan.changes import Change, ChangeError, from_saved
from ascendprep.base.limits import INVENTORY_MAX_BYTES, PLAN_FILE_MAX_BYTES
from ascendprep.plan.diff import HostPlan
from ascendprep.report.changes import change_entry, describe
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.base.jsoninput import parse_json

PLAN_SCHEMA_VERSION = 2
#: What a plan file of an older schema gets told (a plan is cheap to make again; apply reads it
#: only to confirm, so converting one would confirm nothing).
OLDER_PLAN = "plan file was written by an older ascendprep; run `ascendprep plan` again"
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
                    "changes": [change_entry(c) for c in h.changes],
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


def make_private_dir(folder: Path) -> None:
    """Create ``folder`` (and parents) as 0700 when missing; an existing folder is left as it is."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file, fsync, rename) as a 0600 file, whatever the umask.

    ``mkstemp`` creates the temp file 0600; the rename keeps that mode. A half-written file is
    never seen under ``path``, and a failed write leaves no temp file behind.
    """
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_plan(plan: PlanFile, path: Path) -> None:
    """Write the plan atomically and 0600 (it holds host facts), compact: ``indent`` would run
    json's pure-Python encoder, ~5x the C one's CPU (~1 ms per host). ``jq .`` indents it."""
    write_private(path, compact_json(plan.to_dict()) + "\n")


def compact_json(document: Any) -> str:
    """``document`` as one line of JSON, by the C encoder."""
    return json.dumps(document, separators=(",", ":"))


def read_bounded(path: Path, limit: int, private: bool = False) -> bytes:
    """A regular file's bytes, at most ``limit`` (a FIFO or /dev/zero as a plan never blocks).

    ``private``: refuse a file that other users may write (group/world-writable), since whoever
    can write it decides what ``apply`` is asked to confirm and which inventory it names.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO would block a plain open()
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if private and info.st_mode & 0o022:
            raise OSError(f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}); run 'chmod go-w {path}' if you trust its content")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path} is larger than {limit // (1024 * 1024)} MB")
    return data


def read_inventory_bytes(path: Path) -> tuple[bytes, str]:
    """The inventory's bytes and their sha256, read once (what is hashed is what is parsed)."""
    data = read_bounded(path, INVENTORY_MAX_BYTES)
    return data, hashlib.sha256(data).hexdigest()


def _text(value: Any, name: str, optional: bool = False) -> Optional[str]:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, not {type(value).__name__}")
    return value


_CHANGE_FIELDS = ("kind", "node", "target", "before", "after", "text")
#: Fields a change may have besides those (an env.sh change's variables; older plans lack them).
_OPTIONAL_CHANGE_FIELDS = ("variables",)


def _change(data: Any, where: str) -> Change:
    if not isinstance(data, dict):
        raise TypeError(f"{where} must be an object")
    unknown = set(data) - set(_CHANGE_FIELDS) - set(_OPTIONAL_CHANGE_FIELDS)
    if unknown:
        raise TypeError(f"{where} has unknown fields {sorted(unknown)}")
    missing = [name for name in _CHANGE_FIELDS if name not in data]
    if missing:
        raise TypeError(f"{where} is missing {', '.join(missing)}")
    node = _text(data["node"], f"{where}.node")
    text = _text(data["text"], f"{where}.text")
    try:
        change = from_saved(data["kind"], node, data["target"], data["before"], data["after"], data.get("variables"))
    except ChangeError as exc:
        raise TypeError(f"{where}: {exc}") from None
    if text != describe(change):
        shown = text if len(text) <= 120 and text.isprintable() else repr(text[:120])
        raise TypeError(f"{where}.text {shown!r} is not what this change does ({describe(change)})")
    return change


def _host(data: Any, where: str) -> SavedHost:
    if not isinstance(data, dict):
        raise TypeError(f"{where} must be an object")
    changes = data.get("changes")
    incomplete = data.get("incomplete", [])
    if not isinstance(changes, list) or not isinstance(incomplete, list):
        raise TypeError(f"{where}: changes and incomplete must be lists")
    if not isinstance(data.get("reachable"), bool):
        raise TypeError(f"{where}.reachable must be true or false")
    return SavedHost(
        _text(data.get("node"), f"{where}.node"),
        _text(data.get("address"), f"{where}.address"),
        data["reachable"],
        [_change(c, f"{where}.changes[{i}]") for i, c in enumerate(changes)],
        [_text(r, f"{where}.incomplete[{i}]") for i, r in enumerate(incomplete)],
        _text(data.get("error"), f"{where}.error", optional=True),
    )


def read_plan(path: Path) -> PlanFile:
    """Read a plan file; anything else (missing, not JSON, other version, a field of the wrong
    type) is an InputError naming the file and the field."""
    def bad(message: str) -> InputError:
        return InputError([Located(str(path), None, "", message)])

    try:
        raw = read_bounded(path, PLAN_FILE_MAX_BYTES, private=True)  # size; a FIFO or a plan others can write is refused
        data = parse_json(raw.decode("utf-8"), str(path))  # depth, strict JSON (ascendprep.base.jsoninput)
    except FileNotFoundError:
        raise bad("no such plan file (run 'ascendprep plan INVENTORY' first)") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise bad(f"not a readable plan file: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise bad("not an ascendprep plan file")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < PLAN_SCHEMA_VERSION:
        raise bad(f"schema_version {version}: {OLDER_PLAN}")
    if version != PLAN_SCHEMA_VERSION:
        raise bad(f"plan schema_version {version!r} is not {PLAN_SCHEMA_VERSION}: plan again with this version of ascendprep")
    try:
        inventory = data["inventory"]
        hosts = data["hosts"]
        if not isinstance(inventory, dict) or not isinstance(hosts, list):
            raise TypeError("inventory must be an object and hosts a list")
        saved = [_host(h, f"hosts[{i}]") for i, h in enumerate(hosts)]
        return PlanFile(
            _text(inventory.get("path"), "inventory.path"),
            _text(inventory.get("sha256"), "inventory.sha256"),
            _text(data["cluster"], "cluster"),
            _text(data["created_at"], "created_at"),
            saved,
            _text(data.get("applied_at"), "applied_at", optional=True),
        )
    except KeyError as exc:
        raise bad(f"plan file is missing {exc}") from None
    except TypeError as exc:
        raise bad(f"plan file: {exc}") from None
