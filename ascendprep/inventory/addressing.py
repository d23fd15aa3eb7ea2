"""Device-IP planning: which IP, netmask, gateway and detect IP every NPU gets, and why.

Pure functions over an :class:`~ascendprep.inventory.load.Inventory`. The rules come from
``docs/ascend-reference.md`` §3:

* Atlas 800 (910): four subnets ("planes") per group. NPU i and i+4 share a plane, NPUs 0-3 are
  in four different planes, the same index on every server of a group is in the same plane, and
  addresses in one plane differ in their last 8 bits. The conventional layout (192.168.100-103.0/24;
  server s uses host .101+10s for NPUs 0-3 and .100+10s for NPUs 4-7) is used when it fits; beyond
  that a dense layout packs addresses from .1 upward.
* Atlas A2 (910B): all NPUs in one subnet is enough; a list of subnets is read as rails
  (NPU i in subnet i mod k). A gateway makes the fabric routed: every NPU gets it, and the detect
  IP defaults to it.
* Atlas A3: the two dies of one NPU (devids 2k, 2k+1) sit in two different subnets.
* Everywhere: no duplicate device IP in the cluster, nothing in 192.168.1.0/24 (the device vNIC),
  no device IP equal to or subnet containing a node's management address, the gateway inside the
  NPU's subnet, explicit overrides held to the same rules.

Routed fabrics split the cluster into address groups (:mod:`ascendprep.inventory.groups`): every leaf,
rack or pod has its own subnet and gateway per rail/plane. The rules above then hold inside each
group (the flat form is one group of every node), and the cluster-wide ones (no duplicate, no
overlap, management addresses) across all groups. A plane here is one subnet of one group.

Without a gateway the detect IP is a peer NPU of the same plane: the same index on the next node
of the group (so the probe crosses the real fabric), or on a single node another NPU of the plane.

Addresses are handled as integers internally: planning 32,768 NPUs stays well under a second.
"""

from __future__ import annotations

import bisect
import ipaddress
import math
import socket
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

from ascendprep.base.findings import Finding, Severity
from ascendprep.inventory.groups import FLAT, AddressGroup, flat_group, form_of
from ascendprep.inventory.load import Inventory
from ascendprep.inventory.model import Node
from ascendprep.inventory.products import RESERVED_VNIC_SUBNET, VNIC_SUBNET_950, SubnetRule

_VNIC = ipaddress.IPv4Network(RESERVED_VNIC_SUBNET)
_VNIC_LO, _VNIC_HI = int(_VNIC.network_address), int(_VNIC.broadcast_address)
_VNIC_950 = ipaddress.IPv4Network(VNIC_SUBNET_950)
#: Distinct last octets in one Atlas 800 plane: 1-254.
_OCTETS_PER_PLANE = 254


def _ip(value: int) -> str:
    """The dotted quad of ``value``, as ``str(IPv4Address(value))`` spells it, without building an
    address object (one per NPU); a value outside 0..2**32-1 raises OverflowError."""
    return socket.inet_ntoa(value.to_bytes(4, "big"))


@dataclass(frozen=True)
class Plane:
    """One device subnet of one address group (a rail or plane of it) and its optional gateway."""

    index: int
    network: ipaddress.IPv4Network
    gateway: Optional[ipaddress.IPv4Address]
    #: The address group (``IpPlan.groups``) and its rail/plane number inside it.
    group: int = 0
    rail: int = 0

    @property
    def netmask(self) -> str:
        return str(self.network.netmask)

    @property
    def first(self) -> int:
        return int(self.network.network_address)

    @property
    def last(self) -> int:
        return int(self.network.broadcast_address)

    def usable(self) -> tuple[int, int]:
        """Host addresses: network and broadcast excluded except on /31 and /32."""
        if self.network.prefixlen >= 31:
            return self.first, self.last
        return self.first + 1, self.last - 1


@dataclass(frozen=True)
class NpuAddress:
    """The planned device network settings of one NPU."""

    node: str
    npu: int
    ip: str
    netmask: str
    prefix: int
    gateway: Optional[str]
    detect: Optional[str]
    #: How the address was chosen: "conventional", "dense" or "explicit".
    source: str


