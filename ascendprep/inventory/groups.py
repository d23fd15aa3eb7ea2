"""Address groups: which nodes share which device subnets and gateways (fabric-shaped addressing).

A routed Clos fabric gives every leaf (or rack, or pod) its own subnet and gateway per rail or
plane. The inventory says so in one of three ways, and this module turns each into the same
thing, a tuple of :class:`AddressGroup` plus the group of every node, so the planner has one
code path:

* flat (today's form): ``device_network.subnet(s)``/``gateway(s)``: one group holding every node;
* ``device_network.groups``: explicit groups, each choosing nodes by name range (``nodes``) or by
  labels (``match``), each with its own ``subnet(s)``/``gateway(s)``;
* ``device_network.rule``: one supernet cut into one ``/prefix`` per group per rail/plane, the
  groups being the values of one node label (``by: leaf``), in the order they first appear
  among the nodes; group g's rail r gets the (g x rails + r)-th subnet of the supernet, and the
  gateway is its first (or last) host address.

Everything that can be judged from the inventory alone (membership, counts, gateways inside
their subnets, overlaps between groups, the reserved vNIC subnet, the supernet being large
enough) is reported here as a located problem, so a bad group points at its own line.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ascendprep.base import hostrange
from ascendprep.base.yamlsource import FieldPath, Located, YamlDocument
from ascendprep.inventory.products import CONVENTIONAL_910_SUBNETS, RESERVED_VNIC_SUBNET, Product

if TYPE_CHECKING:  # pragma: no cover - typing only; inventory imports this module
    from ascendprep.inventory.model import DeviceGroup, DeviceNetwork, Node

_VNIC = ipaddress.IPv4Network(RESERVED_VNIC_SUBNET)


@dataclass(frozen=True)
class AddressGroup:
    """Nodes that share device subnets: subnet r (with gateway r) is rail/plane r of the group."""

    index: int
    #: For people: the group's ``name``, ``leaf=l03`` for a rule group, or ``all nodes``.
    name: str
    #: Where the group is written in the inventory, for messages ("groups[2]", "rule").
    where: str
    subnets: tuple[ipaddress.IPv4Network, ...]
    gateways: tuple[Optional[ipaddress.IPv4Address], ...]
    #: Indexes (``Node.index``) of the group's nodes, in inventory order.
    nodes: tuple[int, ...]


FLAT = "flat"
EXPLICIT = "groups"
RULE = "rule"


def form_of(net: "DeviceNetwork") -> str:
    """Which of the three forms the inventory uses."""
    if net.rule is not None:
        return RULE
    if net.groups is not None:
        return EXPLICIT
    return FLAT


def resolve_groups(
    doc: YamlDocument, net: "DeviceNetwork", nodes: Sequence["Node"], product: Product
) -> tuple[tuple[AddressGroup, ...], list[Located]]:
    """The address groups of the inventory, or the located problems that prevent them."""
    form = form_of(net)
    problems: list[Located] = []
    base: FieldPath = ("device_network",)
    if form != FLAT:
        for key in ("subnet", "subnets", "gateway", "gateways"):
            if getattr(net, key) is not None:
                problems.append(
                    doc.problem(
                        base + (key,),
                        f"with device_network.{form}, subnets and gateways are given there: remove {key} here",
                    )
                )
        if net.rule is not None and net.groups is not None:
            problems.append(doc.problem(base + ("rule",), "give either groups or rule, not both"))
    if problems:
        return (), problems
    groups: tuple[AddressGroup, ...]
    if form == FLAT:
        groups = (flat_group(net, nodes),)
    elif form == EXPLICIT:
        groups, problems = _explicit_groups(doc, net, nodes, product)
    else:
        groups, problems = _rule_groups(doc, net, nodes, product)
    if problems:
        return (), problems
    if form != FLAT:
        problems.extend(_group_rules(doc, net, groups, form))
    return groups, problems


def flat_group(net: "DeviceNetwork", nodes: Sequence["Node"]) -> AddressGroup:
    """Today's flat form as one group of every node (the 910 default: the conventional planes)."""
    if net.subnets:
        subnets = tuple(net.subnets)
    elif net.subnet is not None:
        subnets = (net.subnet,)
    else:
        subnets = tuple(ipaddress.IPv4Network(s) for s in CONVENTIONAL_910_SUBNETS)
    if net.gateways is not None:
        gateways: tuple[Optional[ipaddress.IPv4Address], ...] = tuple(net.gateways) + (None,) * max(
            0, len(subnets) - len(net.gateways)
        )
    else:
        gateways = (net.gateway,) * len(subnets)
    return AddressGroup(
        0, "all nodes", "device_network", subnets, gateways[: len(subnets)], tuple(n.index for n in nodes)
    )


