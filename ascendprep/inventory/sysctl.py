"""Kernel tuning for HCCL: the values we want and the merge of reserved port ranges.

The seed guide (002, 多机多卡场景 step 8) raises ``net.core.somaxconn`` and
``net.ipv4.tcp_max_syn_backlog`` on the master so that a large cluster's connection burst is not
dropped, and reserves the HCCL host ports (``net.ipv4.ip_local_reserved_ports``) so that no
ephemeral connection takes them. A host may already reserve ports for something else: we only ever
*add* our range to what it has, never replace it.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional, Union

from ascendprep.base.limits import SYSCTL_KEY_MAX_LEN, SYSCTL_VALUE_MAX_LEN

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


# --------------------------------------------------------------------------------------------
# Which keys an inventory may set: apply writes them as root into /proc/sys and sysctl.d.

#: Families HCCL and the guides tune (backlogs, reserved ports, buffers): allowed without more.
ALLOWED_PREFIXES = ("net.core.", "net.ipv4.", "net.ipv6.")

#: ``vm.*``/``kernel.*`` keys that a reference in docs/ names for Ascend training. None does
#: today (docs/ascend-reference.md names only somaxconn, tcp_max_syn_backlog and the reserved ports),
#: so every such key needs the inventory's ``sysctl_opt_in``.
REFERENCED_KEYS: frozenset[str] = frozenset()

#: Keys that make the kernel run a program (or load one) as root: never, not even with opt-in.
#: With ``kernel.modprobe: /tmp/evil`` the next module request runs /tmp/evil as root.
DENIED_KEYS = frozenset(
    {
        "kernel.modprobe",
        "kernel.core_pattern",
        "kernel.hotplug",
        "kernel.poweroff_cmd",
        "kernel.usermodehelper.bset",
        "kernel.usermodehelper.inheritable",
        "fs.binfmt_misc.register",
    }
)

_KEY = re.compile(r"[a-z0-9_]+(\.[a-z0-9_-]+)+")
_VALUE = re.compile(r"[A-Za-z0-9 ,._:/-]*")
#: A 64-bit kernel value fits; anything longer is a typo or an attack on the parsers.
_INT_RANGE = (-(2**63), 2**64 - 1)


def is_allowed_key(key: str) -> bool:
    """True for keys an inventory may set without opting in."""
    return key.startswith(ALLOWED_PREFIXES) or key in REFERENCED_KEYS


def key_problem(key: str, opt_in: Iterable[str]) -> Optional[str]:
    """Why ``key`` may not be set from this inventory, or None."""
    if len(key) > SYSCTL_KEY_MAX_LEN or not _KEY.fullmatch(key):
        return f"'{key[:SYSCTL_KEY_MAX_LEN]}' is not a sysctl key such as net.core.somaxconn"
    if key in DENIED_KEYS:
        return f"{key} makes the kernel run a program as root; ascendprep never sets it"
    if not is_allowed_key(key) and key not in set(opt_in):
        return (
            f"{key} is outside what HCCL needs ({', '.join(p + '*' for p in ALLOWED_PREFIXES)}); "
            f"to set it anyway, list it under sysctl_opt_in"
        )
    return None


def value_problem(key: str, value: object) -> Optional[str]:
    """Why ``value`` cannot be written to ``key`` (it travels into a root shell), or None."""
    if isinstance(value, bool):
        return f"{key}: {value!r} is not a number or text (write 0 or 1)"
    if isinstance(value, int):
        lo, hi = _INT_RANGE
        return None if lo <= value <= hi else f"{key}: the number is out of the 64-bit range"
    if not isinstance(value, str):
        return f"{key}: a value must be a number or text"
    if len(value) > SYSCTL_VALUE_MAX_LEN:
        return f"{key}: the value is {len(value)} characters long (at most {SYSCTL_VALUE_MAX_LEN})"
    if not _VALUE.fullmatch(value):
        return f"{key}: {value!r} has characters a sysctl value cannot have (letters, digits, space , . _ : / - only)"
    return None


def opt_in_problem(key: str, settings: Mapping[str, object]) -> Optional[str]:
    """An opt-in entry must name a key the inventory sets, outside the allow-list."""
    if key not in settings:
        return f"{key} is opted in but not set under sysctl"
    if is_allowed_key(key):
        return f"{key} is allowed without opt-in; remove it from sysctl_opt_in"
    return None
