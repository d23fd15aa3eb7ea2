"""The most compact inventory that reproduces exactly what is there, and the proof that it does.

From a :class:`~ascendprep.adopt.seen.Seen` the compactor finds, in this order:

* the product and the NPU count (the fleet's most common count; other servers get ``npus:``);
* the subnets: one per rail (A2: NPU i on rail i mod k, the smallest k that fits every server),
  one per plane (Atlas 800: four, NPU i and i+4 together; A3: two, one per die), and the
  groups of servers that share them (a leaf or rack of a routed fabric has its own subnets and
  gateways). One group is the flat form; groups laid out one after another in a supernet, with
  the gateway first or last in each subnet, are a ``rule:``; anything else is explicit
  ``groups:`` (docs/inventory.md, "device network");
* the device IPs the planner gives (:func:`ascendprep.inventory.addressing.plan_device_ips`:
  Atlas 800's conventional layout, else addresses packed from the bottom of each subnet, in node
  order); a server whose addresses are not those gets explicit ``device_ips`` and is named in a
  comment "off the pattern";
* the detect IPs: the gateway, or the peer NPU the planner picks, else ``detect: explicit``;
* the software versions most servers run (the others named in comments);
* with ``adopt``, the host settings as the hosts have them (:mod:`~ascendprep.adopt.settings`).

The round trip is the proof, checked before anything is emitted: the inventory text is loaded
with the same loader ``plan`` uses and planned, and every address, netmask, gateway and detect
IP a source stated must come back. A server the plan still places elsewhere is made explicit
and the plan run again (:data:`~ascendprep.base.limits.IMPORT_ROUND_TRIP_TRIES` times); what
no inventory can say (two gateways in one subnet, a duplicate address) is a conflict, reported
in the output and in the result, never hidden.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import yaml

from ascendprep.adopt.seen import VERSION_KEYS, Conflict, NodeSeen, NpuSeen, Seen
from ascendprep.adopt.settings import Adopted, adopt_settings
from ascendprep.base import hostrange
from ascendprep.base.limits import IMPORT_ROUND_TRIP_TRIES
from ascendprep.base.text import visible
from ascendprep.base.yamlsource import InputError, YamlDocument
from ascendprep.desired.ranktable import build_rank_table
from ascendprep.inventory.addressing import IpPlan, plan_device_ips
from ascendprep.inventory.load import Inventory, inventory_from_document, inventory_from_text
from ascendprep.inventory.model import NAME_RE, VERSION_TEXT_RE
from ascendprep.inventory.products import PRODUCTS, RESERVED_VNIC_SUBNET, Product, SubnetRule

Net = ipaddress.IPv4Network
_VNIC = ipaddress.IPv4Network(RESERVED_VNIC_SUBNET)
#: The node label a ``rule:`` groups by, when the import finds groups.
GROUP_LABEL = "group"


class RoundTripError(AssertionError):
    """The emitted inventory does not give back what was read: a bug of the compactor."""


@dataclass(frozen=True)
class SshSettings:
    """What ``--user``, ``--key`` and ``--known-hosts`` say, written into the inventory's ``ssh:``."""

    user: Optional[str] = None
    key: Optional[str] = None
    known_hosts: Optional[str] = None


@dataclass
class Imported:
    """The inventory text, the loaded inventory it is, and what the import has to say."""

    text: str
    inventory: Optional[Inventory]
    off_pattern: list[str]
    conflicts: list[Conflict]
    unreachable: dict[str, str]
    form: str
    layout: str

    @property
    def complete(self) -> bool:
        """Every host read and everything that was read reproduced."""
        return not self.unreachable and not any(c.error for c in self.conflicts) and self.inventory is not None


@dataclass
class _Group:
    nets: list[Optional[Net]]
    gateways: list[Optional[str]]
    members: list[int] = field(default_factory=list)


@dataclass
class _Node:
    seen: NodeSeen
    npus: int
    group: int = 0
    explicit: bool = False


# --- subnets and groups -----------------------------------------------------------------------------


def _plane(product: Product, devid: int, count: int) -> int:
    return product.plane_of(devid, count)


def _nets_by_plane(node: NodeSeen, product: Product, count: int) -> dict[int, set[Net]]:
    planes: dict[int, set[Net]] = {}
    for devid, npu in node.npus.items():
        network = npu.network
        if network is not None:
            planes.setdefault(_plane(product, devid, count), set()).add(network)
    return planes


def _fits(node: NodeSeen, product: Product, count: int) -> bool:
    """Whether the node's NPUs sit one subnet per plane, each plane's subnet apart from the others."""
    planes = _nets_by_plane(node, product, count)
    if any(len(nets) > 1 for nets in planes.values()):
        return False
    nets = [next(iter(n)) for n in planes.values()]
    return all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def rail_count(seen_nodes: Sequence[NodeSeen], product: Product) -> int:
    """Subnets per group: the product's planes, or (A2) the fewest rails every server fits."""
    if product.planes:
        return product.planes
    most = max((len(n.npus) for n in seen_nodes), default=1)
    for count in range(1, max(most, 1) + 1):
        if all(_fits(node, product, count) for node in seen_nodes):
            return count
    return 1