@dataclass
class IpPlan:
    """Addresses per node (in NPU order), the layout used, and every rule finding."""

    planes: list[Plane]
    layout: str
    detect_policy: str
    by_node: dict[str, list[NpuAddress]]
    findings: list[Finding]
    #: The address groups; ``planes[g * plane_count + r]`` is rail/plane r of group g.
    groups: list[AddressGroup] = field(default_factory=list)
    plane_count: int = 0
    #: Per node name, its group's index.
    group_by_node: dict[str, int] = field(default_factory=dict)

    def address(self, node: str, npu: int) -> Optional[NpuAddress]:
        for entry in self.by_node.get(node, []):
            if entry.npu == npu:
                return entry
        return None

    def group_of(self, node: str) -> Optional[AddressGroup]:
        index = self.group_by_node.get(node)
        return None if index is None else self.groups[index]


# --------------------------------------------------------------------------------------------


def groups_of(inventory: Inventory) -> tuple[tuple[AddressGroup, ...], tuple[int, ...]]:
    """The inventory's address groups and each node's group (one group for the flat form)."""
    if inventory.address_groups:
        return inventory.address_groups, inventory.group_of
    return (flat_group(inventory.model.device_network, inventory.nodes),), (0,) * len(inventory.nodes)


def planes_of(inventory: Inventory) -> list[Plane]:
    """Every device subnet of the inventory (group by group, rail by rail) with its gateway."""
    groups, _ = groups_of(inventory)
    return [
        Plane(len(groups[0].subnets) * group.index + r, network, gateway, group.index, r)
        for group in groups
        for r, (network, gateway) in enumerate(zip(group.subnets, group.gateways))
    ]


def _where(plane: Plane, groups: Sequence[AddressGroup]) -> str:
    """ " (group leaf=l03)" for a grouped inventory, nothing for the flat form."""
    return f" (group {groups[plane.group].name})" if len(groups) > 1 else ""


def _plane_findings(planes: list[Plane], groups: Sequence[AddressGroup], inventory: Inventory) -> list[Finding]:
    findings = []
    for plane in planes:
        where = _where(plane, groups)
        if plane.network.overlaps(_VNIC):
            findings.append(
                _error(
                    "ipplan.vnic_subnet",
                    f"device subnet {plane.network}{where} overlaps {RESERVED_VNIC_SUBNET}, which is reserved for the device vNIC; hccn_tool refuses these addresses",
                    "choose device subnets outside 192.168.1.0/24",
                )
            )
        if inventory.product.is_950 and plane.network.overlaps(_VNIC_950):
            findings.append(
                _error(
                    "ipplan.vnic_subnet",
                    f"device subnet {plane.network}{where} overlaps {VNIC_SUBNET_950}, the Ascend 950 device vNIC's subnet (end0v0 192.168.2.199/24); the 950 driver refuses bond addresses there",
                    f"choose device subnets outside {RESERVED_VNIC_SUBNET} and {VNIC_SUBNET_950}",
                )
            )
        if plane.gateway is not None:
            gw = int(plane.gateway)
            low, high = plane.usable()
            if not low <= gw <= high:
                findings.append(
                    _error(
                        "ipplan.gateway_subnet",
                        f"gateway {plane.gateway} is not a host address of device subnet {plane.network}{where}",
                        f"use a gateway inside {plane.network} (hccn_tool rejects it: 'segment of configured gateway doesn't match')",
                    )
                )
    spans = sorted(planes, key=lambda p: (p.first, p.last))
    starts = [p.first for p in spans]
    reach: list[int] = []
    for p in spans:
        reach.append(max(p.last, reach[-1]) if reach else p.last)
    for node in inventory.nodes:
        mgmt = _mgmt_int(node)
        if mgmt is None:
            continue
        i = bisect.bisect_right(starts, mgmt) - 1
        while i >= 0 and reach[i] >= mgmt:
            plane = spans[i]
            if plane.last >= mgmt:
                findings.append(
                    _error(
                        "ipplan.mgmt_overlap",
                        f"device subnet {plane.network}{_where(plane, groups)} contains {node.name}'s management address {node.host}",
                        "keep the NPU fabric and the management network in separate subnets",
                        node=node.name,
                    )
                )
            i -= 1
    furthest: Optional[Plane] = None
    for plane in spans:
        if furthest is not None and plane.first <= furthest.last:
            findings.append(
                _error(
                    "ipplan.planes_overlap",
                    f"device subnets {furthest.network}{_where(furthest, groups)} and {plane.network}{_where(plane, groups)} overlap; each plane needs its own subnet",
                    "give every plane a distinct subnet",
                )
            )
        if furthest is None or plane.last > furthest.last:
            furthest = plane
    return findings


