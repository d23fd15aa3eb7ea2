"""Host NIC state (``ip -o link``) and the route to the master (``ip route get MASTER_ADDR``).

Why: HCCL opens its host sockets on the NIC named by ``HCCL_SOCKET_IFNAME`` or holding
``HCCL_IF_IP``, gloo on ``GLOO_SOCKET_IFNAME``. A NIC that is down, holds no (or another)
address, or is not the one the kernel routes to the master on, leaves ranks advertising an
address their peers cannot reach: "Gloo connectFullMesh failed", "1/8 clients joined", HCCL's
"get host ip fail by socket Ifname" (docs/ascend-reference.md §7). Pure parsers.
"""

from __future__ import annotations

import ipaddress
import sys
from typing import List, Tuple

from ascendprep.base.limits import MAX_HOST_LINKS
from ascendprep.facts.blocker_model import LinkState, RouteLookup
from ascendprep.facts.netaddr import IFNAME_RE
from ascendprep.facts.text import UnexpectedOutput, content_lines, first_line


def parse_ip_link(text: str) -> Tuple[LinkState, ...]:
    """``ip -o link`` → every NIC with its flags and operstate.

    A line reads ``2: eth0@if5: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ... state UP mode ...``.
    """
    links: List[LinkState] = []
    for line in content_lines(text):
        words = line.split()
        if len(words) < 3 or not words[0].endswith(":") or not words[1].endswith(":") or not words[2].startswith("<"):
            raise UnexpectedOutput(f"not an 'ip -o link' line: {line[:120]!r}")
        ifname = words[1][:-1].split("@", 1)[0]
        if not IFNAME_RE.match(ifname):
            raise UnexpectedOutput(f"interface name {ifname[:40]!r} has characters an interface name cannot have")
        flags = tuple(flag for flag in words[2].strip("<>").split(",") if flag)
        state = words[words.index("state") + 1] if "state" in words[:-1] else "UNKNOWN"
        links.append(LinkState(sys.intern(ifname), tuple(map(sys.intern, flags)), sys.intern(state)))
        if len(links) > MAX_HOST_LINKS:
            raise UnexpectedOutput(f"more than {MAX_HOST_LINKS} interfaces")
    return tuple(links)


def parse_route_get(text: str, destination: str) -> RouteLookup:
    """``ip route get A`` → the device, source and gateway the kernel picks for ``A``.

    ``10.0.0.11 dev eth0 src 10.0.0.12 uid 0``, ``... via 10.0.0.1 dev eth0 ...``, or for one of
    the host's own addresses ``local 10.0.0.12 dev lo table local src 10.0.0.12``.
    """
    lines = list(content_lines(text))
    if not lines:
        raise UnexpectedOutput(f"'ip route get {destination}' printed nothing")
    words = lines[0].split()
    if words and words[0] in ("local", "broadcast", "unicast", "multicast"):
        words = words[1:]
    if not words or "dev" not in words[:-1]:
        raise UnexpectedOutput(f"not an 'ip route get' answer: {first_line(text)[:120]!r}")

    def after(key: str) -> str | None:
        return words[words.index(key) + 1] if key in words[:-1] else None

    dev, src, via = after("dev"), after("src"), after("via")
    if dev is None or not IFNAME_RE.match(dev):
        raise UnexpectedOutput(f"'ip route get' names no usable device: {first_line(text)[:120]!r}")
    for value in (src, via):
        if value is not None:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise UnexpectedOutput(f"'ip route get': {value[:60]!r} is not an address") from None
    return RouteLookup(destination, dev, src, via)