def _covering(addresses: Sequence[int]) -> Net:
    """The smallest subnet whose host addresses hold every address (network and broadcast left free)."""
    low, high = min(addresses), max(addresses)
    for prefix in range(30, 0, -1):
        net = ipaddress.IPv4Network((low >> (32 - prefix) << (32 - prefix), prefix))
        first, last = int(net.network_address), int(net.broadcast_address)
        if first < low and high < last:
            return net
    return ipaddress.IPv4Network("0.0.0.0/0")


def _fill_unknown_netmasks(seen: Seen, product: Product, count: int, conflicts: list[Conflict]) -> list[NodeSeen]:
    """When no source states a netmask (a rank table alone), each plane gets the smallest subnet
    holding its addresses; said so, since hccn_tool's netmask may be wider."""
    if any(npu.netmask is not None for node in seen.nodes for npu in node.npus.values()):
        return seen.nodes
    by_plane: dict[int, list[int]] = {}
    for node in seen.nodes:
        for devid, npu in node.npus.items():
            if npu.ip is not None:
                by_plane.setdefault(_plane(product, devid, count), []).append(int(ipaddress.IPv4Address(npu.ip)))
    masks = {plane: str(_covering(values).netmask) for plane, values in by_plane.items()}
    if masks:
        conflicts.append(
            Conflict(
                "netmask_guessed",
                "no source states the netmasks: each subnet is the smallest holding its addresses; "
                "check them against hccn_tool -i N -ip -g (or import with --hosts too)",
                error=False,
            )
        )
    return [
        _with_npus(
            node,
            {
                devid: NpuSeen(
                    devid, npu.ip, masks.get(_plane(product, devid, count)), npu.gateway, npu.detect, npu.said
                )
                for devid, npu in node.npus.items()
            },
        )
        for node in seen.nodes
    ]


def _with_npus(node: NodeSeen, npus: dict[int, NpuSeen]) -> NodeSeen:
    return replace(node, npus=npus)


def _signature(
    node: NodeSeen, product: Product, count: int, conflicts: list[Conflict]
) -> tuple[list[Optional[Net]], list[Optional[str]]]:
    nets: list[Optional[Net]] = [None] * count
    gateways: list[Optional[str]] = [None] * count
    for plane in range(count):
        npus = [npu for devid, npu in node.npus.items() if _plane(product, devid, count) == plane]
        found = {npu.network for npu in npus if npu.network is not None}
        if len(found) == 1:
            nets[plane] = found.pop()
        said = Counter(npu.gateway for npu in npus if "gateway" in npu.said)
        if len(said) > 1:
            conflicts.append(
                Conflict(
                    "gateway",
                    f"{node.name}: NPUs of one subnet have different gateways ({', '.join(str(g) for g in said)}); "
                    "an inventory gives one gateway per subnet: the most common is imported",
                    node.name,
                )
            )
        if said:
            gateways[plane] = said.most_common(1)[0][0]
    return nets, gateways


def _group_nodes(
    nodes: list[_Node], product: Product, count: int, conflicts: list[Conflict]
) -> tuple[list[_Group], list[_Node]]:
    """Servers that share subnets (and gateways) form a group; a server whose subnets overlap
    another group's without being the same cannot be described and is left out (a conflict)."""
    groups: list[_Group] = []
    kept: list[_Node] = []
    for node in nodes:
        nets, gateways = _signature(node.seen, product, count, conflicts)
        if all(n is None for n in nets):
            conflicts.append(
                Conflict("no_address", f"{node.seen.name}: no NPU address known; not imported", node.seen.name)
            )
            continue
        match = None
        for index, group in enumerate(groups):
            if all(n is None or g is None or n == g for n, g in zip(nets, group.nets)) and any(
                n is not None and n == g for n, g in zip(nets, group.nets)
            ):
                match = index
                break
        if match is None:
            clash = _overlap(nets, groups)
            if clash is not None:
                conflicts.append(
                    Conflict(
                        "subnet_overlap",
                        f"{node.seen.name}: subnet {clash[0]} overlaps {clash[1]} of other servers without being it; "
                        "not imported (no inventory can say it)",
                        node.seen.name,
                    )
                )
                continue
            groups.append(_Group(list(nets), list(gateways)))
            match = len(groups) - 1
        group = groups[match]
        for plane in range(count):
            if group.nets[plane] is None:
                group.nets[plane] = nets[plane]
            said = [
                npu
                for devid, npu in node.seen.npus.items()
                if _plane(product, devid, count) == plane and "gateway" in npu.said
            ]
            if said and group.members and gateways[plane] != group.gateways[plane]:
                conflicts.append(
                    Conflict(
                        "gateway",
                        f"{node.seen.name}: gateway {gateways[plane]} in {group.nets[plane]}, where the other servers use "
                        f"{group.gateways[plane]}; an inventory gives one gateway per subnet",
                        node.seen.name,
                    )
                )
            elif said and not group.members:
                group.gateways[plane] = gateways[plane]
        node.group = match
        group.members.append(len(kept))
        kept.append(node)
    for index, group in enumerate(groups):
        if any(n is None for n in group.nets):
            conflicts.append(
                Conflict(
                    "plane_unknown",
                    f"group {index + 1}: no NPU address on every {'plane' if product.planes else 'rail'}; "
                    "the inventory cannot name the missing subnets",
                )
            )
    return groups, kept


def _overlap(nets: Sequence[Optional[Net]], groups: Sequence[_Group]) -> Optional[tuple[Net, Net]]:
    for net in nets:
        for group in groups:
            for other in group.nets:
                if net is not None and other is not None and net.overlaps(other):
                    return net, other
    return None