def _explicit_groups(
    doc: YamlDocument, net: "DeviceNetwork", nodes: Sequence["Node"], product: Product
) -> tuple[tuple[AddressGroup, ...], list[Located]]:
    problems: list[Located] = []
    by_name = {node.name: node for node in nodes}
    owner: dict[int, int] = {}
    groups: list[AddressGroup] = []
    counts: Optional[tuple[int, int]] = None
    assert net.groups is not None
    names_seen: dict[str, int] = {}
    by_label: Optional[dict[tuple[str, str], set[int]]] = None
    for g, entry in enumerate(net.groups):
        where: FieldPath = ("device_network", "groups", g)
        label = f"device_network.groups[{g}]"
        if entry.name is not None:
            if entry.name in names_seen:
                problems.append(
                    doc.problem(
                        where + ("name",),
                        f"group name '{entry.name}' is used twice (also groups[{names_seen[entry.name]}])",
                    )
                )
            names_seen.setdefault(entry.name, g)
        if (entry.nodes is None) == (entry.match is None):
            problems.append(
                doc.problem(where, "choose the group's nodes with either nodes (a name range) or match (labels)")
            )
            continue
        members: list[int] = []
        if entry.nodes is not None:
            patterns = [entry.nodes] if isinstance(entry.nodes, str) else list(entry.nodes)
            missing: list[str] = []
            for pattern in patterns:
                for name in hostrange.expand(pattern):
                    node = by_name.get(name)
                    if node is None:
                        missing.append(name)
                    else:
                        members.append(node.index)
            if missing:
                more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
                problems.append(
                    doc.problem(where + ("nodes",), f"'{missing[0]}'{more} is not a node of this inventory")
                )
        else:
            assert entry.match is not None
            wanted = entry.match
            if by_label is None:
                by_label = _label_index(nodes)
            chosen: Optional[set[int]] = None
            for pair in wanted.items():
                having = by_label.get(pair, set())
                chosen = set(having) if chosen is None else chosen & having
            members = sorted(chosen or ())
            if not members:
                shown = ", ".join(f"{k}: {v}" for k, v in wanted.items())
                problems.append(doc.problem(where + ("match",), f"no node has the labels {{{shown}}}"))
        for index in members:
            if index in owner:
                problems.append(
                    doc.problem(
                        where,
                        f"node {nodes[index].name} is already in groups[{owner[index]}]; a node belongs to one group",
                    )
                )
                break
            owner[index] = g
        subnets, gateways, count_problems = _subnets_and_gateways(doc, where, entry, product)
        problems.extend(count_problems)
        if count_problems:
            continue
        if counts is None:
            counts = (g, len(subnets))
        elif counts[1] != len(subnets):
            problems.append(
                doc.problem(
                    where + ("subnets",),
                    f"{len(subnets)} subnets here but groups[{counts[0]}] has {counts[1]}: every group needs the same rails, so NPU i is on rail i everywhere",
                )
            )
        name = entry.name or f"groups[{g}]"
        groups.append(AddressGroup(g, name, label, subnets, gateways, tuple(sorted(set(members)))))
    for node in nodes:
        if node.index not in owner and not problems:
            problems.append(
                doc.problem(
                    ("nodes", node.entry),
                    f"node {node.name} is in no device_network group (every node needs its group's subnets)",
                )
            )
            break
    return tuple(groups), problems


