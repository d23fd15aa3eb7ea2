"""Device-IP planning: which IP, netmask, gateway and detect IP every NPU gets, and why.

Pure functions over an :class:`~ascendprep.inventory.Inventory`. The rules come from
``docs/ascend-reference.md`` §3:

* Atlas 800 (910): four subnets ("planes") per cluster. NPU i and i+4 share a plane, NPUs 0-3 are
  in four different planes, the same index on every server is in the same plane, and addresses in
  one plane differ in their last 8 bits. The conventional layout (192.168.100-103.0/24; server s
  uses host .101+10s for NPUs 0-3 and .100+10s for NPUs 4-7) is used when it fits; beyond that a
  dense layout packs addresses from .1 upward.
* Atlas A2 (910B): all NPUs in one subnet is enough; a list of subnets is read as rails
  (NPU i in subnet i mod k). A gateway makes the fabric routed: every NPU gets it, and the detect
  IP defaults to it.
* Atlas A3: the two dies of one NPU (devids 2k, 2k+1) sit in two different subnets.
* Everywhere: no duplicate device IP in the cluster, nothing in 192.168.1.0/24 (the device vNIC),
  no device IP equal to or subnet containing a node's management address, the gateway inside the
  NPU's subnet, explicit overrides held to the same rules.

Without a gateway the detect IP is a peer NPU: the same index on the next node (so the probe
crosses the real fabric), or on a single node another NPU of the same plane.

Addresses are handled as integers internally: planning 32,768 NPUs stays well under a second.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Iterator, Optional

from ascendprep.findings import Finding, Severity
from ascendprep.inventory import Inventory, Node
from ascendprep.products import CONVENTIONAL_910_SUBNETS, RESERVED_VNIC_SUBNET, SubnetRule

_VNIC = ipaddress.IPv4Network(RESERVED_VNIC_SUBNET)
_VNIC_LO, _VNIC_HI = int(_VNIC.network_address), int(_VNIC.broadcast_address)


def _ip(value: int) -> str:
    return str(ipaddress.IPv4Address(value))


@dataclass(frozen=True)
class Plane:
    """One device subnet and its optional gateway."""

    index: int
    network: ipaddress.IPv4Network
    gateway: Optional[ipaddress.IPv4Address]

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

    def address(self, node: str, npu: int) -> Optional[NpuAddress]:
        for entry in self.by_node.get(node, []):
            if entry.npu == npu:
                return entry
        return None


# --------------------------------------------------------------------------------------------


def planes_of(inventory: Inventory) -> list[Plane]:
    """The device subnets of the inventory, with the gateway each one uses."""
    net = inventory.model.device_network
    if net.subnets:
        networks = list(net.subnets)
    elif net.subnet is not None:
        networks = [net.subnet]
    else:
        networks = [ipaddress.IPv4Network(s) for s in CONVENTIONAL_910_SUBNETS]
    if net.gateways is not None:
        gateways: list[Optional[ipaddress.IPv4Address]] = list(net.gateways)
    else:
        gateways = [net.gateway] * len(networks)
    return [Plane(i, network, gateways[i] if i < len(gateways) else None) for i, network in enumerate(networks)]


def _plane_findings(planes: list[Plane], inventory: Inventory) -> list[Finding]:
    findings = []
    for plane in planes:
        if plane.network.overlaps(_VNIC):
            findings.append(_error("ipplan.vnic_subnet", f"device subnet {plane.network} overlaps {RESERVED_VNIC_SUBNET}, which is reserved for the device vNIC; hccn_tool refuses these addresses", "choose device subnets outside 192.168.1.0/24"))
        if plane.gateway is not None:
            gw = int(plane.gateway)
            low, high = plane.usable()
            if not low <= gw <= high:
                findings.append(_error("ipplan.gateway_subnet", f"gateway {plane.gateway} is not a host address of device subnet {plane.network}", f"use a gateway inside {plane.network} (hccn_tool rejects it: 'segment of configured gateway doesn't match')"))
        for node in inventory.nodes:
            mgmt = _mgmt_int(node)
            if mgmt is not None and plane.first <= mgmt <= plane.last:
                findings.append(_error("ipplan.mgmt_overlap", f"device subnet {plane.network} contains {node.name}'s management address {node.host}", "keep the NPU fabric and the management network in separate subnets", node=node.name))
    for i, a in enumerate(planes):
        for b in planes[i + 1 :]:
            if a.network.overlaps(b.network):
                findings.append(_error("ipplan.planes_overlap", f"device subnets {a.network} and {b.network} overlap; each plane needs its own subnet", "give every plane a distinct subnet"))
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

    def __init__(self, plane: Plane, taken: set[int], distinct_last_octet: bool):
        self.plane = plane
        self.taken = taken
        self.low, self.high = plane.usable()
        self.next = self.low
        self.distinct_last_octet = distinct_last_octet and plane.network.prefixlen < 24
        self.octets_used = {value & 0xFF for value in taken if plane.first <= value <= plane.last}

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


def _capacity_message(plane: Plane, needed: int, product_rule: SubnetRule) -> tuple[str, str]:
    low, high = plane.usable()
    reserved = 1 if plane.gateway is not None else 0
    have = high - low + 1 - reserved
    prefix = 32 - math.ceil(math.log2(needed + reserved + 2))
    message = f"device subnet {plane.network} holds {have} device addresses but the cluster needs {needed} in it"
    if product_rule is SubnetRule.FOUR_PLANES and needed > 254:
        return message, "Atlas 800 addresses in one subnet must differ in the last 8 bits, so a plane holds at most 254 NPUs: split the cluster or use a routed (gateway) design per group"
    return message, f"use a /{prefix} (or larger) for this plane"


def _conventional_offsets(node_position: int, npu: int) -> int:
    return (101 if npu < 4 else 100) + 10 * node_position


def _conventional_fits(inventory: Inventory, planes: list[Plane], reserved: set[int]) -> bool:
    for plane in planes:
        low, high = plane.usable()
        for position, node in enumerate(inventory.nodes):
            for npu in range(node.npus):
                if inventory.product.plane_of(npu, len(planes)) != plane.index or npu in node.device_ips:
                    continue
                value = plane.first + _conventional_offsets(position, npu)
                if not low <= value <= high or value in reserved:
                    return False
    return True


def plan_device_ips(inventory: Inventory) -> IpPlan:
    """Plan every NPU's device IP, netmask, gateway and detect IP, and report every rule broken."""
    product = inventory.product
    planes = planes_of(inventory)
    findings = _plane_findings(planes, inventory)
    net = inventory.model.device_network
    detect_policy = net.detect or ("gateway" if any(p.gateway for p in planes) else "peer")

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
            plane = planes[product.plane_of(npu, len(planes))]
            rule_broken = _override_problem(value, plane, planes, product.subnet_rule, reserved, mgmt_addresses, owner)
            if rule_broken:
                rule, message, fix = rule_broken
                findings.append(_error(rule, f"{node.name} NPU {npu}: device_ips override {address} {message}", fix, node=node.name, npu=npu))
            owner.setdefault(value, (node.name, npu))
            chosen[(node.index, npu)] = (value, "explicit")

    taken = reserved | set(owner)
    layout = net.layout
    if product.subnet_rule is SubnetRule.FOUR_PLANES and layout in ("auto", "conventional"):
        if _conventional_fits(inventory, planes, taken):
            layout = "conventional"
        elif layout == "conventional":
            findings.append(_error("ipplan.layout", "the conventional layout (.101/.100 + 10 per server) does not fit these subnets or collides with reserved addresses", "set device_network.layout: dense or auto"))
            layout = "dense"
        else:
            layout = "dense"
    elif layout == "auto":
        layout = "dense"

    if layout == "conventional":
        for position, node in enumerate(inventory.nodes):
            for npu in range(node.npus):
                if (node.index, npu) in chosen:
                    continue
                plane = planes[product.plane_of(npu, len(planes))]
                value = plane.first + _conventional_offsets(position, npu)
                chosen[(node.index, npu)] = (value, "conventional")
                owner[value] = (node.name, npu)
    else:
        allocators = [_Allocator(p, taken, product.subnet_rule is SubnetRule.FOUR_PLANES) for p in planes]
        needed = [0] * len(planes)
        for node in inventory.nodes:
            for npu in range(node.npus):
                if (node.index, npu) not in chosen:
                    needed[product.plane_of(npu, len(planes))] += 1
        short = set()
        for node in inventory.nodes:
            for npu in range(node.npus):
                if (node.index, npu) in chosen:
                    continue
                plane_index = product.plane_of(npu, len(planes))
                if plane_index in short:
                    continue
                value = allocators[plane_index].take()
                if value is None:
                    short.add(plane_index)
                    message, fix = _capacity_message(planes[plane_index], needed[plane_index], product.subnet_rule)
                    findings.append(_error("ipplan.capacity", message, fix))
                    continue
                chosen[(node.index, npu)] = (value, "dense")
                owner[value] = (node.name, npu)

    by_node = _assemble(inventory, planes, chosen, detect_policy, findings)
    return IpPlan(planes=planes, layout=layout, detect_policy=detect_policy, by_node=by_node, findings=findings)


