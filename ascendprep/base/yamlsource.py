"""YAML with line numbers: load a document and remember where every key and item stood.

Schema errors are only useful when they point at the line to fix (``a2.yaml:14: nodes[3].host:
…``). PyYAML's composed node tree carries marks; this module walks it once and keeps a map from
field path to line, and refuses duplicate keys (which PyYAML would silently let win).

An input file is hostile until read: before anything is composed, one pass over PyYAML's event
stream (no recursion, no objects built) counts the nodes the document expands to, every alias
counted as the whole subtree it repeats, and how deep it nests. A "billion laughs" alias bomb, a
recursive alias or a 10,000-deep ``[[[[...`` is then a located error in milliseconds, instead of
gigabytes of expanded copies, a MemoryError or a RecursionError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Union

import yaml

from ascendprep.base.limits import INPUT_MAX_DEPTH, INVENTORY_MAX_BYTES, NUMBER_MAX_DIGITS, YAML_MAX_NODES

_PLAIN_INT = re.compile(r"^[-+]?[0-9_]+$")

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


def _bounded(text: str, file: str, max_nodes: int, max_depth: int) -> None:
    """Refuse, with its line, a document that nests deeper than ``max_depth`` or expands (aliases
    included) to more than ``max_nodes`` nodes, or an alias to a collection still open (recursive)."""
    sizes: dict[str, int] = {}
    #: Open collections: [anchor, nodes so far (the collection itself included)].
    open_collections: list[list[Any]] = []
    total = 0

    def located(event: yaml.Event, message: str) -> InputError:
        return InputError([Located(file, event.start_mark.line + 1, "", message)])

    def add(count: int, event: yaml.Event) -> None:
        nonlocal total
        total += count
        for frame in open_collections:
            frame[1] += count
        if total > max_nodes:
            raise located(
                event,
                f"the document expands to more than {max_nodes:,} YAML nodes (aliases counted as what they repeat); refused",
            )

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                if any(frame[0] == event.anchor for frame in open_collections):
                    raise located(
                        event,
                        f"alias *{event.anchor} refers to a collection that contains it (recursive alias); refused",
                    )
                continue  # an undefined alias: the composer reports it with its line
            add(sizes[event.anchor], event)
        elif isinstance(event, yaml.ScalarEvent):
            add(1, event)
            if event.style is None and len(event.value) > NUMBER_MAX_DIGITS and _PLAIN_INT.match(event.value):
                # int() refuses more than 4300 digits with a bare ValueError; no setting is this long.
                raise located(event, f"a number of {len(event.value):,} digits; refused")
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            add(1, event)
            open_collections.append([event.anchor, 1])
            if len(open_collections) > max_depth:
                raise located(event, f"collections nested more than {max_depth} deep; refused")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, count = open_collections.pop()
            if anchor is not None:
                sizes[anchor] = count


def parse_yaml(text: str, file: str, max_nodes: int = YAML_MAX_NODES, max_depth: int = INPUT_MAX_DEPTH) -> YamlDocument:
    """Parse ``text``; raise :class:`InputError` with the line of any syntax error or duplicate key,
    and of anything past the size, node-count and depth limits (see the module's docstring)."""
    if len(text) > INVENTORY_MAX_BYTES:
        raise InputError(
            [
                Located(
                    file, None, "", f"{len(text):,} characters; an inventory may have at most {INVENTORY_MAX_BYTES:,}"
                )
            ]
        )
    lines: dict[FieldPath, int] = {}
    problems: list[Located] = []
    try:
        _bounded(text, file, max_nodes, max_depth)
        loader = yaml.SafeLoader(text)
        try:
            # Composed once: the line map is taken from the node tree before the constructor
            # flattens merge keys (``<<``) in it, then the data is built from the same tree.
            node = loader.get_single_node()
            if node is not None:
                _walk(node, (), lines, file, problems)
            if problems:
                raise InputError(problems)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            reason += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        raise InputError([Located(file, line, "", f"YAML syntax error: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise InputError([Located(file, None, "", f"YAML error: {exc}")]) from None
    return YamlDocument(file, _normalise_keys(data), lines)


def read_input_text(path: Path, max_bytes: int = INVENTORY_MAX_BYTES) -> str:
    """The UTF-8 text of an input file, read no further than ``max_bytes`` (a FIFO or a huge file
    costs nothing); a missing, unreadable or too large file is an :class:`InputError`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise InputError([Located(str(path), None, "", f"larger than {max_bytes:,} bytes; refused")])
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError([Located(str(path), None, "", "no such file")]) from None
    except IsADirectoryError:
        raise InputError([Located(str(path), None, "", "is a directory, not a file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Located(str(path), None, "", f"cannot read: {exc}")]) from None


def load_yaml_file(path: Path) -> YamlDocument:
    """Read and parse a YAML file; a missing, unreadable or too large file is an :class:`InputError`."""
    return parse_yaml(read_input_text(path), str(path))