def _rule_of(groups: Sequence[_Group], count: int) -> Optional[dict[str, str]]:
    """The ``rule:`` that gives exactly these groups' subnets and gateways, or None."""
    if len(groups) < 2 or any(n is None for g in groups for n in g.nets):
        return None
    nets = [n for g in groups for n in g.nets]
    prefix = nets[0].prefixlen  # type: ignore[union-attr]
    size = 1 << (32 - prefix)
    start = int(nets[0].network_address)  # type: ignore[union-attr]
    for index, net in enumerate(nets):
        assert net is not None
        if net.prefixlen != prefix or int(net.network_address) != start + index * size:
            return None
    kinds = set()
    for group in groups:
        for net, gateway in zip(group.nets, group.gateways):
            assert net is not None
            if gateway is None:
                kinds.add("none")
            elif gateway == str(net.network_address + 1):
                kinds.add("first")
            elif gateway == str(net.broadcast_address - 1):
                kinds.add("last")
            else:
                return None
    if len(kinds) != 1:
        return None
    end = start + len(nets) * size - 1
    for supernet_prefix in range(prefix, 7, -1):
        mask = (0xFFFFFFFF << (32 - supernet_prefix)) & 0xFFFFFFFF
        base = start & mask
        if base == start and base + (1 << (32 - supernet_prefix)) - 1 >= end:
            return {
                "supernet": f"{ipaddress.IPv4Address(base)}/{supernet_prefix}",
                "prefix": str(prefix),
                "gateway": kinds.pop(),
            }
    return None


# --- device IPs ---------------------------------------------------------------------------------------


class _PlaneCursor:
    """The dense layout's allocator (addressing._Allocator) replayed: lowest free host address up."""

    def __init__(self, net: Net, taken: set[int], distinct_octet: bool):
        self.taken = taken
        first, last = int(net.network_address), int(net.broadcast_address)
        self.low, self.high = (first, last) if net.prefixlen >= 31 else (first + 1, last - 1)
        self.next = self.low
        self.distinct = distinct_octet and net.prefixlen < 24
        self.octets = {v & 0xFF for v in taken if first <= v <= last} if self.distinct else set()

    def peek(self, start: int, octets: set[int], taken_now: set[int]) -> tuple[Optional[int], int]:
        value = start
        while value <= self.high:
            ok = (
                value not in self.taken
                and value not in taken_now
                and not (int(_VNIC.network_address) <= value <= int(_VNIC.broadcast_address))
            )
            if ok and self.distinct:
                octet = value & 0xFF
                ok = octet not in (0, 255) and octet not in self.octets and octet not in octets
            if ok:
                return value, value + 1
            value += 1
        return None, value


def _choose_explicit(
    nodes: list[_Node], groups: list[_Group], product: Product, count: int, layout: str, mgmt: set[int]
) -> None:
    """Mark the servers whose addresses the layout does not give (one pass, in node order)."""
    taken: set[int] = set(mgmt)
    for group in groups:
        for gateway in group.gateways:
            if gateway is not None:
                taken.add(int(ipaddress.IPv4Address(gateway)))
    cursors = {
        (g, r): _PlaneCursor(net, taken, product.subnet_rule is SubnetRule.FOUR_PLANES)
        for g, group in enumerate(groups)
        for r, net in enumerate(group.nets)
        if net is not None
    }
    position: Counter[int] = Counter()
    for node in nodes:
        wanted = {devid: npu.ip for devid, npu in node.seen.npus.items()}
        if any(ip is None for ip in wanted.values()) or set(wanted) != set(range(node.npus)):
            node.explicit = True
        elif layout == "conventional":
            p = position[node.group]
            for devid in range(node.npus):
                net = groups[node.group].nets[_plane(product, devid, count)]
                assert net is not None
                offset = (101 if devid < 4 else 100) + 10 * p
                if str(net.network_address + offset) != wanted[devid]:
                    node.explicit = True
                    break
        else:
            starts = {key: cursor.next for key, cursor in cursors.items()}
            octets: dict[tuple[int, int], set[int]] = {}
            took: set[int] = set()
            for devid in range(node.npus):
                key = (node.group, _plane(product, devid, count))
                cursor = cursors.get(key)
                if cursor is None:
                    node.explicit = True
                    break
                value, after = cursor.peek(starts[key], octets.setdefault(key, set()), took)
                if value is None or str(ipaddress.IPv4Address(value)) != wanted[devid]:
                    node.explicit = True
                    break
                starts[key] = after
                octets[key].add(value & 0xFF)
                took.add(value)
            if not node.explicit:
                for key, start in starts.items():
                    cursors[key].next = start
                    cursors[key].octets |= octets.get(key, set())
                taken |= took
        position[node.group] += 1
        if node.explicit:
            for ip in wanted.values():
                if ip is not None:
                    value = int(ipaddress.IPv4Address(ip))
                    taken.add(value)
                    for key, cursor in cursors.items():
                        if cursor.distinct and cursor.low <= value <= cursor.high:
                            cursor.octets.add(value & 0xFF)


# --- the text ---------------------------------------------------------------------------------------


def _q(value: object) -> str:
    """A YAML scalar that reads back as this exact string (a name such as ``no`` or ``1e3`` too)."""
    return json.dumps(str(value))