def _override_problem(value: int, plane: Plane, planes: list[Plane], rule: SubnetRule, reserved: set[int], mgmt: set[int], owner: dict[int, tuple[str, int]]) -> Optional[tuple[str, str, str]]:
    if _VNIC_LO <= value <= _VNIC_HI:
        return "ipplan.vnic_subnet", f"is inside {RESERVED_VNIC_SUBNET} (reserved for the device vNIC)", "choose an address outside 192.168.1.0/24"
    if not plane.first <= value <= plane.last:
        where = "the same-index plane" if rule is not SubnetRule.POOL or len(planes) > 1 else "the device subnet"
        return "ipplan.wrong_plane", f"is not in {plane.network}, {where} for this NPU", f"use an address inside {plane.network}"
    low, high = plane.usable()
    if not low <= value <= high:
        return "ipplan.reserved_address", f"is the network or broadcast address of {plane.network}", "use a host address"
    if value in mgmt:
        return "ipplan.mgmt_overlap", "is a node's management address", "use an address of the device subnet that no host uses"
    if value in reserved:
        return "ipplan.gateway_conflict", "is the gateway address", "use another address"
    if value in owner:
        node, npu = owner[value]
        return "ipplan.duplicate", f"is already {node} NPU {npu}'s address", "give every NPU a unique address"
    if rule is SubnetRule.FOUR_PLANES and plane.network.prefixlen < 24:
        octet = value & 0xFF
        for other, (node, npu) in owner.items():
            if plane.first <= other <= plane.last and other & 0xFF == octet:
                return "ipplan.last_octet", f"has the same last 8 bits as {node} NPU {npu}'s address in the same subnet", "make addresses in one subnet differ in the last octet"
    return None


