"""The inventory a lab hands to ``ascendprep plan/apply/verify`` (format: the inventory contract).

Key and known_hosts are written as paths relative to the inventory's folder, so the lab dir can
be copied elsewhere and still work. Nodes are one host-range entry (``node[1-4]``).
"""

from __future__ import annotations

from typing import Any

import yaml

from ascendprep.inventory.products import CONVENTIONAL_910_SUBNETS
from ascendprep.lab.hostpython import HostPython
from ascendprep.lab.spec import FIRST_NODE_HOST, LabSpec, device_pool, host_range


def inventory_data(spec: LabSpec, python: HostPython, *, key: str, known_hosts: str) -> dict[str, Any]:
    nodes = spec.node_list()
    npus = nodes[0].npus
    network = spec.network.network_address
    first_host = int(str(network).split(".")[-1]) + FIRST_NODE_HOST
    host_prefix = ".".join(str(network).split(".")[:3]) + "."
    if spec.product == "atlas-800":
        device_network: dict[str, Any] = {"subnets": list(CONVENTIONAL_910_SUBNETS)}
    elif spec.product == "atlas-a3":
        # the two dies of an NPU in different subnets (die planes), both outside the HCCS-reserved
        # 192.0.0.0/8 the driver refuses inside a super-pod (docs/a3-superpod.md §2)
        half = (npus + 1) // 2
        device_network = {
            "subnets": [device_pool(len(nodes), half, "10.20.0.0"), device_pool(len(nodes), half, "10.21.0.0")],
            "detect": "peer",
        }
    else:
        device_network = {"subnet": device_pool(len(nodes), npus), "gateway": None, "detect": "peer"}
    software: dict[str, Any] = {
        "cann": spec.versions.cann,
        "driver": spec.versions.driver,
        "firmware": spec.versions.firmware,
    }
    if python.torch is not None:
        software["torch"] = python.torch
    software["torch_npu"] = spec.versions.torch_npu
    software["python"] = python.version
    software["python_path"] = python.executable
    return {
        "name": spec.name,
        "product": spec.product,
        "npus_per_node": npus,
        "device_network": device_network,
        "ssh": {
            "user": "root",
            "port": 22,
            "key": key,
            "known_hosts": known_hosts,
            "jump_host": None,
            "forks": 64,
            "connect_timeout": 10,
            "command_timeout": 120,
            "sudo": False,
        },
        "nodes": _node_entries(spec, len(nodes), host_prefix, first_host),
        "firewall": "leave",
        "software": software,
    }


def _node_entries(spec: LabSpec, count: int, host_prefix: str, first_host: int) -> list[dict[str, Any]]:
    """One host-range entry, or on an A3 lab in super-pods one per pod with its ``super_pod``
    (server indexes count up from 0 within the entry, as the simulator numbers them)."""
    pods = [spec.super_pod_of(index) for index in range(1, count + 1)]
    if not pods or pods[0] is None:
        return [
            {"name": host_range("node", 1, count), "host": host_range(host_prefix, first_host + 1, first_host + count)}
        ]
    entries = []
    start = 0
    for stop in range(1, count + 1):
        if stop == count or pods[stop]["id"] != pods[start]["id"]:
            entries.append(
                {
                    "name": host_range("node", start + 1, stop),
                    "host": host_range(host_prefix, first_host + start + 1, first_host + stop),
                    "super_pod": pods[start]["id"],
                }
            )
            start = stop
    return entries


def render_inventory(spec: LabSpec, python: HostPython, *, key: str, known_hosts: str) -> str:
    header = (
        f"# Inventory of the ascendprep lab '{spec.name}' ({len(spec.node_list())} simulated {spec.product} nodes).\n"
        f"# Written by 'ascendprep lab up'; removed by 'ascendprep lab down --name {spec.name}'.\n"
    )
    body = yaml.safe_dump(
        inventory_data(spec, python, key=key, known_hosts=known_hosts), sort_keys=False, default_flow_style=False
    )
    return header + body