def _comment(text: str, indent: str = "") -> list[str]:
    """A comment line for text that may come from outside (a host's file, a tool's message)."""
    safe = visible(text).replace("\n", " ").replace("\t", " ")
    return [f"{indent}# {safe}"]


_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def _follows(previous: str, name: str) -> bool:
    a, b = _LAST_NUMBER.match(previous), _LAST_NUMBER.match(name)
    if not a or not b or a.group(1) != b.group(1) or a.group(3) != b.group(3):
        return False
    if len(a.group(2)) != len(b.group(2)) and (a.group(2).startswith("0") or b.group(2).startswith("0")):
        return False
    return int(b.group(2)) == int(a.group(2)) + 1


def _default_name(host: str) -> str:
    return host if re.fullmatch(r"[0-9.]+", host) else host.split(".")[0]


def _node_runs(nodes: Sequence[_Node], attributes: Sequence[tuple]) -> list[list[int]]:
    """Consecutive nodes that one range entry can hold: same attributes, names and hosts counting up."""
    runs: list[list[int]] = []
    for index, node in enumerate(nodes):
        if runs and not node.explicit:
            last = runs[-1][-1]
            previous = nodes[last]
            if (
                not previous.explicit
                and attributes[last] == attributes[index]
                and _follows(previous.seen.name, node.seen.name)
                and _follows(previous.seen.host, node.seen.host)
                and _counts_on(previous.seen.server_index, node.seen.server_index)
            ):
                runs[-1].append(index)
                continue
        runs.append([index])
    return runs


def _counts_on(previous: Optional[int], index: Optional[int]) -> bool:
    """A range entry's A3 server indexes count up from its first (``server_index`` + offset)."""
    return previous is None and index is None or (previous is not None and index == previous + 1)


def _pattern(values: list[str]) -> Optional[str]:
    patterns = hostrange.compress(values)
    if len(patterns) == 1 and hostrange.expand(patterns[0]) == values:
        return patterns[0]
    return None


@dataclass
class _Choices:
    form: str
    layout: str
    detect_explicit: bool
    rule: Optional[dict[str, str]]
    #: The TLS switch every NPU read has (None: none read, nothing written).
    tls: Optional[int] = None
    #: The host settings ``--adopt`` asked for, as the hosts have them.
    adopted: Adopted = field(default_factory=Adopted)