def _peer_candidates(inventory: Inventory, node: Node, npu: int, plane_index: int, plane_count: int) -> Iterator[tuple[Node, int]]:
    """Same index on the following nodes (wrapping), then same-plane NPUs on this node (lazily)."""
    nodes = inventory.nodes
    count = len(nodes)
    for step in range(1, count):
        other_node = nodes[(node.index + step) % count]
        if npu < other_node.npus:
            yield other_node, npu
    product = inventory.product
    for other in range(1, node.npus):
        candidate = (npu + other) % node.npus
        if product.plane_of(candidate, plane_count) == plane_index:
            yield node, candidate


def _assemble(inventory: Inventory, planes: list[Plane], chosen: dict[tuple[int, int], tuple[int, str]], detect_policy: str, findings: list[Finding]) -> dict[str, list[NpuAddress]]:
    product = inventory.product
    by_node: dict[str, list[NpuAddress]] = {}
    ip_text: dict[tuple[int, int], str] = {key: _ip(value) for key, (value, _) in chosen.items()}
    for node in inventory.nodes:
        entries = []
        for npu in range(node.npus):
            if (node.index, npu) not in chosen:
                continue
            value, source = chosen[(node.index, npu)]
            plane_index = product.plane_of(npu, len(planes))
            plane = planes[plane_index]
            gateway = str(plane.gateway) if plane.gateway is not None else None
            detect = _detect_for(inventory, node, npu, plane_index, planes, gateway, detect_policy, ip_text, findings)
            entries.append(NpuAddress(node.name, npu, ip_text[(node.index, npu)], plane.netmask, plane.network.prefixlen, gateway, detect, source))
        by_node[node.name] = entries
    return by_node


def _detect_for(inventory: Inventory, node: Node, npu: int, plane_index: int, planes: list[Plane], gateway: Optional[str], policy: str, ip_text: dict[tuple[int, int], str], findings: list[Finding]) -> Optional[str]:
    if policy == "explicit":
        address = node.detect_ips.get(npu)
        if address is None:
            return None
        plane = planes[plane_index]
        if not plane.first <= int(address) <= plane.last and gateway is None:
            findings.append(Finding("ipplan.detect_unreachable", Severity.ERROR, f"{node.name} NPU {npu}: detect IP {address} is outside {plane.network} and there is no gateway to reach it", "use a detect IP inside the NPU's subnet or configure a gateway", node=node.name, npu=npu))
        return str(address)
    if policy == "gateway" and gateway is not None:
        return gateway
    for peer_node, peer_npu in _peer_candidates(inventory, node, npu, plane_index, len(planes)):
        text = ip_text.get((peer_node.index, peer_npu))
        if text is not None:
            return text
    findings.append(Finding("ipplan.no_peer", Severity.WARNING, f"{node.name} NPU {npu} has no peer NPU in its subnet to use as detect IP; net_health will stay 'Init'", "add a gateway (detect: gateway) or a node with a same-plane NPU", node=node.name, npu=npu))
    return None
