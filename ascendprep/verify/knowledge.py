"""What a line of an Ascend job's logs means: the knowledge base (``data/diagnose/knowledge.yaml``).

One base for every reader of logs: ``ascendprep diagnose`` matches a failed job's plogs, console
and kernel logs against it, and the all-reduce smoke test's verdict names the cause of a failed
launch from it (:mod:`ascendprep.verify.allreduce.error_codes`). Each entry is a signature (lists
of literal strings that must all occur in one line, as the vendor's own knowledge base matches,
and optionally a regular expression tried only on a line the literals chose), what it means, what
to do, the verify checks that would have caught it before the job, and the faults it can cause
elsewhere (the "can cause" edges: a fault that nothing else in the run explains is a root cause).

Pure: the table is read once from the package and checked; matching is text in, entries out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, List, Mapping, Optional, Pattern, Tuple

import yaml

DATA_PACKAGE = "ascendprep"
DATA_PATH = "data/diagnose/knowledge.yaml"

SEVERITIES = ("error", "warning")
#: Kinds of file an entry may be restricted to (diagnose/model.py names the same).
FILE_KINDS = ("plog", "device", "console", "kernel")
_FIELDS = {
    "key",
    "title",
    "match",
    "code",
    "regex",
    "files",
    "component",
    "layer",
    "severity",
    "cause",
    "fix",
    "checks",
    "can_cause",
    "source",
    "generic",
    "health_code",
    "smoke_key",
}
_REQUIRED = ("key", "title", "component", "layer", "severity", "cause", "fix", "checks", "can_cause", "source")


class KnowledgeError(ValueError):
    """knowledge.yaml is malformed (a packaging bug); the message names the entry."""


@dataclass(frozen=True)
class Entry:
    """One fault the logs can show."""

    key: str
    title: str
    #: Alternatives, each a tuple of literals that must all occur in the line.
    match: Tuple[Tuple[str, ...], ...]
    regex: Optional[Pattern[str]]
    files: Tuple[str, ...]
    component: str
    layer: str
    severity: str
    cause: str
    fix: str
    checks: Tuple[str, ...]
    can_cause: Tuple[str, ...]
    source: str
    generic: bool = False
    code: Optional[str] = None
    health_code: Optional[str] = None
    #: The name the all-reduce smoke test's verdict gives this fault (None: not one it reports).
    smoke_key: Optional[str] = None

    def literals_hit(self, line: str) -> bool:
        """Whether one alternative's literals all occur in ``line``."""
        return any(all(literal in line for literal in group) for group in self.match)

    def fields(self, line: str) -> Optional[Dict[str, str]]:
        """The named fields of ``line`` when it matches (literals, then the regex), else None."""
        if not self.literals_hit(line):
            return None
        if self.regex is None:
            return {}
        found = self.regex.search(line)
        if found is None:
            return None
        return {name: value for name, value in found.groupdict().items() if value is not None}


@dataclass(frozen=True)
class KnowledgeBase:
    layers: Tuple[str, ...]
    entries: Tuple[Entry, ...]

    @property
    def by_key(self) -> Dict[str, Entry]:
        return {entry.key: entry for entry in self.entries}


def _code_regex(code: str) -> Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(code)}(?![0-9])")


def _strings(value: Any, where: str, name: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise KnowledgeError(f"{where}: {name} must be a list of non-empty strings")
    return tuple(value)


def _entry(raw: Any, where: str, layers: Tuple[str, ...]) -> Entry:
    if not isinstance(raw, dict):
        raise KnowledgeError(f"{where}: an entry must be a mapping")
    unknown = set(raw) - _FIELDS
    missing = [name for name in _REQUIRED if name not in raw]
    if unknown or missing:
        raise KnowledgeError(f"{where}: unknown fields {sorted(unknown)}, missing {missing}")
    key = str(raw["key"])
    where = f"{where} ({key})"
    code = raw.get("code")
    if code is not None and "match" not in raw:
        match: Tuple[Tuple[str, ...], ...] = ((str(code),),)
        regex: Optional[Pattern[str]] = _code_regex(str(code))
    else:
        groups = raw.get("match")
        if not isinstance(groups, list) or not groups:
            raise KnowledgeError(f"{where}: match must be a list of lists of literals (or give code)")
        match = tuple(_strings(group, where, "each match alternative") for group in groups)
        try:
            regex = re.compile(raw["regex"]) if raw.get("regex") else None
        except re.error as exc:
            raise KnowledgeError(f"{where}: regex does not compile: {exc}") from None
    files = _strings(raw.get("files", list(FILE_KINDS)), where, "files")
    if set(files) - set(FILE_KINDS):
        raise KnowledgeError(f"{where}: files may name only {', '.join(FILE_KINDS)}")
    if raw["severity"] not in SEVERITIES or raw["layer"] not in layers:
        raise KnowledgeError(f"{where}: severity must be one of {SEVERITIES} and layer one of {layers}")
    return Entry(
        key=key,
        title=str(raw["title"]),
        match=match,
        regex=regex,
        files=files,
        component=str(raw["component"]),
        layer=str(raw["layer"]),
        severity=str(raw["severity"]),
        cause=str(raw["cause"]),
        fix=str(raw["fix"]),
        checks=tuple(raw["checks"] or ()),
        can_cause=tuple(raw["can_cause"] or ()),
        source=str(raw["source"]),
        generic=bool(raw.get("generic", False)),
        code=str(code) if code is not None else None,
        health_code=str(raw["health_code"]) if raw.get("health_code") else None,
        smoke_key=str(raw["smoke_key"]) if raw.get("smoke_key") else None,
    )


def parse_knowledge(text: str, origin: str = DATA_PATH) -> KnowledgeBase:
    """The knowledge base in ``text``, every entry checked and every edge pointing at an entry."""
    data = yaml.safe_load(text)
    if not isinstance(data, Mapping) or data.get("schema_version") != 1:
        raise KnowledgeError(f"{origin}: not a knowledge base of schema_version 1")
    layers = _strings(data.get("layers"), origin, "layers")
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        raise KnowledgeError(f"{origin}: entries must be a list")
    entries = [_entry(raw, f"{origin}: entries[{i}]", layers) for i, raw in enumerate(raw_entries)]
    keys = [entry.key for entry in entries]
    if len(set(keys)) != len(keys):
        raise KnowledgeError(f"{origin}: duplicate keys {sorted({k for k in keys if keys.count(k) > 1})}")
    for entry in entries:
        dangling = [dst for dst in entry.can_cause if dst not in keys]
        if dangling:
            raise KnowledgeError(f"{origin}: {entry.key}: can_cause names no entry: {', '.join(dangling)}")
    return KnowledgeBase(layers, tuple(entries))


@functools.lru_cache(maxsize=None)
def knowledge() -> KnowledgeBase:
    """The packaged knowledge base (read once)."""
    text = resources.files(DATA_PACKAGE).joinpath(DATA_PATH).read_text(encoding="utf-8")
    return parse_knowledge(text)


def matches_in(text: str, kb: Optional[KnowledgeBase] = None) -> List[Tuple[int, Entry]]:
    """(offset of the first line that matches, entry) for each entry that matches a line of
    ``text``: the small-text form (a launcher's log tail), line by line like diagnose."""
    base = kb or knowledge()
    found: Dict[str, Tuple[int, Entry]] = {}
    offset = 0
    for line in text.splitlines(keepends=True):
        for entry in base.entries:
            if entry.key not in found and entry.fields(line) is not None:
                found[entry.key] = (offset, entry)
        offset += len(line)
    return sorted(found.values(), key=lambda item: item[0])