def _render(
    seen: Seen,
    product: Product,
    name: str,
    ssh: SshSettings,
    nodes: list[_Node],
    groups: list[_Group],
    count: int,
    npus_per_node: int,
    choices: _Choices,
    detects: dict[str, dict[int, str]],
    conflicts: list[Conflict],
    software: dict[str, str],
    odd_versions: list[str],
) -> str:
    out: list[str] = [
        "# Written by `ascendprep inventory import` from what is there: " + ", ".join(seen.sources) + ".",
        "# Review it, then `ascendprep plan` it: a plan of the hosts it was read from changes no NPU address.",
    ]
    if seen.unreachable:
        out.append("# INCOMPLETE: these hosts could not be read and are not in this inventory:")
        for host, why in seen.unreachable.items():
            out += _comment(f"  {host}: {why}")
    errors = [c for c in conflicts if c.error]
    notes = [c for c in conflicts if not c.error]
    if errors:
        out.append("# CONFLICTS in what is there (this inventory cannot reproduce them; fix the hosts or the file):")
        for conflict in errors:
            out += _comment(f"  {conflict.message}")
    if notes:
        out.append("# Notes:")
        for conflict in notes:
            out += _comment(f"  {conflict.message}")
    out += [f"name: {_q(name)}", f"product: {_q(product.id)}", f"npus_per_node: {npus_per_node}"]
    ssh_lines = []
    if ssh.user:
        ssh_lines.append(f"  user: {_q(ssh.user)}")
    if ssh.key:
        ssh_lines.append(f"  key: {_q(ssh.key)}")
    if ssh.known_hosts:
        ssh_lines.append(f"  known_hosts: {_q(ssh.known_hosts)}")
    if ssh_lines:
        out += ["ssh:", *ssh_lines]
    out.append("device_network:")
    if choices.form == "flat":
        group = groups[0]
        if count == 1:
            out.append(f"  subnet: {_q(group.nets[0])}")
            if group.gateways[0] is not None:
                out.append(f"  gateway: {_q(group.gateways[0])}")
        else:
            out.append(f"  subnets: [{', '.join(_q(n) for n in group.nets)}]")
            if any(g is not None for g in group.gateways):
                if len(set(group.gateways)) == 1:
                    out.append(f"  gateway: {_q(group.gateways[0])}")
                elif all(g is not None for g in group.gateways):
                    out.append(f"  gateways: [{', '.join(_q(g) for g in group.gateways)}]")
                else:
                    out += _comment("some subnets have no gateway: a gateways list needs one per subnet", "  ")
    elif choices.form == "rule":
        assert choices.rule is not None
        out += _comment(
            f"{len(groups)} groups of servers, each with its own subnets, one after another in the supernet", "  "
        )
        out.append("  rule:")
        out.append(f"    supernet: {_q(choices.rule['supernet'])}")
        out.append(f"    by: {GROUP_LABEL}")
        out.append(f"    prefix: {choices.rule['prefix']}")
        if not product.planes and count > 1:
            out.append(f"    rails: {count}")
        out.append(f"    gateway: {choices.rule['gateway']}")
    else:
        out.append("  groups:")
        for index, group in enumerate(groups):
            members = [nodes[m].seen.name for m in group.members]
            out.append(f"    - name: g{index + 1}")
            out.append(f"      nodes: [{', '.join(_q(p) for p in hostrange.compress(members))}]")
            out.append(f"      subnets: [{', '.join(_q(n) for n in group.nets)}]")
            if all(g is not None for g in group.gateways):
                out.append(f"      gateways: [{', '.join(_q(g) for g in group.gateways)}]")
            elif any(g is not None for g in group.gateways):
                out += _comment("some subnets of this group have no gateway: none is imported for it", "      ")
    if product.subnet_rule is SubnetRule.FOUR_PLANES:
        out.append(f"  layout: {choices.layout}")
    if choices.tls is not None:
        out.append(f"  tls: {'true' if choices.tls else 'false'}")
    if choices.detect_explicit:
        out.append("  detect: explicit")
    off = [n for n in nodes if n.explicit]
    out.append("nodes:")
    if off:
        out += _comment(
            f"off the pattern ({len(off)}): {hostrange.compressed(n.seen.name for n in off)}: their device IPs are not "
            "where the subnets' layout puts them, so they are listed explicitly",
            "  ",
        )
    attributes = [
        (
            node.npus,
            node.group if choices.form == "rule" else None,
            node.seen.user,
            node.seen.super_pod,
            _default_name(node.seen.host) == node.seen.name,
            bool(detects),
        )
        for node in nodes
    ]
    runs = _node_runs(nodes, attributes) if not detects else [[i] for i in range(len(nodes))]
    for run in runs:
        names = [nodes[i].seen.name for i in run]
        hosts = [nodes[i].seen.host for i in run]
        name_pattern, host_pattern = _pattern(names), _pattern(hosts)
        if len(run) > 1 and (name_pattern is None or host_pattern is None):
            chunks = [[i] for i in run]
        else:
            chunks = [run]
        for chunk in chunks:
            node = nodes[chunk[0]]
            chunk_names = [nodes[i].seen.name for i in chunk]
            chunk_hosts = [nodes[i].seen.host for i in chunk]
            host_text = host_pattern if len(chunk) > 1 else chunk_hosts[0]
            name_text = name_pattern if len(chunk) > 1 else chunk_names[0]
            if node.explicit:
                out += _comment(f"off the pattern: {node.seen.name}", "  ")
            out.append(f"  - host: {_q(host_text)}")
            if (
                _default_name(node.seen.host) != node.seen.name
                or len(chunk) > 1
                and name_text != _default_range(chunk_hosts)
            ):
                out.append(f"    name: {_q(name_text)}")
            if node.npus != npus_per_node:
                out.append(f"    npus: {node.npus}")
            if node.seen.user and node.seen.user != (ssh.user or "root"):
                out.append(f"    user: {_q(node.seen.user)}")
            if choices.form == "rule":
                out.append(f"    labels: {{{GROUP_LABEL}: {_q('g' + str(node.group + 1))}}}")
            if node.seen.super_pod is not None:
                out.append(f"    super_pod: {node.seen.super_pod}")
                if node.seen.server_index is not None:
                    out.append(f"    server_index: {node.seen.server_index}")
            if node.explicit:
                ips = {d: n.ip for d, n in sorted(node.seen.npus.items()) if n.ip is not None}
                out.append("    device_ips: {" + ", ".join(f"{d}: {_q(ip)}" for d, ip in ips.items()) + "}")
            if detects:
                mine = detects.get(node.seen.name, {})
                out.append("    detect_ips: {" + ", ".join(f"{d}: {_q(ip)}" for d, ip in sorted(mine.items())) + "}")
    if software:
        out.append("software:")
        for key, value in software.items():
            out.append(f"  {key}: {_q(value)}")
    for line in odd_versions:
        out += _comment(line)
    out += _render_settings(choices.adopted)
    if seen.rank_table:
        out += [
            "training:",
            "  # a rank table is in use: ascendprep writes one from this inventory",
            "  rank_table: true",
        ]
    return "\n".join(out) + "\n"


def _render_settings(adopted: Adopted) -> list[str]:
    """``sysctl:``, ``env:`` and ``firewall:``: what the hosts have where ``--adopt`` asked for it,
    else a comment that ``plan`` shows what ascendprep would set."""
    out: list[str] = []
    for what, done in (("sysctl", adopted.sysctl), ("env", adopted.env)):
        if not done:
            why = "no host has one to adopt: see the notes" if what in adopted.asked else f"--adopt {what} imports it"
            out.append(f"# {what}: nothing adopted ({why}); `ascendprep plan` shows what it would set.")
    if adopted.sysctl:
        out += ["# sysctl: what the hosts have (--adopt sysctl); ascendprep keeps each at least this", "sysctl:"]
        out += [f"  {key}: {value if isinstance(value, int) else _q(value)}" for key, value in adopted.sysctl.items()]
    if adopted.env:
        out += [
            "# env: what the hosts' /etc/ascendprep/env.sh exports beyond ascendprep's defaults (--adopt env)",
            "env:",
        ]
        out += [f"  {name}: {_q(value)}" for name, value in adopted.env.items()]
    for line in adopted.comments:
        out += _comment(line)
    if adopted.firewall is None:
        out.append("# the firewall is only checked (--adopt firewall imports what the hosts have)")
        out.append("firewall: check")
    else:
        out.append(f"firewall: {adopted.firewall}")
    return out