def _label_index(nodes: Sequence["Node"]) -> dict[tuple[str, str], set[int]]:
    """(label, value) -> indexes of the nodes that carry it (groups × nodes scans grow too fast)."""
    index: dict[tuple[str, str], set[int]] = {}
    for node in nodes:
        for pair in node.labels.items():
            index.setdefault(pair, set()).add(node.index)
    return index


def _subnets_and_gateways(
    doc: YamlDocument, where: FieldPath, entry: "DeviceGroup", product: Product
) -> tuple[tuple[ipaddress.IPv4Network, ...], tuple[Optional[ipaddress.IPv4Address], ...], list[Located]]:
    problems: list[Located] = []
    subnet, subnet_list, gateway, gateway_list = entry.subnet, entry.subnets, entry.gateway, entry.gateways
    if subnet is not None and subnet_list is not None:
        problems.append(doc.problem(where + ("subnets",), "give either subnet or subnets, not both"))
    if gateway is not None and gateway_list is not None:
        problems.append(doc.problem(where + ("gateways",), "give either gateway or gateways, not both"))
    subnets = tuple(subnet_list) if subnet_list else ((subnet,) if subnet is not None else ())
    if not subnets:
        problems.append(doc.problem(where, "a group needs subnet (or subnets, one per rail/plane)"))
    elif product.planes and len(subnets) != product.planes:
        problems.append(
            doc.problem(
                where + ("subnets",),
                f"{product.title} needs exactly {product.planes} subnets per group (one per plane), got {len(subnets)}",
            )
        )
    if gateway_list is not None and len(gateway_list) != len(subnets):
        problems.append(
            doc.problem(
                where + ("gateways",),
                f"one gateway per subnet: {len(subnets)} subnets but {len(gateway_list)} gateways",
            )
        )
    gateways = tuple(gateway_list) if gateway_list is not None else (gateway,) * len(subnets)
    return subnets, gateways, problems


def _rule_groups(
    doc: YamlDocument, net: "DeviceNetwork", nodes: Sequence["Node"], product: Product
) -> tuple[tuple[AddressGroup, ...], list[Located]]:
    rule = net.rule
    assert rule is not None
    where: FieldPath = ("device_network", "rule")
    problems: list[Located] = []
    if product.planes and rule.rails is not None:
        problems.append(
            doc.problem(
                where + ("rails",),
                f"{product.title} has {product.planes} planes per group by rule; rails is for atlas-a2",
            )
        )
    rails = product.planes or rule.rails or 1
    if rule.prefix < rule.supernet.prefixlen:
        problems.append(
            doc.problem(where + ("prefix",), f"a /{rule.prefix} per group is larger than the supernet {rule.supernet}")
        )
    if rule.supernet.overlaps(_VNIC):
        problems.append(
            doc.problem(
                where + ("supernet",),
                f"{rule.supernet} overlaps {RESERVED_VNIC_SUBNET}, which is reserved for the device vNIC; choose a supernet outside it",
            )
        )
    members: dict[str, list[int]] = {}
    unlabelled = [node for node in nodes if rule.by not in node.labels]
    if unlabelled:
        first = unlabelled[0]
        more = f" (and {len(unlabelled) - 1} more nodes)" if len(unlabelled) > 1 else ""
        problems.append(
            doc.problem(
                ("nodes", first.entry, "labels"),
                f"node {first.name}{more} has no label '{rule.by}', which device_network.rule.by groups nodes by",
            )
        )
    if problems:
        return (), problems
    for node in nodes:
        members.setdefault(node.labels[rule.by], []).append(node.index)
    needed = len(members) * rails
    available = 1 << (rule.prefix - rule.supernet.prefixlen)
    if needed > available:
        fits = 32 - max(needed - 1, 1).bit_length() - (32 - rule.prefix)
        problems.append(
            doc.problem(
                where + ("supernet",),
                f"{rule.supernet} holds {available} /{rule.prefix} subnets but {len(members)} groups ('{rule.by}' values) x {rails} {'planes' if product.planes else 'rails'} need {needed}: use a /{fits} (or larger) supernet, or a longer prefix",
            )
        )
        return (), problems
    size = 1 << (32 - rule.prefix)
    supernet_start = int(rule.supernet.network_address)
    groups = []
    for g, (value, indexes) in enumerate(members.items()):
        subnets = tuple(
            ipaddress.IPv4Network((supernet_start + (g * rails + r) * size, rule.prefix)) for r in range(rails)
        )
        gateways = tuple(_rule_gateway(s, rule.gateway) for s in subnets)
        groups.append(AddressGroup(g, f"{rule.by}={value}", "rule", subnets, gateways, tuple(indexes)))
    return tuple(groups), problems


