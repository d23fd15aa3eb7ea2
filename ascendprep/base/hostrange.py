"""Host ranges: ``node[01-64]``, ``10.0.0.[11-74]``, ``rack[1,3,5-7]-n[1-2]``.

A pattern holds zero or more bracket groups; each group is a comma list of numbers or
``a-b`` spans. The width of a span's first bound sets the zero padding (``[01-64]`` gives
``01`` … ``64``), as in pdsh and Ansible. Several groups expand as a cartesian product with the
rightmost group varying fastest, so ``r[1-2]n[1-2]`` is ``r1n1 r1n2 r2n1 r2n2``.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from typing import Iterable, Optional

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_SPAN = re.compile(r"^(\d+)(?:-(\d+))?$")

#: Refuse patterns that would expand to more names than any cluster has (a typo such as
#: ``node[1-100000]`` should fail loudly, not eat memory).
MAX_EXPANSION = 100_000


class HostRangeError(ValueError):
    """A host pattern that cannot be expanded; the message says why."""


def _expand_group(body: str) -> list[str]:
    items: list[str] = []
    if not body.strip():
        raise HostRangeError("empty range '[]'")
    for part in body.split(","):
        part = part.strip()
        match = _SPAN.match(part)
        if not match:
            raise HostRangeError(f"'{part}' in a range is not a number or a span like 1-8")
        first, last = match.group(1), match.group(2)
        if last is None:
            items.append(first)
            continue
        lo, hi = int(first), int(last)
        if hi < lo:
            raise HostRangeError(f"span '{part}' runs backwards")
        if hi - lo + 1 > MAX_EXPANSION:
            raise HostRangeError(f"span '{part}' expands to more than {MAX_EXPANSION} names")
        width = len(first) if first.startswith("0") and len(first) > 1 else 0
        items.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return items


def expand(pattern: str) -> list[str]:
    """Expand a host pattern into the list of names or addresses it stands for."""
    if "[" not in pattern and "]" not in pattern:
        return [pattern]
    pieces: list[list[str]] = []
    pos = 0
    for match in _GROUP.finditer(pattern):
        pieces.append([pattern[pos : match.start()]])
        pieces.append(_expand_group(match.group(1)))
        pos = match.end()
    tail = pattern[pos:]
    if "[" in tail or "]" in tail:
        raise HostRangeError(f"unbalanced bracket in '{pattern}'")
    pieces.append([tail])
    total = 1
    for piece in pieces:
        total *= len(piece)
    if total > MAX_EXPANSION:
        raise HostRangeError(f"'{pattern}' expands to {total} names, more than {MAX_EXPANSION}")
    return ["".join(combo) for combo in itertools.product(*pieces)]


# -- the inverse: a list of names as a few patterns (pdsh's dshbak -c, Slurm's hostlist) --------

_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def number_spans(numbers: Iterable[int], width: int = 0) -> str:
    """``[1, 2, 3, 5]`` as ``1-3,5`` (each bound zero-padded to ``width``); duplicates count once."""
    ordered = sorted(set(numbers))
    spans: list[str] = []
    start = 0
    for index in range(1, len(ordered) + 1):
        if index == len(ordered) or ordered[index] != ordered[index - 1] + 1:
            lo, hi = ordered[start], ordered[index - 1]
            first = str(lo).zfill(width)
            spans.append(first if lo == hi else f"{first}-{str(hi).zfill(width)}")
            start = index
    return ",".join(spans)


def compress(names: Iterable[str]) -> list[str]:
    """The inverse of :func:`expand` over a list: names as the fewest patterns this simple scheme
    finds, in first-seen order, so ``node0001 … node4096`` reads ``node[0001-4096]``.

    Only the last number in a name varies (``r1n[1-8]``); the zero padding is kept exactly, so
    expanding every pattern gives back the same set of names. A name holding ``[`` or ``]`` (or
    ``,``, which joins patterns for display) is kept whole, never made into a pattern.
    """
    groups: dict[tuple[str, str, int], set[int]] = {}
    padded_widths: dict[tuple[str, str], set[int]] = {}
    parsed: list[tuple[str, Optional[tuple[str, str, str]]]] = []
    for name in dict.fromkeys(names):
        match = None if any(c in name for c in "[],") else _LAST_NUMBER.match(name)
        parts: Optional[tuple[str, str, str]] = (match.group(1), match.group(2), match.group(3)) if match else None
        parsed.append((name, parts))
        if parts and parts[1].startswith("0") and len(parts[1]) > 1:
            padded_widths.setdefault((parts[0], parts[2]), set()).add(len(parts[1]))
    order: list[object] = []
    for name, parts in parsed:
        if parts is None:
            order.append(name)
            continue
        prefix, digits, suffix = parts
        padded = digits.startswith("0") and len(digits) > 1
        # An unpadded number as long as a padded one of the same family joins it: node0999 and
        # node1000 are one span, node[0999-1000].
        width = len(digits) if padded or len(digits) in padded_widths.get((prefix, suffix), ()) else 0
        key = (prefix, suffix, width)
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(digits))
    patterns: list[str] = []
    for item in order:
        if isinstance(item, str):
            patterns.append(item)
            continue
        prefix, suffix, width = item  # type: ignore[misc]
        numbers = groups[item]  # type: ignore[index]
        if len(numbers) == 1:
            patterns.append(f"{prefix}{str(next(iter(numbers))).zfill(width)}{suffix}")
        else:
            patterns.append(f"{prefix}[{number_spans(numbers, width)}]{suffix}")
    return patterns


def compressed(names: Iterable[str]) -> str:
    """:func:`compress` joined for people: ``node[01-04,07],login1``."""
    return ",".join(compress(names))


# -- choosing hosts: --hosts PATTERN ------------------------------------------------------------------

_GLOB_CHARS = "*?"


def _top_level_pieces(pattern: str) -> list[str]:
    """``node[1,3],login*`` as ``node[1,3]`` and ``login*``: commas inside brackets stay."""
    pieces, depth, start = [], 0, 0
    for index, char in enumerate(pattern):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            pieces.append(pattern[start:index])
            start = index + 1
    pieces.append(pattern[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def select(pattern: str, names: Iterable[str]) -> list[str]:
    """The ``names`` (in their order) that ``pattern`` names: comma-separated host ranges
    (``node[01-08]``, expanded as :func:`expand` does) or shell globs (``rack2-*``; a piece with
    ``*`` or ``?`` is a glob, matched with :func:`fnmatch.fnmatchcase`).

    Raises HostRangeError for a malformed range; an empty result is the caller's to report."""

    pieces = _top_level_pieces(pattern)
    if not pieces:
        raise HostRangeError("empty host pattern")
    exact: set[str] = set()
    globs: list[str] = []
    for piece in pieces:
        if any(c in piece for c in _GLOB_CHARS):
            globs.append(piece)
        else:
            exact.update(expand(piece))
    return [name for name in names if name in exact or any(fnmatch.fnmatchcase(name, glob) for glob in globs)]