def _default_range(hosts: list[str]) -> Optional[str]:
    return _pattern([_default_name(h) for h in hosts])


# --- versions -------------------------------------------------------------------------------------------


def _versions(nodes: Sequence[_Node]) -> tuple[dict[str, str], list[str]]:
    chosen: dict[str, str] = {}
    odd: list[str] = []
    for key in VERSION_KEYS:
        found = Counter(n.seen.versions.get(key) for n in nodes if n.seen.versions.get(key) is not None)
        if not found:
            continue
        value, _ = found.most_common(1)[0]
        if not VERSION_TEXT_RE.match(str(value)):
            odd.append(f"software.{key}: most servers report '{value}', which is not a version ascendprep can pin")
            continue
        chosen[key] = str(value)
        others: dict[str, list[str]] = {}
        for node in nodes:
            mine = node.seen.versions.get(key)
            if mine is not None and mine != value:
                others.setdefault(str(mine), []).append(node.seen.name)
        for other, names in others.items():
            odd.append(f"software.{key}: {hostrange.compressed(names)} run {other}, not {value}")
        missing = [n.seen.name for n in nodes if n.seen.versions and n.seen.versions.get(key) is None]
        if missing:
            odd.append(f"software.{key}: not found on {hostrange.compressed(missing)}")
    return chosen, odd


def _tls_switch(nodes: Sequence[_Node], conflicts: list[Conflict]) -> Optional[int]:
    """``device_network.tls``: the switch every NPU read has; with both, the most common, the
    others a conflict (an inventory sets one switch for the cluster, and plan would turn theirs)."""
    found = Counter(value for node in nodes for value in node.seen.tls.values())
    if not found:
        return None
    value = found.most_common(1)[0][0]
    odd = [n.seen.name for n in nodes if any(v != value for v in n.seen.tls.values())]
    if odd:
        conflicts.append(
            Conflict(
                "tls",
                f"TLS is {'on' if value else 'off'} on most NPUs but not on {hostrange.compressed(odd)}; "
                "the inventory sets one switch for every NPU",
            )
        )
    return value


def _rank_conflicts(inventory: Inventory, plan: IpPlan, nodes: Sequence[_Node]) -> list[Conflict]:
    """The rank table this inventory writes against what was read: every rank a table gave on
    the same server and device, and every SDID a table or the dies themselves (A3, ``npu-smi
    info -t spod-info``) gave the same. An inventory numbers ranks server by server, device by
    device, and derives SDIDs from the server index as the driver does (docs/a3-superpod.md §2);
    a die whose SDID is not that would make HCCL refuse the table it writes (EI0014), so it is
    reported, never written over."""
    if not any(node.seen.ranks or node.seen.sdids for node in nodes):
        return []
    table = build_rank_table(inventory, plan)
    by_name = {node.seen.name: node for node in nodes}
    wrong_ranks: list[str] = []
    wrong_sdids: list[str] = []
    for server, planned in zip(table["server_list"], inventory.nodes):
        node = by_name.get(planned.name)
        if node is None:
            continue
        for device in server["device"]:
            devid = int(device["device_id"])
            rank = node.seen.ranks.get(devid)
            if rank is not None and rank != int(device["rank_id"]):
                wrong_ranks.append(
                    f"{planned.name} device {devid}: rank {rank} in the table read, {device['rank_id']} written"
                )
            sdid = node.seen.sdids.get(devid)
            if sdid is not None and str(sdid) != device.get("super_device_id"):
                written = device.get("super_device_id") or "none (the server is in no super-pod)"
                wrong_sdids.append(
                    f"{planned.name} device {devid}: SDID {sdid} in {node.seen.sdids_from or 'what was read'}, {written} planned"
                )
    conflicts = []
    for kind, wrong, what in (
        ("ranks", wrong_ranks, "the rank table this inventory writes differs"),
        (
            "sdid",
            wrong_sdids,
            "the SDIDs this inventory plans are not the ones read (HCCL refuses a wrong one, EI0014)",
        ),
    ):
        if wrong:
            more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
            conflicts.append(Conflict(kind, f"{what}: " + "; ".join(wrong[:3]) + more))
    return conflicts


# --- the whole --------------------------------------------------------------------------------------------


#: Conflict kind -> the values of the node it names that no inventory can give back (reported,
#: so not counted against the round trip).
_EXCUSED = {"gateway": {"gateway", "detect"}, "plane_rule": {"netmask", "gateway", "detect"}}