def _mgmt_int(node: Node) -> Optional[int]:
    try:
        return int(ipaddress.IPv4Address(node.host))
    except ValueError:
        return None


def _error(rule: str, message: str, fix: str, node: Optional[str] = None, npu: Optional[int] = None) -> Finding:
    return Finding(rule, Severity.ERROR, message, fix, node=node, npu=npu)


class _Allocator:
    """Hands out free host addresses of one plane, honouring reserved and taken addresses."""

    def __init__(self, plane: Plane, taken: set[int], distinct_last_octet: bool, taken_sorted: Sequence[int] = ()):
        self.plane = plane
        self.taken = taken
        self.low, self.high = plane.usable()
        self.next = self.low
        self.distinct_last_octet = distinct_last_octet and plane.network.prefixlen < 24
        self.octets_used: set[int] = set()
        if self.distinct_last_octet:
            # Only the taken addresses inside this plane (a thousand group planes must not each
            # scan every reserved address of the cluster).
            first, last = plane.first, plane.last
            start = bisect.bisect_left(taken_sorted, first)
            stop = bisect.bisect_right(taken_sorted, last)
            self.octets_used = {value & 0xFF for value in taken_sorted[start:stop]}

    def _ok(self, value: int) -> bool:
        if value in self.taken or _VNIC_LO <= value <= _VNIC_HI:
            return False
        if self.distinct_last_octet:
            octet = value & 0xFF
            return octet not in (0, 255) and octet not in self.octets_used
        return True

    def take(self) -> Optional[int]:
        while self.next <= self.high:
            value = self.next
            self.next += 1
            if self._ok(value):
                self.taken.add(value)
                self.octets_used.add(value & 0xFF)
                return value
        return None


def servers_per_910_plane(npus: int, gateway: bool) -> int:
    """Servers of ``npus`` NPUs that one Atlas 800 plane holds (last octets must differ)."""
    per_server = max(1, math.ceil(npus / 4))
    return (_OCTETS_PER_PLANE - (1 if gateway else 0)) // per_server


def _split_hint(inventory: Inventory, nodes: Sequence[Node], limit: int) -> str:
    """How to split ``nodes`` into groups of at most ``limit`` servers, in the user's terms."""
    groups_needed = math.ceil(len(nodes) / limit)
    keys = sorted({key for node in nodes for key in node.labels})
    for key in keys:
        sizes: dict[str, int] = {}
        if not all(key in node.labels for node in nodes):
            continue
        for node in nodes:
            sizes[node.labels[key]] = sizes.get(node.labels[key], 0) + 1
        if len(sizes) > 1 and max(sizes.values()) <= limit:
            subnets = len(sizes) * 4
            supernet = 24 - max(subnets - 1, 1).bit_length()
            return (
                f"split into groups: your '{key}' label makes {len(sizes)} groups of at most {max(sizes.values())} servers; "
                f"write device_network.rule {{supernet: <a /{supernet} or larger>, by: {key}, prefix: 24}} "
                f"(or device_network.groups with match: {{{key}: …}}), a gateway per group plane"
            )
    return (
        f"split into groups: at least {groups_needed} groups of at most {limit} servers each "
        "(device_network.groups with nodes: name ranges, or label the nodes by rack and use device_network.rule with by: rack), a gateway per group plane"
    )


