"""Kernel tuning for HCCL: the values we want and the merge of reserved port ranges.

The seed guide (002, 多机多卡场景 step 8) raises ``net.core.somaxconn`` and
``net.ipv4.tcp_max_syn_backlog`` on the master so that a large cluster's connection burst is not
dropped, and reserves the HCCL host ports (``net.ipv4.ip_local_reserved_ports``) so that no
ephemeral connection takes them. A host may already reserve ports for something else: we only ever
*add* our range to what it has, never replace it.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Union

SOMAXCONN = "net.core.somaxconn"
SYN_BACKLOG = "net.ipv4.tcp_max_syn_backlog"
RESERVED_PORTS = "net.ipv4.ip_local_reserved_ports"

#: Values the seed guide recommends for large clusters; "at least" semantics.
DEFAULT_MINIMUMS = {SOMAXCONN: 65535, SYN_BACKLOG: 65535}

PortRange = tuple[int, int]

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


class PortRangeError(ValueError):
    """A reserved-ports value that is not a comma list of ports and port ranges."""


def parse_port_ranges(text: str) -> list[PortRange]:
    """``"8080,60000-60015"`` → ``[(8080, 8080), (60000, 60015)]`` (the kernel's own syntax)."""
    ranges: list[PortRange] = []
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        match = _RANGE.match(part)
        if not match:
            raise PortRangeError(f"'{part.strip()}' is not a port or a range like 60000-60031")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        if not (0 < lo <= hi <= 65535):
            raise PortRangeError(f"'{part.strip()}' is not within 1-65535")
        ranges.append((lo, hi))
    return ranges


def normalise(ranges: Iterable[PortRange]) -> list[PortRange]:
    """Sort and merge overlapping or adjacent ranges."""
    merged: list[PortRange] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def format_port_ranges(ranges: Iterable[PortRange]) -> str:
    return ",".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)


def merge_reserved_ports(existing: Optional[str], required: Iterable[PortRange]) -> str:
    """The host's reserved ports with ours added: nothing the host reserved is dropped."""
    current = parse_port_ranges(existing or "")
    return format_port_ranges(normalise(list(current) + list(required)))


def covers(existing: Optional[str], required: Iterable[PortRange]) -> bool:
    """True when every port of ``required`` is already reserved in ``existing``."""
    have = normalise(parse_port_ranges(existing or ""))
    return all(any(lo >= a and hi <= b for a, b in have) for lo, hi in required)


def minimums(overrides: dict[str, Union[int, str]]) -> dict[str, Union[int, str]]:
    """The defaults with the inventory's overrides applied (an override may lower a default)."""
    values: dict[str, Union[int, str]] = dict(DEFAULT_MINIMUMS)
    values.update({k: v for k, v in overrides.items() if k != RESERVED_PORTS})
    return values