def _mismatches(nodes: Sequence[_Node], plan: IpPlan, conflicts: Sequence[Conflict]) -> tuple[set[str], set[str]]:
    """Nodes whose planned addresses (ip, netmask, gateway) differ from what was said, and those
    whose detect IPs differ; values a conflict already names are left out."""
    address: set[str] = set()
    detect: set[str] = set()
    excused: dict[Optional[str], set[str]] = {}
    for conflict in conflicts:
        excused.setdefault(conflict.node, set()).update(_EXCUSED.get(conflict.kind, ()))
    for node in nodes:
        planned = {a.npu: a for a in plan.by_node.get(node.seen.name, [])}
        skip = excused.get(node.seen.name, set())
        for devid, seen_npu in node.seen.npus.items():
            npu = NpuSeen(
                devid,
                seen_npu.ip,
                seen_npu.netmask,
                seen_npu.gateway,
                seen_npu.detect,
                seen_npu.said - skip,
            )
            got = planned.get(devid)
            if got is None:
                address.add(node.seen.name)
                continue
            if "ip" in npu.said and npu.ip is not None and got.ip != npu.ip:
                address.add(node.seen.name)
            if "netmask" in npu.said and npu.netmask is not None and got.netmask != npu.netmask:
                address.add(node.seen.name)
            if "gateway" in npu.said and got.gateway != npu.gateway:
                address.add(node.seen.name)
            if "detect" in npu.said and npu.detect is not None and got.detect != npu.detect:
                detect.add(node.seen.name)
    return address, detect


def _duplicates(seen: Seen, conflicts: list[Conflict]) -> list[NodeSeen]:
    """A device IP on two NPUs is a conflict; the second keeps no address (HCCL would not run)."""
    owner: dict[str, str] = {}
    nodes = []
    for node in seen.nodes:
        npus = dict(node.npus)
        for devid, npu in node.npus.items():
            if npu.ip is None:
                continue
            here = f"{node.name} NPU {devid}"
            if npu.ip in owner:
                conflicts.append(
                    Conflict("duplicate_ip", f"{here} has device IP {npu.ip}, as {owner[npu.ip]} does", node.name)
                )
                npus[devid] = NpuSeen(devid, None, npu.netmask, npu.gateway, npu.detect, npu.said - {"ip"})
            else:
                owner[npu.ip] = here
        nodes.append(_with_npus(node, npus))
    return nodes


def _load(text: str, fast: bool) -> Inventory:
    """The inventory ``text`` is. ``fast``: parsed by libyaml (a try of the search; a 4,096-node
    text with per-node entries takes seconds in the pure-Python loader), else by the loader
    ``plan`` uses, line numbers and bounds included (the proof)."""
    try:
        if fast and getattr(yaml, "CSafeLoader", None) is not None:
            data = yaml.load(text, Loader=yaml.CSafeLoader)  # noqa: S506 - the safe loader, in C
            return inventory_from_document(YamlDocument("imported inventory", _text_keys(data)), Path("."))
        return inventory_from_text(text, "imported inventory")
    except InputError as error:
        raise Unloadable(error) from None


class Unloadable(Exception):
    """The inventory that reproduces what is there breaks a rule the loader enforces (an A3 device
    IP in a range the driver reserves, say): what is there is itself wrong, a conflict to report."""

    def __init__(self, error: InputError):
        super().__init__(str(error))
        self.problems = [problem.message for problem in error.problems]


