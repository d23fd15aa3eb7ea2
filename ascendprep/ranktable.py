"""The HCCL rank table (version 1.0), as ``docs/ascend-reference.md`` §6 describes it.

All values are strings; ``rank_id`` runs 0..N-1, contiguous per server, servers in inventory
order; ``server_id`` is the node's management address (as MindSpore's hccl_tools does);
``device_id`` is the physical NPU id. A3 servers also carry ``host_ip`` (needed for op-retry).
"""

from __future__ import annotations

import json
from typing import Any

from ascendprep.inventory import Inventory
from ascendprep.ipplan import IpPlan


def build_rank_table(inventory: Inventory, plan: IpPlan) -> dict[str, Any]:
    rank = 0
    servers = []
    for node in inventory.nodes:
        devices = []
        for address in plan.by_node.get(node.name, []):
            devices.append({"device_id": str(address.npu), "device_ip": address.ip, "rank_id": str(rank)})
            rank += 1
        server: dict[str, Any] = {"server_id": node.host, "device": devices}
        if inventory.product.id == "atlas-a3":
            server["host_ip"] = node.host
        servers.append(server)
    return {"version": "1.0", "server_count": str(len(servers)), "server_list": servers, "status": "completed"}


def render_rank_table(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=2) + "\n"
