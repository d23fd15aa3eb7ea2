"""A rank table (HCCL's ``RANK_TABLE_FILE``, versions 1.0 and 1.2) read as what is there.

The table says which servers there are (``server_list[].server_id``, ``host_ip``), their devices
(``device_id``, ``device_ip``, ``rank_id``) and, in 1.2, the super-pods (``super_pod_list``)
and each die's ``super_device_id`` (SDID). It says nothing of netmasks, gateways or detect IPs:
those come from the hosts when they are read too, else the compactor chooses the smallest
subnet that holds the addresses and says so.

A table HCCL would refuse to load is refused here, naming HCCL's rule
(:func:`ascendprep.inventory.ranktable_rules.check_rank_table`, docs/ranktable-rules.md): an
inventory that reproduced it would reproduce a broken job.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, Optional

from ascendprep.adopt.seen import Conflict, NodeSeen, NpuSeen, Seen
from ascendprep.base.jsoninput import read_json_file
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.inventory.model import NAME_RE
from ascendprep.inventory.products import PRODUCTS, Product
from ascendprep.inventory.ranktable_rules import check_rank_table
from ascendprep.inventory.superpods import sdid

#: A rank table states device IPs only.
_IP_ONLY = frozenset(("ip",))


def product_of_table(table: Any) -> Optional[Product]:
    """The product a table implies: super-pods (1.2) exist only on A3; otherwise it does not say."""
    if isinstance(table, dict) and table.get("version") == "1.2":
        return PRODUCTS["atlas-a3"]
    return None


def read_rank_table(path: Path, product: Optional[Product]) -> Seen:
    """The servers, device addresses, ranks and super-pods of a rank table file."""
    return rank_table_seen(read_json_file(path), str(path), product)


def rank_table_seen(table: Any, file: str, product: Optional[Product]) -> Seen:
    chosen = product or product_of_table(table) or PRODUCTS["atlas-a2"]
    violations = check_rank_table(table, chosen)
    if violations:
        raise InputError(
            Located(file, None, "", f"HCCL would refuse this rank table ({chosen.title}): rule {violation}")
            for violation in violations
        )
    pods: dict[str, str] = {}
    for pod in table.get("super_pod_list") or []:
        for member in pod.get("server_list") or []:
            pods[member["server_id"]] = pod["super_pod_id"]
    problems: list[Located] = []
    conflicts: list[Conflict] = []
    entries: list[tuple[int, NodeSeen]] = []
    for s, server in enumerate(table["server_list"]):
        where = f"server_list[{s}]"
        server_id = server["server_id"]
        host = server.get("host_ip") if isinstance(server.get("host_ip"), str) else None
        host = host or server_id
        name = server_id if _is_ipv4(server_id) else server_id.split(".")[0]
        if not NAME_RE.match(name) or not (_is_ipv4(host) or NAME_RE.match(host.split(".")[0])):
            problems.append(Located(file, None, where, f"server_id '{server_id[:64]}' cannot be a node name or host"))
            continue
        npus: dict[int, NpuSeen] = {}
        ranks: list[tuple[int, int]] = []
        sdids: dict[int, int] = {}
        for device in server.get("device") or []:
            devid = int(device["device_id"])
            address = device.get("device_ip")
            if isinstance(address, str) and not _is_ipv4(address):
                problems.append(
                    Located(
                        file,
                        None,
                        f"{where}.device_id {devid}",
                        f"device_ip {address[:64]} is not IPv4: {chosen.title} device IPs are IPv4 (hccn_tool -ip -s address)",
                    )
                )
                continue
            npus[devid] = NpuSeen(devid, ip=address if isinstance(address, str) else None, said=_IP_ONLY)
            ranks.append((int(device["rank_id"]), devid))
            if isinstance(device.get("super_device_id"), str):
                sdids[devid] = int(device["super_device_id"])
        pod = pods.get(server_id)
        super_pod: Optional[int] = None
        if pod is not None:
            if re.fullmatch(r"[0-9]{1,9}", pod):
                super_pod = int(pod)
            else:
                conflicts.append(
                    Conflict(
                        "logical_super_pod",
                        f"{name}: super_pod_id '{pod[:64]}' is a logical pod; give the physical Super Pod ID by reading the hosts (--hosts)",
                        name,
                    )
                )
        server_index = _server_index(sdids)
        if sdids and server_index is None:
            conflicts.append(
                Conflict(
                    "sdid",
                    f"{name}: super_device_ids {sorted(sdids.values())[:4]}… are not one server's SDIDs as the A3 driver "
                    "numbers them (server index << 22 | NPU << 18 | chip << 16 | die, docs/a3-superpod.md §2)",
                    name,
                )
            )
        ranks.sort()
        if [devid for _, devid in ranks] != sorted(npus):
            conflicts.append(
                Conflict(
                    "rank_order",
                    f"{name}: ranks are not in device-id order ({', '.join(f'rank {r}: device {d}' for r, d in ranks[:4])}…); "
                    "an inventory numbers ranks server by server, device by device",
                    name,
                )
            )
        first_rank = ranks[0][0] if ranks else 1 << 40
        node = NodeSeen(
            name=name,
            host=host,
            npus=npus,
            super_pod=super_pod,
            server_index=server_index if super_pod is not None else None,
            where=f"{file} {where}",
            ranks={devid: rank for rank, devid in ranks},
            sdids=sdids,
            sdids_from=f"{file} {where}" if sdids else "",
        )
        entries.append((first_rank, node))
    if problems:
        raise InputError(problems)
    ordered = [node for _, node in sorted(entries, key=lambda pair: pair[0])]
    if ordered != [node for _, node in entries]:
        conflicts.append(
            Conflict(
                "rank_order",
                "server_list is not in rank order; the imported inventory lists the servers by their first rank",
                error=False,
            )
        )
    return Seen(
        nodes=ordered,
        product=(product or product_of_table(table) or None) and chosen.id,
        sources=[f"rank table {file}"],
        conflicts=conflicts,
        rank_table=True,
    )


def _server_index(sdids: dict[int, int]) -> Optional[int]:
    """The server index every die's SDID names (the driver's numbering, inverted), or None."""
    indexes = {value >> 22 for value in sdids.values()}
    if len(indexes) != 1:
        return None
    index = indexes.pop()
    return index if all(value == sdid(index, devid) for devid, value in sdids.items()) else None


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
