"""Host ranges: ``node[01-64]``, ``10.0.0.[11-74]``, ``rack[1,3,5-7]-n[1-2]``.

A pattern holds zero or more bracket groups; each group is a comma list of numbers or
``a-b`` spans. The width of a span's first bound sets the zero padding (``[01-64]`` gives
``01`` … ``64``), as in pdsh and Ansible. Several groups expand as a cartesian product with the
rightmost group varying fastest, so ``r[1-2]n[1-2]`` is ``r1n1 r1n2 r2n1 r2n2``.
"""

from __future__ import annotations

import itertools
import re

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