def _capacity_message(
    inventory: Inventory, plane: Plane, groups: Sequence[AddressGroup], needed: int
) -> tuple[str, str]:
    product_rule = inventory.product.subnet_rule
    low, high = plane.usable()
    reserved = 1 if plane.gateway is not None else 0
    have = high - low + 1 - reserved
    prefix = 32 - math.ceil(math.log2(needed + reserved + 2))
    group = groups[plane.group]
    grouped = len(groups) > 1 or form_of(inventory.model.device_network) != FLAT
    if grouped:
        message = f"device subnet {plane.network} (group {group.name}, {'plane' if inventory.product.planes else 'rail'} {plane.rail}) holds {have} device addresses but the group's nodes need {needed} in it"
    else:
        message = f"device subnet {plane.network} holds {have} device addresses but the cluster needs {needed} in it"
    members = [inventory.nodes[i] for i in group.nodes]
    if product_rule is SubnetRule.FOUR_PLANES and needed > _OCTETS_PER_PLANE - reserved:
        limit = servers_per_910_plane(max(n.npus for n in members), plane.gateway is not None)
        rule = f"Atlas 800 addresses in one plane must differ in the last 8 bits, so a plane holds at most 254 NPUs ({limit} servers of {max(n.npus for n in members)} NPUs)"
        if grouped:
            return (
                message,
                f"{rule}: split group {group.name} ({len(members)} servers) into groups of at most {limit} servers",
            )
        return message, f"{rule}: {_split_hint(inventory, members, limit)}"
    if not grouped:
        return message, f"use a /{prefix} (or larger) for this plane"
    if group.where == "rule":
        return (
            message,
            f"set device_network.rule.prefix to {prefix} or less (a /{prefix} per group and rail), or split the group",
        )
    return message, f"give {group.where} a /{prefix} (or larger) for this subnet, or split the group"


def _conventional_offsets(node_position: int, npu: int) -> int:
    return (101 if npu < 4 else 100) + 10 * node_position


def _conventional_fits(
    inventory: Inventory, groups: Sequence[AddressGroup], planes: list[Plane], count: int, reserved: set[int]
) -> bool:
    product = inventory.product
    for group in groups:
        for position, index in enumerate(group.nodes):
            node = inventory.nodes[index]
            for npu in range(node.npus):
                if npu in node.device_ips:
                    continue
                plane = planes[group.index * count + product.plane_of(npu, count)]
                low, high = plane.usable()
                value = plane.first + _conventional_offsets(position, npu)
                if not low <= value <= high or value in reserved:
                    return False
    return True


