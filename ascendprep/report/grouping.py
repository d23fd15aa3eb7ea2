"""Identical lines across hosts (and NPUs) as one line, as pdsh's ``dshbak -c`` does.

At 4,096 nodes a table with a row per host and change is unreadable; the same change on every
node is one line, ``node[0001-4096]: sysctl net.core.somaxconn 4096 -> 65535``. Only lines that
are equal character for character are merged, so a value that differs between hosts or NPUs (a
device IP) is never hidden behind a range: it stays on its own line. ``--format json`` keeps one
entry per host and change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Hashable, Iterable, Optional, Sequence, TypeVar

from ascendprep.base.hostrange import HostRangeError, compress, compressed, expand, number_spans

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Grouped:
    """One line shown once for ``hosts`` (inventory order, each once)."""

    hosts: tuple[str, ...]
    key: Hashable

    @property
    def where(self) -> str:
        """The hosts as a range: ``node[01-64]``."""
        return compressed(self.hosts)


def group_hosts(pairs: Iterable[tuple[str, K]]) -> list[Grouped]:
    """``(host, line)`` pairs as one entry per distinct line, in the order lines are first seen.

    Linear in the number of pairs (a dict per line), so 4,096 hosts cost no more per host than 4.
    """
    seen: dict[Hashable, dict[str, None]] = {}
    for host, key in pairs:
        seen.setdefault(key, {})[host] = None
    return [Grouped(tuple(hosts), key) for key, hosts in seen.items()]


def npu_label(npus: Sequence[int]) -> str:
    """``npu 3`` for one NPU, ``npu[0-7]`` for several."""
    unique = sorted(set(npus))
    return f"npu {unique[0]}" if len(unique) == 1 else f"npu[{number_spans(unique)}]"


def collapse_npus(lines: Iterable[tuple[Optional[int], K]]) -> list[tuple[Optional[str], K]]:
    """One host's ``(npu, rest of line)`` pairs with equal ``rest`` merged: the same change on NPUs
    0-7 is ``(npu[0-7], rest)``. Lines without an NPU pass through; first-seen order is kept."""
    merged: dict[tuple[bool, K], list[int]] = {}
    for npu, rest in lines:
        slot = merged.setdefault((npu is None, rest), [])
        if npu is not None:
            slot.append(npu)
    return [(None if no_npu else npu_label(npus), rest) for (no_npu, rest), npus in merged.items()]


_NUMBER = re.compile(r"\d+")


def _lockstep(entries: list[tuple[int, str]]) -> Optional[str]:
    """``entries`` (npu, line) that differ only in one number, which runs in step with the NPU
    (NPUs 0-7, values 1-8): that line with the number as a range, ``10.20.0.[1-8]``; else None.

    The range pairs with ``npu[0-7]`` in order, so nothing is hidden: expanding both gives back
    every line. Any other difference (two numbers, a gap, a zero-padded number) is not merged."""
    entries = sorted(entries)
    numbers = [[m.group(0) for m in _NUMBER.finditer(line)] for _, line in entries]
    varying = [i for i in range(len(numbers[0])) if len({row[i] for row in numbers}) > 1]
    if len(varying) != 1:
        return None
    index = varying[0]
    tokens = [row[index] for row in numbers]
    if any(len(t) > 1 and t.startswith("0") for t in tokens):
        return None
    values = [int(t) for t in tokens]
    npus = [npu for npu, _ in entries]
    steps_ok = all(b - a == 1 for a, b in zip(npus, npus[1:])) and all(
        v - n == values[0] - npus[0] for v, n in zip(values, npus)
    )
    if not steps_ok:
        return None
    match = list(_NUMBER.finditer(entries[0][1]))[index]
    line = entries[0][1]
    return f"{line[: match.start()]}[{values[0]}-{values[-1]}]{line[match.end() :]}"


def collapse_npu_lines(lines: Iterable[tuple[Optional[int], str]]) -> list[tuple[Optional[str], str]]:
    """:func:`collapse_npus`, and then one NPU's lines that follow the rule in step with the NPU
    index (``npu 0 … 10.20.0.1``, ``npu 1 … 10.20.0.2`` …) as ``npu[0-7]: … 10.20.0.[1-8]``.

    A line that breaks the step stays on its own, with its own value."""
    merged = collapse_npus(lines)
    singles: dict[str, list[tuple[int, str]]] = {}
    for label, text in merged:
        if label is not None and label.startswith("npu "):
            singles.setdefault(_NUMBER.sub("#", text), []).append((int(label[4:]), text))
    replaced: dict[str, tuple[str, str]] = {}
    gone: set[str] = set()
    for entries in singles.values():
        if len(entries) < 2:
            continue
        line = _lockstep(entries)
        if line is None:
            continue
        first = min(entries)[1]
        replaced[first] = (npu_label([npu for npu, _ in entries]), line)
        gone.update(text for _, text in entries if text != first)
    out: list[tuple[Optional[str], str]] = []
    for label, text in merged:
        if label is not None and label.startswith("npu ") and text in replaced:
            out.append(replaced[text])
        elif not (label is not None and label.startswith("npu ") and text in gone):
            out.append((label, text))
    return out


#: A line that :func:`collapse_npu_lines` made from NPUs in step: ``npu[0-7]: … 10.20.0.[1-8] …``
#: (the NPU range, then exactly one value range).
_STEP_LINE = re.compile(r"^(npu\[(\d+)-(\d+)\]: [^\[\]]*)\[(\d+)-(\d+)\]([^\[\]]*)$")


def merge_host_steps(groups: list[Grouped], order: Sequence[str]) -> list[Grouped]:
    """Step lines of consecutive hosts (in ``order``) that continue each other as one line:
    ``node0001 npu[0-7]: ip none → 10.20.0.[1-8]`` and ``node0002 npu[0-7]: ip none →
    10.20.0.[9-16]`` are ``node[0001-0002] npu[0-7]: ip none → 10.20.0.[1-16]``, read in order:
    node0001's NPU 0 → .1 … node0002's NPU 7 → .16. Without this a 4,096-node plan is one line
    per node and NPU-stepped setting.

    Only single-host groups ``(style, text)`` whose value range is as wide as their NPU range
    merge, and only while each host's range starts right after the previous host's ends and the
    hosts' range expands back in the same order; anything else keeps its own line, so no value
    hides behind a range. A merged line takes the place of its first host's line."""
    position = {host: index for index, host in enumerate(order)}
    candidates: dict[tuple[Hashable, str, str], list[tuple[int, int, int, int]]] = {}
    for index, group in enumerate(groups):
        if len(group.hosts) != 1 or not isinstance(group.key, tuple) or len(group.key) != 2:
            continue
        style, text = group.key
        match = _STEP_LINE.match(text) if isinstance(text, str) else None
        if match is None or group.hosts[0] not in position:
            continue
        npu_low, npu_high, low, high = (int(match.group(i)) for i in (2, 3, 4, 5))
        if high - low != npu_high - npu_low:
            continue
        candidates.setdefault((style, match.group(1), match.group(6)), []).append(
            (position[group.hosts[0]], low, high, index)
        )
    replaced: dict[int, Grouped] = {}
    dropped: set[int] = set()
    for (style, head, tail), entries in candidates.items():
        entries.sort()
        run = entries[:1]
        for entry in [*entries[1:], None]:
            if entry is not None and entry[0] == run[-1][0] + 1 and entry[1] == run[-1][2] + 1:
                run.append(entry)
                continue
            hosts = tuple(order[item[0]] for item in run)
            if len(run) > 1 and _expands_in_order(hosts):
                replaced[run[0][3]] = Grouped(hosts, (style, f"{head}[{run[0][1]}-{run[-1][2]}]{tail}"))
                dropped.update(item[3] for item in run[1:])
            run = [entry] if entry is not None else []
    return [replaced.get(index, group) for index, group in enumerate(groups) if index not in dropped]


def _expands_in_order(hosts: tuple[str, ...]) -> bool:
    """The hosts' range (``node[0001-0024]``) expands back to exactly these hosts in this order."""

    try:
        return [name for part in compress(hosts) for name in expand(part)] == list(hosts)
    except HostRangeError:
        return False