def _text_keys(data: Any) -> Any:
    """Mapping keys as text, as the inventory loader's YAML reader gives them (``0:`` -> "0")."""
    if isinstance(data, dict):
        return {str(key): _text_keys(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_text_keys(value) for value in data]
    return data


def compact(
    seen: Seen,
    product_id: str,
    name: str = "imported",
    ssh: SshSettings = SshSettings(),
    adopt: frozenset[str] = frozenset(),
) -> Imported:
    """The most compact inventory text that reproduces ``seen``, proven by loading and planning it.
    ``adopt``: the host settings (:data:`~ascendprep.adopt.settings.ADOPTABLE`) to import too."""
    product = PRODUCTS[product_id]
    conflicts = list(seen.conflicts)
    names: set[str] = set()
    unique = []
    for entry in seen.nodes:
        if entry.name in names or not NAME_RE.match(entry.name):
            conflicts.append(
                Conflict(
                    "node_name", f"{entry.name!r} is listed twice or is not a node name; imported once", entry.name
                )
            )
            continue
        names.add(entry.name)
        unique.append(entry)
    for entry in unique:
        if entry.product and entry.product != product.id:
            conflicts.append(
                Conflict(
                    "two_products",
                    f"{entry.name} is an {entry.product}, the inventory's product is {product.id}",
                    entry.name,
                )
            )
    work = Seen(unique, seen.product, seen.sources, conflicts, seen.unreachable, seen.rank_table)
    work.nodes = _duplicates(work, conflicts)
    count = rail_count(work.nodes, product)
    work.nodes = _fill_unknown_netmasks(work, product, count, conflicts)
    for entry in work.nodes:
        if not _fits(entry, product, count):
            conflicts.append(
                Conflict(
                    "plane_rule",
                    f"{entry.name}: its NPUs' subnets break the {product.title} rule "
                    f"({'NPU i and i+4 share a subnet' if product.planes == 4 else 'the two dies of an NPU in two subnets' if product.planes == 2 else 'NPU i on rail i mod ' + str(count)})",
                    entry.name,
                )
            )
    counts = Counter(max(node.npus, default=-1) + 1 for node in work.nodes)
    npus_per_node = counts.most_common(1)[0][0] if counts else product.default_npus
    nodes = [_Node(node, max(node.npus, default=-1) + 1) for node in work.nodes]
    for node in nodes:
        if node.npus not in product.allowed_npus:
            conflicts.append(
                Conflict("npu_count", f"{node.seen.name}: {node.npus} NPUs is not an {product.title}", node.seen.name)
            )
    nodes = [n for n in nodes if n.npus in product.allowed_npus]
    groups, nodes = _group_nodes(nodes, product, count, conflicts)
    if not nodes:
        text = "\n".join(f"# {visible(c.message)}" for c in conflicts) + "\n"
        return Imported(
            text,
            None,
            [],
            conflicts or [Conflict("empty", "nothing to import")],
            dict(seen.unreachable),
            "none",
            "none",
        )
    rule = _rule_of(groups, count)
    form = "flat" if len(groups) == 1 else ("rule" if rule else "groups")
    mgmt = {address for address in (_ipv4_value(node.seen.host) for node in nodes) if address is not None}
    layout = "dense"
    if product.subnet_rule is SubnetRule.FOUR_PLANES:
        _choose_explicit(nodes, groups, product, count, "conventional", mgmt)
        conventional = sum(not n.explicit for n in nodes)
        for node in nodes:
            node.explicit = False
        _choose_explicit(nodes, groups, product, count, "dense", mgmt)
        dense = sum(not n.explicit for n in nodes)
        if conventional >= dense and conventional:
            layout = "conventional"
            for node in nodes:
                node.explicit = False
            _choose_explicit(nodes, groups, product, count, layout, mgmt)
    else:
        _choose_explicit(nodes, groups, product, count, layout, mgmt)
    unset = [n.seen.name for n in nodes if any("detect" in v.said and v.detect is None for v in n.seen.npus.values())]
    if unset:
        conflicts.append(
            Conflict(
                "detect_unset",
                f"{hostrange.compressed(unset)}: NPUs without a detect IP; `plan` will set the one this inventory gives",
                error=False,
            )
        )
    software, odd = _versions(nodes)
    adopted = adopt_settings([node.seen for node in nodes], adopt)
    conflicts += adopted.notes
    choices = _Choices(form, layout, False, rule, _tls_switch(nodes, conflicts), adopted)
    detects: dict[str, dict[int, str]] = {}
    base_conflicts = list(conflicts)
    try:
        for attempt in range(IMPORT_ROUND_TRIP_TRIES + 2):
            text = _render(
                seen,
                product,
                name,
                ssh,
                nodes,
                groups,
                count,
                npus_per_node,
                choices,
                detects,
                conflicts,
                software,
                odd,
            )
            tried = _load(text, fast=True)
            plan = plan_device_ips(tried)
            address, detect = _mismatches(nodes, plan, base_conflicts)
            if not address and not detect:
                # the proof proper: the text as `plan` loads it; the same model and nodes plan the
                # same addresses (the planner is a pure function of them), else it is planned again
                inventory = _load(text, fast=False)
                if (inventory.model, inventory.nodes) != (tried.model, tried.nodes):
                    plan = plan_device_ips(inventory)
                    if any(_mismatches(nodes, plan, base_conflicts)):
                        raise RoundTripError("the imported inventory, loaded as plan loads it, plans other addresses")
                conflicts = base_conflicts + [
                    Conflict("plan", f"the imported inventory breaks a rule: {f.message}", f.node)
                    for f in plan.findings
                    if f.severity.value == "error"
                ]
                conflicts += _rank_conflicts(inventory, plan, nodes)
                if len(conflicts) != len(base_conflicts):
                    text = _render(
                        seen,
                        product,
                        name,
                        ssh,
                        nodes,
                        groups,
                        count,
                        npus_per_node,
                        choices,
                        detects,
                        conflicts,
                        software,
                        odd,
                    )
                    inventory = _load(text, fast=False)
                return Imported(
                    text,
                    inventory,
                    [n.seen.name for n in nodes if n.explicit],
                    conflicts,
                    dict(seen.unreachable),
                    form,
                    layout,
                )
            if address:
                wrong = [n for n in nodes if n.seen.name in address and not n.explicit]
                if not wrong:
                    break
                # the first server the plan places elsewhere shifts the ones after it: make it
                # explicit and plan again; after a few tries, all of them at once
                for node in wrong if attempt >= IMPORT_ROUND_TRIP_TRIES else wrong[:1]:
                    node.explicit = True
                continue
            if choices.detect_explicit:
                break
            choices.detect_explicit = True
            for node in nodes:
                planned = {a.npu: a for a in plan.by_node.get(node.seen.name, [])}
                detects[node.seen.name] = {
                    devid: (npu.detect if npu.detect is not None else planned[devid].detect or planned[devid].ip)
                    for devid, npu in node.seen.npus.items()
                }
            conflicts = list(base_conflicts)
    except Unloadable as bad:
        conflicts = base_conflicts + [
            Conflict("does_not_load", f"what is there breaks a rule of the inventory: {problem}")
            for problem in bad.problems
        ]
        text = _render(
            seen, product, name, ssh, nodes, groups, count, npus_per_node, choices, detects, conflicts, software, odd
        )
        return Imported(
            text, None, [n.seen.name for n in nodes if n.explicit], conflicts, dict(seen.unreachable), form, layout
        )
    raise RoundTripError(
        f"the imported inventory does not give back what was read (addresses of {sorted(address)[:8]}, "
        f"detect IPs of {sorted(detect)[:8]})"
    )


def _ipv4_value(host: str) -> Optional[int]:
    """A management address as a number, or None for a host given by name (not an address)."""
    try:
        return int(ipaddress.IPv4Address(host))
    except ValueError:
        return None
