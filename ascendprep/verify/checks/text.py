"""Wording helpers for check messages: short node lists and "who differs from whom" sentences."""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple, TypeVar

K = TypeVar("K", bound=Hashable)

_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")

#: How software keys are named in messages.
SOFTWARE_NAMES = {
    "cann": "CANN",
    "driver": "driver",
    "firmware": "firmware",
    "python": "Python",
    "torch": "torch",
    "torch_npu": "torch_npu",
    "torchvision": "torchvision",
}


def compact_names(names: Sequence[str]) -> str:
    """``node1, node2, node3, node7`` → ``node[1-3,7]``; names without a number stay as they are."""
    groups: Dict[Tuple[str, int], List[int]] = {}
    plain: List[str] = []
    order: List[Tuple[str, int]] = []
    for name in names:
        match = _TRAILING_NUMBER.match(name)
        if not match or (len(match.group(2)) > 1 and match.group(2).startswith("0")):
            plain.append(name)
            continue
        key = (match.group(1), 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group(2)))
    parts: List[str] = []
    for key in order:
        numbers = sorted(set(groups[key]))
        if len(numbers) == 1:
            parts.append(f"{key[0]}{numbers[0]}")
            continue
        spans: List[str] = []
        start = previous = numbers[0]
        for number in numbers[1:]:
            if number == previous + 1:
                previous = number
                continue
            spans.append(_span(start, previous))
            start = previous = number
        spans.append(_span(start, previous))
        parts.append(f"{key[0]}[{','.join(spans)}]")
    return ", ".join(parts + plain)


def _span(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}-{end}"


def who_differs(
    values: Mapping[K, str], describe: Callable[[List[K]], str], what: str, repeat_what: bool = False
) -> str:
    """A sentence naming the odd ones out: ``node7 has CANN 8.0.RC2, the other 63 have 8.0.RC3``.

    ``values`` maps each member (node, or (node, npu)) to its value; ``describe`` names a list of
    members. With a clear majority the minorities are named against it; otherwise every group is.
    ``repeat_what`` names ``what`` for the majority too (``the other 31 have TLS disabled``).
    """
    counts = Counter(values.values())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    groups = {value: [member for member, v in values.items() if v == value] for value, _ in ranked}
    (top, top_count) = ranked[0]
    clear_majority = len(ranked) > 1 and top_count > ranked[1][1]
    phrases = []
    for value, _ in ranked:
        if clear_majority and value == top:
            continue
        members = groups[value]
        verb = "has" if len(members) == 1 else "have"
        phrases.append(f"{describe(members)} {verb} {what} {value}")
    if clear_majority:
        verb = "has" if top_count == 1 else "have"
        phrases.append(f"the other {top_count} {verb} {what + ' ' if repeat_what else ''}{top}")
    return ", ".join(phrases)


_MONTHS = {
    name: index
    for index, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}


def parse_asctime(text: str) -> Optional[Tuple[int, int, int, int, int, int]]:
    """``Wed Jun  7 10:08:28 2023`` → (2023, 6, 7, 10, 8, 28); None when it is not that format.

    Parsed by hand: ``time.strptime``'s ``%b`` follows the local locale, hccn_tool's C does not.
    Each number is ASCII digits of its field's width at most: ``str.isdigit`` alone also passes
    ``²`` and 5,000-digit runs, which ``int()`` refuses with an error (a hostile tool's time then
    failed the check with "the check itself failed" instead of being no time).
    """
    words = text.split()
    if len(words) != 5:
        return None
    _, month, day, clock, year = words
    hms = clock.split(":")
    number = _MONTHS.get(month.lower())
    if number is None or not _digits(day, 2) or not _digits(year, 4) or len(hms) != 3:
        return None
    hour, minute, second = hms
    if not (_digits(hour, 2) and _digits(minute, 2) and _digits(second, 2)):  # no generator: asked per NPU
        return None
    return int(year), number, int(day), int(hour), int(minute), int(second)


def _digits(text: str, width: int) -> bool:
    """1 to ``width`` ASCII digits."""
    return 0 < len(text) <= width and text.isascii() and text.isdigit()
