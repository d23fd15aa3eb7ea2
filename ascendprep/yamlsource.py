"""YAML with line numbers: load a document and remember where every key and item stood.

Schema errors are only useful when they point at the line to fix (``a2.yaml:14: nodes[3].host:
…``). PyYAML's composed node tree carries marks; this module walks it once and keeps a map from
field path to line, and refuses duplicate keys (which PyYAML would silently let win).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Union

import yaml

PathPart = Union[str, int]
FieldPath = tuple[PathPart, ...]


@dataclass(frozen=True)
class Located:
    """One problem in an input file: where, which field, and what."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class InputError(Exception):
    """Invalid input: one or more located problems. Never shown to users as a traceback."""

    def __init__(self, problems: Iterable[Located]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def format_path(path: Iterable[PathPart]) -> str:
    """``("nodes", 3, "host")`` → ``nodes[3].host``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class YamlDocument:
    """A parsed YAML document and the line of every field path in it (1-based)."""

    file: str
    data: Any
    lines: dict[FieldPath, int] = field(default_factory=dict)

    def line_of(self, path: Iterable[PathPart]) -> int | None:
        """The line of ``path``, or of its nearest ancestor that exists in the file."""
        parts = tuple(path)
        while parts:
            if parts in self.lines:
                return self.lines[parts]
            parts = parts[:-1]
        return self.lines.get((), 1)

    def problem(self, path: Iterable[PathPart], message: str) -> Located:
        parts = tuple(path)
        return Located(self.file, self.line_of(parts), format_path(parts), message)


def _walk(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], doc: str, problems: list[Located]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            key_line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(
                    Located(doc, key_line, format_path(path + (key,)), f"duplicate key (first at line {seen[key]})")
                )
                continue
            seen[key] = key_line
            child = path + (key,)
            lines[child] = key_line
            _walk(value_node, child, lines, doc, problems)
            lines[child] = key_line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), lines, doc, problems)


def _normalise_keys(data: Any) -> Any:
    """YAML turns ``0:`` into an int key; our paths use the key's text as written."""
    if isinstance(data, dict):
        return {(k if isinstance(k, str) else str(k)): _normalise_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_normalise_keys(v) for v in data]
    return data


def parse_yaml(text: str, file: str) -> YamlDocument:
    """Parse ``text``; raise :class:`InputError` with the line of any syntax error or duplicate key."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            reason += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        raise InputError([Located(file, line, "", f"YAML syntax error: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise InputError([Located(file, None, "", f"YAML error: {exc}")]) from None
    lines: dict[FieldPath, int] = {}
    problems: list[Located] = []
    if node is not None:
        _walk(node, (), lines, file, problems)
    if problems:
        raise InputError(problems)
    return YamlDocument(file, _normalise_keys(data), lines)


def load_yaml_file(path: Path) -> YamlDocument:
    """Read and parse a YAML file; a missing or unreadable file is an :class:`InputError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError([Located(str(path), None, "", "no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Located(str(path), None, "", f"cannot read: {exc}")]) from None
    return parse_yaml(text, str(path))
