"""IPv4 parsing and subnet arithmetic for the simulated Ascend tools.

Why not :mod:`ipaddress`: the simulated ``hccn_tool`` starts hundreds of times during a lab run and
``ipaddress`` pulls in ``re`` and ``functools``; these few integer helpers keep start-up cheap.
They also reproduce glibc ``inet_pton(AF_INET)`` exactly (what the real tool calls): four decimal
parts, 0-255, no leading zeros, nothing else.
"""

from __future__ import annotations

BROADCAST = 0xFFFFFFFF


def parse(text: str) -> int | None:
    """Return the address as a 32-bit integer, or None when ``inet_pton`` would reject it."""
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not part or len(part) > 3 or not part.isdigit() or not part.isascii():
            return None
        if len(part) > 1 and part[0] == "0":
            return None
        number = int(part)
        if number > 255:
            return None
        value = (value << 8) | number
    return value


def format_ip(value: int) -> str:
    """Dotted-quad text of a 32-bit integer."""
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def prefix_length(mask: int) -> int | None:
    """Prefix length of a contiguous netmask, None when the ones are not contiguous."""
    inverted = (~mask) & BROADCAST
    if inverted & (inverted + 1):
        return None
    return 32 - inverted.bit_length()


def is_valid_netmask(text: str) -> bool:
    """A netmask the device accepts: contiguous ones, at least /1 (0.0.0.0 is refused)."""
    mask = parse(text)
    if mask is None:
        return False
    length = prefix_length(mask)
    return length is not None and length >= 1


def is_valid_host_address(text: str, netmask_text: str) -> bool:
    """An address the device accepts as its own RoCE IP.

    [I] The real tool's ``tool_transfer_check_ipaddr`` is not in the public source; we refuse
    what no Linux interface would take as a unicast host address: 0.x, 127.x, multicast and
    class E, and the network/broadcast address of the subnet (for prefixes up to /30).
    """
    address = parse(text)
    mask = parse(netmask_text)
    if address is None or mask is None:
        return False
    first = address >> 24
    if first == 0 or first == 127 or first >= 224:
        return False
    length = prefix_length(mask)
    if length is not None and length <= 30:
        host = address & ~mask & BROADCAST
        if host == 0 or host == (~mask & BROADCAST):
            return False
    return True


def same_subnet(first: str, second: str, netmask: str) -> bool:
    """True when both addresses fall in the same subnet under ``netmask``."""
    a, b, m = parse(first), parse(second), parse(netmask)
    if a is None or b is None or m is None:
        return False
    return (a & m) == (b & m)
