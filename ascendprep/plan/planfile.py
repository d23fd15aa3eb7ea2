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

import hashlib
import json
import os
import pwd
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from ascendprep.base.jsoninput import parse_json
from ascendprep.base.limits import INVENTORY_MAX_BYTES, PLAN_FILE_MAX_BYTES
from ascendprep.base.outputfile import ensure_dir, write_file
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.plan.changes import Change, ChangeError, from_saved
from ascendprep.plan.diff import HostPlan

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
                    "changes": [c.entry() for c in h.changes],
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


def write_private(path: Path, text: str) -> None:
    """Write ``text`` as a 0600 file, atomically, in a folder made 0700 when missing
    (``ascendprep.base.outputfile``: no link followed, the mode exact, no temp file left behind)."""
    ensure_dir(path.parent)
    write_file(path, text)


def write_plan(plan: PlanFile, path: Path) -> None:
    """Write the plan atomically and 0600 (it holds host facts), compact: ``indent`` would run
    json's pure-Python encoder over every host's facts instead of the C one. ``jq .`` indents it."""
    write_private(path, compact_json(plan.to_dict()) + "\n")


def compact_json(document: Any) -> str:
    """``document`` as one line of JSON, by the C encoder."""
    return json.dumps(document, separators=(",", ":"))


#: The rule a plan, the inventory it names and the journal folder beside it are held to: whoever
#: can write or replace them chooses what apply, often run as root, does on the fleet.
TRUST_RULE = (
    "apply takes a plan, the inventory it names and the journal folder beside it only when "
    "they are owned by you or root and lie in folders that only you or root can change "
    "(writable by group or others only with the sticky bit)"
)


class NotTrusted(OSError):
    """A file or folder that someone but the caller and root can write or replace; the message
    says which, its owner and mode, and the rule."""


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _owner_trusted(uid: int) -> bool:
    return uid == 0 or uid == os.geteuid()


def _writable_by_others(info: os.stat_result) -> Optional[str]:
    """Who but the owner may write a file or folder (a sticky folder keeps others' entries
    apart, as ``/tmp``), or None."""
    if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX:
        return None
    who = [name for bit, name in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "all users")) if info.st_mode & bit]
    return " and ".join(who) or None


def _unsafe(info: os.stat_result, what: str = "") -> Optional[str]:
    """Why a file or folder (``what``: "its folder /x"; the file itself when empty) is one
    someone else may change, or None."""
    said = f"{what} is " if what else ""
    owner = f"owned by {_user(info.st_uid)}"
    mode = f"mode {stat.S_IMODE(info.st_mode):04o}"
    if not _owner_trusted(info.st_uid):
        return f"{said}{owner}, {mode}"
    writers = _writable_by_others(info)
    if writers is not None:
        sticky = " without the sticky bit" if stat.S_ISDIR(info.st_mode) else ""
        return f"{said}writable by {writers}{sticky} ({owner}, {mode})"
    return None


def _folders_problem(real: Path) -> Optional[str]:
    """Why someone else could replace what the real path ``real`` names: the first folder above
    it, up to ``/``, that is not owned by the caller or root or that group or others may write
    without the sticky bit (as OpenSSH's StrictModes checks the folders above authorized_keys)."""
    for folder in real.parents:
        problem = _unsafe(os.lstat(folder), f"its folder {folder}")
        if problem is not None:
            return problem
    return None


def trust_problem(path: Path) -> Optional[str]:
    """Why someone but the caller and root may write or replace ``path`` (a file or folder, which
    need not exist yet: then what would hold it decides), or None. Links are resolved first: the
    folders checked are the ones the file really lies in."""
    real = Path(os.path.realpath(path))
    try:
        info = os.lstat(real)
    except FileNotFoundError:
        return _folders_problem(real)
    return _unsafe(info) or _folders_problem(real)


def read_bounded(path: Path, limit: int, private: bool = False, owned: bool = False) -> bytes:
    """A regular file's bytes, at most ``limit`` (a FIFO or /dev/zero as a plan never blocks).

    ``private``: refuse a file that other users may write (group/world-writable), since whoever
    can write it decides what ``apply`` is asked to confirm and which inventory it names.
    ``owned``: also refuse (:class:`NotTrusted`) a file not owned by the caller or root, or lying
    in a folder someone else may change (:data:`TRUST_RULE`); its real path is opened, never
    through a link, and the folders above that path are checked.
    """
    real = os.path.realpath(path) if owned else path
    if owned:  # the real path, so that the folders checked are the ones it lies in
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO would block a plain open()
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if private and info.st_mode & 0o022:
            raise OSError(
                f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}); run 'chmod go-w {path}' if you trust its content"
            )
        if owned:
            problem = _unsafe(info) or _folders_problem(Path(real))
            if problem is not None:
                raise NotTrusted(f"{problem}: {TRUST_RULE}")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path} is larger than {limit // (1024 * 1024)} MB")
    return data


def read_inventory_bytes(path: Path, owned: bool = False) -> tuple[bytes, str]:
    """The inventory's bytes and their sha256, read once (what is hashed is what is parsed).
    ``owned``: the one a plan names, held to :data:`TRUST_RULE` (see :func:`read_bounded`)."""
    data = read_bounded(path, INVENTORY_MAX_BYTES, owned=owned)
    return data, hashlib.sha256(data).hexdigest()


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, not {type(value).__name__}")
    return value


def _optional_text(value: Any, name: str) -> Optional[str]:
    return None if value is None else _text(value, name)


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
    if text != change.describe():
        shown = text if len(text) <= 120 and text.isprintable() else repr(text[:120])
        raise TypeError(f"{where}.text {shown!r} is not what this change does ({change.describe()})")
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
        _optional_text(data.get("error"), f"{where}.error"),
    )


def read_plan(path: Path, owned: bool = True) -> PlanFile:
    """Read a plan file; anything else (missing, not JSON, other version, a field of the wrong
    type) is an InputError naming the file and the field.

    ``owned``: the plan must be one only the caller or root can write or replace
    (:data:`TRUST_RULE`), since the inventory it names is used. Without (``apply --inventory``,
    the inventory named by the caller) it must still be a regular file of bounded size that
    group and others cannot write: it then only selects hosts and confirms changes that a fresh
    diff of the caller's inventory produces.
    """

    def bad(message: str) -> InputError:
        return InputError([Located(str(path), None, "", message)])

    try:
        raw = read_bounded(
            path, PLAN_FILE_MAX_BYTES, private=True, owned=owned
        )  # size; a FIFO or a plan others can write is refused
        data = parse_json(raw.decode("utf-8"), str(path))  # depth, strict JSON (ascendprep.base.jsoninput)
    except FileNotFoundError:
        raise bad("no such plan file (run 'ascendprep plan INVENTORY' first)") from None
    except NotTrusted as exc:
        raise bad(
            f"{exc}; with --inventory FILE you name the inventory yourself, and the plan then need not be yours"
        ) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise bad(f"not a readable plan file: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise bad("not an ascendprep plan file")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < PLAN_SCHEMA_VERSION:
        raise bad(f"schema_version {version}: {OLDER_PLAN}")
    if version != PLAN_SCHEMA_VERSION:
        raise bad(
            f"plan schema_version {version!r} is not {PLAN_SCHEMA_VERSION}: plan again with this version of ascendprep"
        )
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
            _optional_text(data.get("applied_at"), "applied_at"),
        )
    except KeyError as exc:
        raise bad(f"plan file is missing {exc}") from None
    except TypeError as exc:
        raise bad(f"plan file: {exc}") from None
