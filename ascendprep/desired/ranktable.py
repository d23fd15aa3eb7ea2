"""The HCCL rank table: version 1.0, and 1.2 for A3 servers in super-pods.

Shapes from ``docs/ascend-reference.md`` §6 (1.0) and ``docs/a3-superpod.md`` §1 (1.2); the
rules HCCL's parser applies to them are in :mod:`ascendprep.inventory.ranktable_rules`, which checks every
table before it is planned.

* All values are strings. ``rank_id`` runs 0..N-1, contiguous per server, servers in inventory
  order, which is also torchrun's node-rank order (``NODE_RANK`` in set_env.sh), so that
  torch_npu's global rank (node_rank × nproc + local_rank) is the table's ``rank_id``.
* ``server_id`` is the node's management address (as MindSpore's hccl_tools does) when every
  node has its own and it fits HCCL's 64 characters; otherwise (one host on two SSH ports, a long
  host name) every server is named by its node name, which the inventory keeps unique and short.
* ``device_id`` is the physical device: the NPU id, or on A3 the die id (``npu*2 + chip``).
* A3: ``host_ip`` when the node is given by address (op-retry needs it; HCCL takes only an IP
  literal). In super-pods (the inventory's ``super_pod``): ``version`` "1.2", every device's
  ``super_device_id`` (its SDID), ``super_pod_list`` with each (logical) pod's servers, and with
  op-retry enabled ``backup_device_ip`` = the other die of the same NPU.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ascendprep.inventory import superpods as superpod_rules
from ascendprep.inventory.hccl_env import op_retry_levels

if TYPE_CHECKING:
    from ascendprep.facts.model import SuperPodDie
    from ascendprep.inventory.addressing import IpPlan
    from ascendprep.inventory.load import Inventory
    from ascendprep.inventory.model import Node

#: The longest ``server_id`` HCCL accepts (docs/ranktable-rules.md R6).
SERVER_ID_MAX_CHARS = 64


@dataclass(frozen=True)
class DieIdentity:
    """One die's place in a super-pod, as the rank table needs it.

    Planned from the inventory (:func:`planned_identities`), or read from a server
    (``npu-smi info -t spod-info``: ``SDID``, ``Super Pod ID``) and passed in instead, so the
    table can be built from what the hardware says.
    """

    die: int
    sdid: int
    #: The rank table's ``super_pod_id``: the logical pod's name, else the physical pod id.
    super_pod_id: str


def planned_identities(node: "Node") -> tuple[DieIdentity, ...]:
    """The SDIDs the inventory's ``super_pod``/``server_index`` give this node's dies."""
    if node.super_pod is None or node.server_index is None:
        return ()
    pod = node.pod_key
    assert pod is not None
    return tuple(DieIdentity(die, superpod_rules.sdid(node.server_index, die), pod) for die in range(node.npus))


def identities_from_facts(node: "Node", superpod: Mapping[int, "SuperPodDie"]) -> tuple[DieIdentity, ...]:
    """The dies' identities as ``npu-smi info -t spod-info`` reported them (``HostFacts.superpod``),
    in the rank table's terms: the pod is the node's logical pod when it has one."""
    return tuple(
        DieIdentity(
            devid, die.sdid, node.logical_super_pod if node.logical_super_pod is not None else str(die.super_pod_id)
        )
        for devid, die in sorted(superpod.items())
        if devid < node.npus
    )


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def server_ids(nodes: Sequence["Node"]) -> dict[str, str]:
    """Each node's ``server_id``: the management address, or the node name for all when the
    addresses would repeat or run past 64 characters (HCCL refuses both: R6)."""
    hosts = [node.host for node in nodes]
    if len(set(hosts)) == len(hosts) and all(len(host) <= SERVER_ID_MAX_CHARS for host in hosts):
        return {node.name: node.host for node in nodes}
    return {node.name: node.name for node in nodes}


def op_retry_enabled(env: Mapping[str, str]) -> bool:
    """Whether ``HCCL_OP_RETRY_ENABLE`` turns retry on at any level ("L1:1,L2:0")."""

    try:
        levels = op_retry_levels(env.get("HCCL_OP_RETRY_ENABLE"))
    except ValueError:
        return False
    return any(levels.values())


def build_rank_table(
    inventory: "Inventory", plan: "IpPlan", identities: Optional[Mapping[str, Sequence[DieIdentity]]] = None
) -> dict[str, Any]:
    """The rank table for ``inventory`` with ``plan``'s device IPs.

    ``identities``: per node name, its dies' super-pod identities as read from the server; by
    default the ones the inventory plans.
    """
    product = inventory.product
    a3 = product.dies_per_npu > 1
    in_pods = a3 and any(node.super_pod is not None for node in inventory.nodes)
    retry = a3 and op_retry_enabled(inventory.model.env)
    ids = server_ids(inventory.nodes)
    rank = 0
    servers = []
    pods: dict[str, list[dict[str, str]]] = {}
    for node in inventory.nodes:
        addresses = {address.npu: address.ip for address in plan.by_node.get(node.name, [])}
        dies = {
            d.die: d for d in (identities.get(node.name, ()) if identities is not None else planned_identities(node))
        }
        devices = []
        for npu in sorted(addresses):
            device: dict[str, str] = {"device_id": str(npu)}
            if in_pods and npu in dies:
                device["super_device_id"] = str(dies[npu].sdid)
            device["device_ip"] = addresses[npu]
            partner = npu ^ 1
            if retry and partner in addresses:
                device["backup_device_ip"] = addresses[partner]
            device["rank_id"] = str(rank)
            devices.append(device)
            rank += 1
        server: dict[str, Any] = {"server_id": ids[node.name]}
        if a3 and _is_ip(node.host):
            server["host_ip"] = node.host
        server["device"] = devices
        servers.append(server)
        if in_pods:
            pod = next(iter(dies.values())).super_pod_id if dies else node.pod_key
            pods.setdefault(str(pod), []).append({"server_id": ids[node.name]})
    if not in_pods:
        return {"version": "1.0", "server_count": str(len(servers)), "server_list": servers, "status": "completed"}
    return {
        "version": "1.2",
        "server_count": str(len(servers)),
        "server_list": servers,
        "super_pod_list": [{"super_pod_id": pod, "server_list": members} for pod, members in pods.items()],
        "status": "completed",
    }


def render_rank_table(table: dict[str, Any]) -> str:
    """The file apply writes: ``json.dumps(table, indent=2)`` and a newline. Every host's copy is
    compared by its sha256, so this text must not change between releases."""
    return json.dumps(table, indent=2) + "\n"
