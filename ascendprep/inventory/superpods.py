"""A3 super-pods in the inventory: who is in which pod, and the address ranges the driver refuses.

The facts come from ``docs/a3-superpod.md``: a server's ``Super Pod ID`` and ``Server Index``
(``npu-smi info -t spod-info``) give every die its SDID (``server_index<<22 | npu<<18 |
chip<<16 | die_id``), which HCCL wants unique per pod (EI0014); HCCL wants a pod's servers
listed together in the rank table, and torchrun's node ranks must follow the same order, so the
inventory's order is the order of both; a logical super-pod splits one physical pod and never
joins two (otherwise HCCL picks the vNIC link and both ends time out). Every rule here is checked
at load and refused with a located error (``inventory.yaml:14: nodes[3].server_index: ...``).

Pure: nothing here reads a host. The inventory module calls :func:`resolve` and
:func:`reserved_range_problems` while loading.
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Sequence

from ascendprep.base.yamlsource import Located, YamlDocument
from ascendprep.inventory.groups import EXPLICIT, RULE, form_of
from ascendprep.inventory.products import A3_SUPERPOD_MAX_SERVERS, Product, reserved_device_ranges

if TYPE_CHECKING:
    from ascendprep.inventory.groups import AddressGroup
    from ascendprep.inventory.model import InventoryModel, Node

_POD_KEYS = ("super_pod", "server_index", "logical_super_pod")


def sdid(server_index: int, die: int) -> int:
    """The SDID of die ``die`` (0..15, ``npu*2 + chip``) of the server at ``server_index``.

    Driver ``tool_cmd.c``; checked against a real capture (docs/a3-superpod.md §2): server 40,
    die 0 is 167772160, die 1 is 167837697, die 10 is 169082890.
    """
    npu, chip = divmod(die, 2)
    return server_index << 22 | npu << 18 | chip << 16 | die


def vnic_address(server_index: int, die: int) -> str:
    """The HCCS vNIC address of a die: ``192.<server_index>.<2+chip>.<199-die>`` (driver ``tool_cmd.c``)."""
    return f"192.{server_index}.{2 + die % 2}.{199 - die}"


def _first_key(entry: int, model: "InventoryModel") -> tuple:
    """Where an entry says it is in a pod: its first super-pod key (the line a reader looks at)."""
    raw = model.nodes[entry]
    for key in _POD_KEYS:
        if getattr(raw, key) is not None:
            return ("nodes", entry, key)
    return ("nodes", entry)


def resolve(
    doc: YamlDocument, model: "InventoryModel", nodes: list["Node"], product: Product
) -> tuple[list["Node"], list[Located]]:
    """Check the super-pod options and fill in default server indexes (position in the pod)."""
    problems: list[Located] = []
    members = [node for node in nodes if node.super_pod is not None]
    for node in nodes:
        raw = model.nodes[node.entry]
        if raw.super_pod is None and (raw.server_index is not None or raw.logical_super_pod is not None):
            key = "server_index" if raw.server_index is not None else "logical_super_pod"
            problems.append(
                doc.problem(
                    ("nodes", node.entry, key), f"{key} needs super_pod (the physical Super Pod ID) on the same entry"
                )
            )
    if problems or not members:
        return nodes, _dedupe(problems)
    if product.dies_per_npu == 1:
        first = members[0]
        return nodes, [
            doc.problem(
                ("nodes", first.entry, "super_pod"),
                f"super-pods exist only on atlas-a3 ({product.title} has no HCCS super-pod)",
            )
        ]
    if len(members) != len(nodes):
        outside = next(node for node in nodes if node.super_pod is None)
        return nodes, [
            doc.problem(
                ("nodes", outside.entry),
                f"{outside.name} has no super_pod while other servers have one: a 1.2 rank table gives every rank a pod (HCCL rejects a rank without one); give every node its super_pod, or none",
            )
        ]

    resolved = _fill_server_indexes(nodes)
    problems += _index_problems(doc, model, resolved)
    problems += _contiguity_problems(doc, model, resolved)
    problems += _logical_problems(doc, model, resolved)
    return resolved, _dedupe(problems)


def _fill_server_indexes(nodes: list["Node"]) -> list["Node"]:
    position: dict[int, int] = {}
    resolved = []
    for node in nodes:
        pod = node.super_pod
        assert pod is not None
        index = position.get(pod, 0)
        position[pod] = index + 1
        resolved.append(node if node.server_index is not None else replace(node, server_index=index))
    return resolved


def _index_problems(doc: YamlDocument, model: "InventoryModel", nodes: list["Node"]) -> list[Located]:
    problems = []
    seen: dict[tuple[int, int], "Node"] = {}
    count: dict[int, int] = {}
    for node in nodes:
        assert node.super_pod is not None and node.server_index is not None
        where = _first_key(node.entry, model)
        count[node.super_pod] = count.get(node.super_pod, 0) + 1
        if node.server_index >= A3_SUPERPOD_MAX_SERVERS:
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "server_index"),
                    f"{node.name} gets server index {node.server_index}; a super-pod's servers are numbered 0-{A3_SUPERPOD_MAX_SERVERS - 1}",
                )
            )
            continue
        key = (node.super_pod, node.server_index)
        if key in seen:
            other = seen[key]
            problems.append(
                doc.problem(
                    where,
                    f"{node.name} and {other.name} are both server {node.server_index} of super-pod {node.super_pod}: their dies get the same SDIDs, which HCCL refuses (EI0014 'devices have same superDeviceId'); give each server its own server_index",
                )
            )
        seen.setdefault(key, node)
    for pod, total in count.items():
        if total > A3_SUPERPOD_MAX_SERVERS:
            first = next(node for node in nodes if node.super_pod == pod)
            problems.append(
                doc.problem(
                    ("nodes", first.entry, "super_pod"),
                    f"super-pod {pod} has {total} servers; an A3 super-pod holds at most {A3_SUPERPOD_MAX_SERVERS}",
                )
            )
    return problems


def _contiguity_problems(doc: YamlDocument, model: "InventoryModel", nodes: list["Node"]) -> list[Located]:
    problems = []
    finished: set[str] = set()
    current: Optional[str] = None
    for node in nodes:
        key = node.pod_key
        assert key is not None
        if key != current:
            if key in finished:
                problems.append(
                    doc.problem(
                        _first_key(node.entry, model),
                        f"{node.name} is in super-pod {key}, whose servers are listed earlier: list a pod's servers together (HCCL wants them contiguous in the rank table, and torchrun's node ranks follow this file's order)",
                    )
                )
            if current is not None:
                finished.add(current)
            current = key
    return problems


def _logical_problems(doc: YamlDocument, model: "InventoryModel", nodes: list["Node"]) -> list[Located]:
    problems = []
    physical_of: dict[str, "Node"] = {}
    for node in nodes:
        if node.logical_super_pod is None:
            continue
        first = physical_of.setdefault(node.logical_super_pod, node)
        if first.super_pod != node.super_pod:
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "logical_super_pod"),
                    f"logical super-pod '{node.logical_super_pod}' would join physical super-pods {first.super_pod} ({first.name}) and {node.super_pod} ({node.name}): a logical pod only splits one physical pod (HCCL would pick the HCCS vNIC link between them and both ends time out)",
                )
            )
    names = {str(node.super_pod) for node in nodes if node.logical_super_pod is None}
    for node in nodes:
        if node.logical_super_pod is not None and node.logical_super_pod in names:
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "logical_super_pod"),
                    f"logical super-pod '{node.logical_super_pod}' has the name of physical super-pod {node.logical_super_pod}, used by other servers: the rank table's super_pod_id must be unique per pod",
                )
            )
    return problems


def _dedupe(problems: list[Located]) -> list[Located]:
    """Each problem once (a group's subnets are checked once per rail and range)."""
    seen = set()
    out = []
    for problem in problems:
        key = (problem.line, problem.path, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def reserved_range_problems(
    doc: YamlDocument,
    model: "InventoryModel",
    groups: Sequence["AddressGroup"],
    nodes: Sequence["Node"],
    product: Product,
) -> list[Located]:
    """Device subnets inside ranges the driver reserves (A3: the HCCS vNIC ranges), located at the
    subnet that the inventory writes, naming the range and why."""
    if product.dies_per_npu == 1:
        return []
    in_superpod = any(node.super_pod is not None for node in nodes)
    ranges = [(ipaddress.IPv4Network(text), why) for text, why in reserved_device_ranges(product, in_superpod)[1:]]
    problems = []
    net = model.device_network
    for group in groups:
        for rail, subnet in enumerate(group.subnets):
            for reserved, why in ranges:
                if subnet.overlaps(reserved):
                    path = _subnet_path(net, group, rail)
                    problems.append(
                        doc.problem(
                            path,
                            f"device subnet {subnet} lies in {reserved}, {why}; choose device subnets outside {reserved}",
                        )
                    )
    return _dedupe(problems)


def _subnet_path(net, group: "AddressGroup", rail: int) -> tuple:
    """Where the inventory writes this group's subnet ``rail``."""

    form = form_of(net)
    if form == RULE:
        return ("device_network", "rule", "supernet")
    if form == EXPLICIT:
        entry = net.groups[group.index]
        return (
            ("device_network", "groups", group.index, "subnets", rail)
            if entry.subnets
            else ("device_network", "groups", group.index, "subnet")
        )
    if net.subnets:
        return ("device_network", "subnets", rail)
    return ("device_network", "subnet") if net.subnet is not None else ("device_network",)
