"""Host NIC addresses (``ip -o addr``) and what the hostname resolves to (``getent ahosts``).

Why: gloo, NCCL and HCCL find "their" address by looking up the host's own name. Where that
name resolves to loopback (Debian's ``127.0.1.1 <hostname>`` line) or not at all, every rank
advertises 127.0.0.1 and the ranks never meet. These facts let ascendprep name that trap
(the ``node.hostname`` check) and bind the sockets to the interface that holds the node's
inventory address instead (:func:`interface_holding`).

Pure parsers: text that is not what the tools print raises :class:`UnexpectedOutput`.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from typing import Iterable, List, Optional, Sequence, Tuple

from ascendprep.base.limits import MAX_HOST_ADDRESSES
from ascendprep.facts.model import InterfaceAddress
from ascendprep.facts.text import UnexpectedOutput, content_lines, first_line

#: An interface name as the kernel allows it (IFNAMSIZ 16 with the NUL) and a shell can carry.
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
#: ``getent`` exits 2 when the name is not found (not an error: the fact is "does not resolve").
GETENT_NOT_FOUND_RC = 2
_FAMILIES = ("inet", "inet6")


def parse_ip_addr(text: str) -> Tuple[InterfaceAddress, ...]:
    """``ip -o addr`` → every (interface, address); other families (link) are skipped.

    A line reads ``2: eth0    inet 10.0.0.11/24 brd ... scope global eth0\\ valid_lft ...``; a
    veth may be named ``eth0@if5`` (the peer after ``@`` is not part of the name).
    """
    found: List[InterfaceAddress] = []
    for line in content_lines(text):
        words = line.split()
        if len(words) < 4 or not words[0].endswith(":"):
            raise UnexpectedOutput(f"not an 'ip -o addr' line: {line[:120]!r}")
        family = words[2]
        if family not in _FAMILIES:
            continue
        ifname = words[1].split("@", 1)[0]
        if not IFNAME_RE.match(ifname):
            raise UnexpectedOutput(f"interface name {ifname[:40]!r} has characters an interface name cannot have")
        address, prefixlen = _address_prefix(words[3], ifname)
        found.append(InterfaceAddress(sys.intern(ifname), sys.intern(family), address, prefixlen))
        if len(found) > MAX_HOST_ADDRESSES:
            raise UnexpectedOutput(f"more than {MAX_HOST_ADDRESSES} interface addresses")
    return tuple(found)


def _address_prefix(text: str, ifname: str) -> Tuple[str, int]:
    """``10.0.0.11/24`` → ("10.0.0.11", 24), as :func:`ipaddress.ip_interface` reads it."""
    try:
        network = ipaddress.ip_interface(text)
    except ValueError:
        raise UnexpectedOutput(f"{text[:60]!r} is not an address/prefix ({ifname})") from None
    return str(network.ip), network.network.prefixlen


def parse_getent_ahosts(text: str) -> Tuple[str, ...]:
    """``getent ahosts NAME`` → the distinct addresses in getaddrinfo's order (the first wins)."""
    addresses: List[str] = []
    for line in content_lines(text):
        word = line.split()[0]
        try:
            address = str(ipaddress.ip_address(word))
        except ValueError:
            raise UnexpectedOutput(f"not a 'getent ahosts' line: {first_line(line)[:120]!r}") from None
        if address not in addresses:
            addresses.append(address)
        if len(addresses) > MAX_HOST_ADDRESSES:
            raise UnexpectedOutput(f"more than {MAX_HOST_ADDRESSES} addresses for one name")
    return tuple(addresses)


def is_loopback(address: str) -> bool:
    """127.0.0.0/8 (Debian's 127.0.1.1 included) and ::1."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


_HOSTNAME_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def is_hostname(name: str) -> bool:
    """An RFC 1123 host name (what the inventory accepts as a node's host), not an IPv4 address:
    safe as a script argument and a section attribute (no leading ``-``, no spaces or quotes)."""
    labels = name[:-1].split(".") if name.endswith(".") else name.split(".")
    return (
        len(name) <= 253
        and ip_literal(name) is None
        and not name.replace(".", "").isdigit()
        and all(_HOSTNAME_LABEL.fullmatch(label) for label in labels)
    )


def ip_literal(host: str) -> Optional[str]:
    """``host`` normalised when it is an IPv4 address, None when it is a name."""
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return None


def interface_holding(address: str, addresses: Iterable[InterfaceAddress]) -> Optional[str]:
    """The interface that holds ``address`` (None when no interface does, or it is loopback).

    Binding to ``lo`` would be the very trap this is for, so a loopback holder never counts.
    """
    wanted = ip_literal(address) or address
    for item in addresses:
        if item.address == wanted and not is_loopback(item.address):
            return item.ifname
    return None


def held_by(addresses: Sequence[InterfaceAddress]) -> Tuple[str, ...]:
    """Every address the host holds, for "is this address one of mine?"."""
    return tuple(item.address for item in addresses)
