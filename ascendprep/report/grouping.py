"""Identical lines across hosts (and NPUs) as one line, as pdsh's ``dshbak -c`` does.

At 4,096 nodes a table with a row per host and change is unreadable; the same change on every
node is one line, ``node[0001-4096]: sysctl net.core.somaxconn 4096 -> 65535``. Only lines that
are equal character for character are merged, so a value that differs between hosts or NPUs (a
device IP) is never hidden behind a range: it stays on its own line. ``--format json`` keeps one
entry per host and change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Optional, Sequence, TypeVar

from ascendprep.hostrange import compressed, number_spans

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