def plan_device_ips(inventory: Inventory) -> IpPlan:
    """Plan every NPU's device IP, netmask, gateway and detect IP, and report every rule broken."""
    product = inventory.product
    groups, group_of = groups_of(inventory)
    planes = planes_of(inventory)
    count = len(groups[0].subnets)
    findings = _plane_findings(planes, groups, inventory)
    net = inventory.model.device_network
    detect_policy = net.detect or ("gateway" if any(p.gateway for p in planes) else "peer")

    def plane_for(node: Node, npu: int) -> Plane:
        return planes[group_of[node.index] * count + product.plane_of(npu, count)]

    reserved: set[int] = set()
    for plane in planes:
        if plane.gateway is not None:
            reserved.add(int(plane.gateway))
    mgmt_addresses = {m for m in (_mgmt_int(n) for n in inventory.nodes) if m is not None}
    reserved |= mgmt_addresses

    chosen: dict[tuple[int, int], tuple[int, str]] = {}
    owner: dict[int, tuple[str, int]] = {}
    # Explicit overrides first: they are held to the same rules and never moved.
    for node in inventory.nodes:
        for npu, address in sorted(node.device_ips.items()):
            value = int(address)
            plane = plane_for(node, npu)
            rule_broken = _override_problem(value, plane, count, product.subnet_rule, reserved, mgmt_addresses, owner)
            if rule_broken:
                rule, message, fix = rule_broken
                findings.append(
                    _error(
                        rule,
                        f"{node.name} NPU {npu}: device_ips override {address} {message}",
                        fix,
                        node=node.name,
                        npu=npu,
                    )
                )
            owner.setdefault(value, (node.name, npu))
            chosen[(node.index, npu)] = (value, "explicit")

    taken = reserved | set(owner)
    layout = net.layout
    if product.subnet_rule is SubnetRule.FOUR_PLANES and layout in ("auto", "conventional"):
        if _conventional_fits(inventory, groups, planes, count, taken):
            layout = "conventional"
        elif layout == "conventional":
            findings.append(
                _error(
                    "ipplan.layout",
                    "the conventional layout (.101/.100 + 10 per server) does not fit these subnets or collides with reserved addresses",
                    "set device_network.layout: dense or auto",
                )
            )
            layout = "dense"
        else:
            layout = "dense"
    elif layout == "auto":
        layout = "dense"

    if layout == "conventional":
        for group in groups:
            for position, index in enumerate(group.nodes):
                node = inventory.nodes[index]
                for npu in range(node.npus):
                    if (node.index, npu) in chosen:
                        continue
                    value = plane_for(node, npu).first + _conventional_offsets(position, npu)
                    chosen[(node.index, npu)] = (value, "conventional")
                    owner[value] = (node.name, npu)
    else:
        taken_sorted = sorted(taken)
        allocators = [_Allocator(p, taken, product.subnet_rule is SubnetRule.FOUR_PLANES, taken_sorted) for p in planes]
        needed = [0] * len(planes)
        for node in inventory.nodes:
            for npu in range(node.npus):
                if (node.index, npu) not in chosen:
                    needed[plane_for(node, npu).index] += 1
        short: set[int] = set()
        for node in inventory.nodes:
            for npu in range(node.npus):
                if (node.index, npu) in chosen:
                    continue
                plane_index = plane_for(node, npu).index
                if plane_index in short:
                    continue
                free = allocators[plane_index].take()
                if free is None:
                    short.add(plane_index)
                    message, fix = _capacity_message(inventory, planes[plane_index], groups, needed[plane_index])
                    findings.append(_error("ipplan.capacity", message, fix))
                    continue
                chosen[(node.index, npu)] = (free, "dense")
                owner[free] = (node.name, npu)

    by_node = _assemble(inventory, groups, group_of, planes, count, chosen, detect_policy, findings)
    group_by_node = {node.name: group_of[node.index] for node in inventory.nodes}
    return IpPlan(
        planes=planes,
        layout=layout,
        detect_policy=detect_policy,
        by_node=by_node,
        findings=findings,
        groups=list(groups),
        plane_count=count,
        group_by_node=group_by_node,
    )


def _override_problem(
    value: int,
    plane: Plane,
    count: int,
    rule: SubnetRule,
    reserved: set[int],
    mgmt: set[int],
    owner: dict[int, tuple[str, int]],
) -> Optional[tuple[str, str, str]]:
    if _VNIC_LO <= value <= _VNIC_HI:
        return (
            "ipplan.vnic_subnet",
            f"is inside {RESERVED_VNIC_SUBNET} (reserved for the device vNIC)",
            "choose an address outside 192.168.1.0/24",
        )
    if not plane.first <= value <= plane.last:
        where = "the same-index plane" if rule is not SubnetRule.POOL or count > 1 else "the device subnet"
        return (
            "ipplan.wrong_plane",
            f"is not in {plane.network}, {where} for this NPU",
            f"use an address inside {plane.network}",
        )
    low, high = plane.usable()
    if not low <= value <= high:
        return (
            "ipplan.reserved_address",
            f"is the network or broadcast address of {plane.network}",
            "use a host address",
        )
    if value in mgmt:
        return (
            "ipplan.mgmt_overlap",
            "is a node's management address",
            "use an address of the device subnet that no host uses",
        )
    if value in reserved:
        return "ipplan.gateway_conflict", "is the gateway address", "use another address"
    if value in owner:
        node, npu = owner[value]
        return "ipplan.duplicate", f"is already {node} NPU {npu}'s address", "give every NPU a unique address"
    if rule is SubnetRule.FOUR_PLANES and plane.network.prefixlen < 24:
        octet = value & 0xFF
        for other, (node, npu) in owner.items():
            if plane.first <= other <= plane.last and other & 0xFF == octet:
                return (
                    "ipplan.last_octet",
                    f"has the same last 8 bits as {node} NPU {npu}'s address in the same subnet",
                    "make addresses in one subnet differ in the last octet",
                )
    return None