def _rule_gateway(subnet: ipaddress.IPv4Network, which: str) -> Optional[ipaddress.IPv4Address]:
    if which == "none" or subnet.prefixlen >= 31:
        return None
    if which == "first":
        return subnet.network_address + 1
    return subnet.broadcast_address - 1


def _group_rules(doc: YamlDocument, net: "DeviceNetwork", groups: Sequence[AddressGroup], form: str) -> list[Located]:
    """Cluster-wide rules between groups: vNIC, gateways inside subnets, no overlaps, detect."""
    problems: list[Located] = []

    def at(group: AddressGroup, kind: str, r: int) -> FieldPath:
        """The field that wrote rail r's subnet or gateway ("subnet" or "gateway") of a group."""
        if form == RULE or net.groups is None:
            return ("device_network", "rule", "supernet" if kind == "subnet" else "gateway")
        entry = net.groups[group.index]
        if getattr(entry, kind + "s") is not None:
            return ("device_network", "groups", group.index, kind + "s", r)
        return ("device_network", "groups", group.index, kind)

    for group in groups:
        for r, (subnet, gateway) in enumerate(zip(group.subnets, group.gateways)):
            if subnet.overlaps(_VNIC):
                problems.append(
                    doc.problem(
                        at(group, "subnet", r),
                        f"{subnet} overlaps {RESERVED_VNIC_SUBNET}, which is reserved for the device vNIC; hccn_tool refuses these addresses",
                    )
                )
            if gateway is not None:
                low, high = _usable(subnet)
                if not low <= int(gateway) <= high:
                    problems.append(
                        doc.problem(
                            at(group, "gateway", r),
                            f"gateway {gateway} is not a host address of {subnet} (group {group.name}); hccn_tool rejects it",
                        )
                    )
            elif net.detect == "gateway":
                problems.append(
                    doc.problem(
                        at(group, "gateway", r), f"detect: gateway needs a gateway for {subnet} (group {group.name})"
                    )
                )
    problems.extend(_overlaps(doc, groups, at))
    return problems


def _usable(subnet: ipaddress.IPv4Network) -> tuple[int, int]:
    first, last = int(subnet.network_address), int(subnet.broadcast_address)
    return (first, last) if subnet.prefixlen >= 31 else (first + 1, last - 1)


def _overlaps(
    doc: YamlDocument, groups: Sequence[AddressGroup], at: Callable[[AddressGroup, str, int], FieldPath]
) -> list[Located]:
    """Every pair of overlapping subnets, found by sorting (thousands of subnets stay fast)."""
    spans = sorted(
        (int(s.network_address), int(s.broadcast_address), g.index, r) for g in groups for r, s in enumerate(g.subnets)
    )
    problems: list[Located] = []
    reach_end = -1
    reach_owner: Optional[tuple[int, int]] = None
    for first, last, g, r in spans:
        if reach_owner is not None and first <= reach_end:
            og, orr = reach_owner
            here, there = groups[g], groups[og]
            mine = here.subnets[r]
            other = there.subnets[orr]
            problems.append(
                doc.problem(
                    at(here, "subnet", r),
                    f"{mine} (group {here.name}) overlaps {other} (group {there.name}); every group and rail needs its own subnet",
                )
            )
        if last > reach_end:
            reach_end, reach_owner = last, (g, r)
    return problems