def _peer_candidates(
    inventory: Inventory, group: AddressGroup, position: int, node: Node, npu: int, count: int
) -> Iterator[tuple[Node, int]]:
    """Same index on the following nodes of the group (wrapping), then same-plane NPUs on this
    node (lazily): a peer in another group's subnet is not reachable without a gateway."""
    members = group.nodes
    size = len(members)
    for step in range(1, size):
        other_node = inventory.nodes[members[(position + step) % size]]
        if npu < other_node.npus:
            yield other_node, npu
    product = inventory.product
    plane = product.plane_of(npu, count)
    for other in range(1, node.npus):
        candidate = (npu + other) % node.npus
        if product.plane_of(candidate, count) == plane:
            yield node, candidate


def _assemble(
    inventory: Inventory,
    groups: Sequence[AddressGroup],
    group_of: Sequence[int],
    planes: list[Plane],
    count: int,
    chosen: dict[tuple[int, int], tuple[int, str]],
    detect_policy: str,
    findings: list[Finding],
) -> dict[str, list[NpuAddress]]:
    product = inventory.product
    by_node: dict[str, list[NpuAddress]] = {}
    ip_text: dict[tuple[int, int], str] = {key: _ip(value) for key, (value, _) in chosen.items()}
    gateway_text = [str(p.gateway) if p.gateway is not None else None for p in planes]
    netmask_text = [p.netmask for p in planes]
    position_in_group = [0] * len(inventory.nodes)
    for group in groups:
        for position, index in enumerate(group.nodes):
            position_in_group[index] = position
    for node in inventory.nodes:
        entries = []
        base = group_of[node.index] * count
        for npu in range(node.npus):
            key = (node.index, npu)
            if key not in chosen:
                continue
            plane = planes[base + product.plane_of(npu, count)]
            gateway = gateway_text[plane.index]
            if detect_policy == "gateway" and gateway is not None:
                detect: Optional[str] = gateway
            else:
                detect = _detect_for(
                    inventory,
                    groups[group_of[node.index]],
                    position_in_group[node.index],
                    node,
                    npu,
                    plane,
                    count,
                    gateway,
                    detect_policy,
                    ip_text,
                    findings,
                )
            entries.append(
                NpuAddress(
                    node.name,
                    npu,
                    ip_text[key],
                    netmask_text[plane.index],
                    plane.network.prefixlen,
                    gateway,
                    detect,
                    chosen[key][1],
                )
            )
        by_node[node.name] = entries
    return by_node


def _detect_for(
    inventory: Inventory,
    group: AddressGroup,
    position: int,
    node: Node,
    npu: int,
    plane: Plane,
    count: int,
    gateway: Optional[str],
    policy: str,
    ip_text: dict[tuple[int, int], str],
    findings: list[Finding],
) -> Optional[str]:
    if policy == "explicit":
        address = node.detect_ips.get(npu)
        if address is None:
            return None
        if not plane.first <= int(address) <= plane.last and gateway is None:
            findings.append(
                Finding(
                    "ipplan.detect_unreachable",
                    Severity.ERROR,
                    f"{node.name} NPU {npu}: detect IP {address} is outside {plane.network} and there is no gateway to reach it",
                    "use a detect IP inside the NPU's subnet or configure a gateway",
                    node=node.name,
                    npu=npu,
                )
            )
        return str(address)
    if policy == "gateway" and gateway is not None:
        return gateway
    for peer_node, peer_npu in _peer_candidates(inventory, group, position, node, npu, count):
        text = ip_text.get((peer_node.index, peer_npu))
        if text is not None:
            return text
    findings.append(
        Finding(
            "ipplan.no_peer",
            Severity.WARNING,
            f"{node.name} NPU {npu} has no peer NPU in its subnet to use as detect IP; net_health will stay 'Init'",
            "add a gateway (detect: gateway) or a node with a same-plane NPU",
            node=node.name,
            npu=npu,
        )
    )
    return None
