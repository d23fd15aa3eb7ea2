"""The HCCL rank table 2.0 for Ascend 950 clusters, with the factory topology file beside it.

Ascend 950's HCCL (``libhccl_v2.so``) reads only version 2.0 (HCCL user guide, hicann/hccl
``docs/zh/user_guide/cluster_info_config/rank_table_config_a5.md``): a flat ``rank_list`` of
integer ids, each rank with a ``level_list`` whose layer 0 is the server, described by the factory
topology file (``/usr/local/Ascend/driver/topo/950/<product>.json``, ``net_type``
``TOPO_FILE_DESC``), and whose addresses are the NPU's UB **EIDs**, one address list entry per
die with that die's ports written ``"die/port"``. IPv4 addresses belong to host NICs only: a
cluster of several servers gets a layer 1 (``CLOS``, instance ``cluster``) with each node's host
address bound to the host port ``d2h``, as in the guide's EID example.

The EIDs are read from the hosts (``hccn_tool -g -dev_info -i N``), so the builder takes them as
input: per node, per NPU, the physical device id and the addresses (:class:`NpuUb`). Every table
built here is held to :mod:`ascendprep.inventory.ranktable2_rules` before it is written.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ascendprep.inventory.ranktable2_rules import HOST_PORT_NAME, LAYER0_NET_TYPE, VERSION

if TYPE_CHECKING:
    from ascendprep.facts.model import HostFacts
    from ascendprep.inventory.load import Inventory

#: The layer-1 instance every server of a multi-server table shares (the guide's example name).
CLUSTER_INSTANCE = "cluster"

_COLON_EID = re.compile(r"^[0-9a-fA-F]{4}(:[0-9a-fA-F]{4}){7}$")
_PLAIN_EID = re.compile(r"^[0-9a-fA-F]{32}$")
_DIE_PORT = re.compile(r"^[0-9]+/[0-9]+$")


class RankTableInputError(ValueError):
    """The inputs cannot make a 2.0 table (an NPU without addresses, a malformed EID)."""


def normalise_eid(text: str) -> str:
    """An EID as the rank table wants it: 32 lower-case hex digits, no colons. ``-dev_info`` prints
    ``0000:0000:0000:0000:0010:0000:dfdf:0020`` per ``udmaN``; HCOMM's ``EidToAddr`` checks the
    length (32) and then the digits (``address_info.cc``)."""
    value = text.strip()
    if _COLON_EID.match(value):
        value = value.replace(":", "")
    if not _PLAIN_EID.match(value):
        raise RankTableInputError(
            f"{text!r} is not an EID (8 colon-separated groups of 4 hex digits, or 32 hex digits)"
        )
    return value.lower()


@dataclass(frozen=True)
class DieAddress:
    """One UB address of an NPU: its EID and the ports (``"die/port"``, all on one die) it serves."""

    eid: str
    ports: tuple[str, ...]
    plane_id: str = "0"


@dataclass(frozen=True)
class NpuUb:
    """What the table needs of one NPU: its physical device id and its UB addresses."""

    device_id: int
    addresses: tuple[DieAddress, ...]


def addresses_from_dev_info(ub_ports: Sequence[tuple[int, int]], eids: Sequence[str]) -> tuple[DieAddress, ...]:
    """An NPU's rank-table addresses from ``hccn_tool -g -dev_info -i N``: its UB ports (the port
    table's ``UDie ID``/``Port ID`` rows, in the order printed) and its EIDs (the EID table, in
    order), one address per port.

    The pairing is inferred, not documented: the vendor's ``-dev_info`` example lists ports 0/4,
    0/5, 0/6 and EIDs ``...dfdf:0020``, ``...0028``, ``...0030``, ``...0051``, and the HCCL guide's
    2.0 example binds exactly the first three, in that order, to ports ``0/4``, ``0/5``, ``0/6``.
    An EID beyond the UB ports is left out; fewer EIDs than ports is refused."""
    if len(eids) < len(ub_ports):
        raise RankTableInputError(f"{len(ub_ports)} UB ports but only {len(eids)} EIDs in -dev_info")
    return tuple(DieAddress(normalise_eid(eid), (f"{die}/{port}",)) for (die, port), eid in zip(ub_ports, eids))


def _address(address: DieAddress, where: str) -> dict[str, Any]:
    if not address.ports or not all(_DIE_PORT.match(port) for port in address.ports):
        raise RankTableInputError(f"{where}: ports {list(address.ports)} must be 'die/port' values such as '0/4'")
    if len({port.split("/")[0] for port in address.ports}) > 1:
        raise RankTableInputError(f"{where}: EID {address.eid} spans two dies; each die has its own address")
    return {
        "addr_type": "EID",
        "addr": normalise_eid(address.eid),
        "ports": list(address.ports),
        "plane_id": address.plane_id,
    }


def build_rank_table_v2(
    inventory: "Inventory", ub: Mapping[str, Mapping[int, NpuUb]], host_addresses: Mapping[str, str]
) -> dict[str, Any]:
    """The 2.0 table: ranks in inventory order (node by node, NPU by NPU, as torchrun numbers
    them), ``local_id`` the NPU's index in its server, layer 0 the server (its node name) with
    the NPU's EIDs, and with more than one server a layer 1 of host addresses.

    ``ub``: per node name, per NPU index, the NPU's :class:`NpuUb`; ``host_addresses``: per node
    name, the IPv4 address HCCL uses on the host (needed with more than one server)."""
    several = len(inventory.nodes) > 1
    ranks: list[dict[str, Any]] = []
    for node in inventory.nodes:
        per_npu = ub.get(node.name, {})
        host = host_addresses.get(node.name)
        if several and not host:
            raise RankTableInputError(f"{node.name}: no host IPv4 address for the rank table's layer 1")
        for npu in range(node.npus):
            where = f"{node.name} NPU {npu}"
            item = per_npu.get(npu)
            if item is None or not item.addresses:
                raise RankTableInputError(f"{where}: no UB address (EID) was read for it")
            levels: list[dict[str, Any]] = [
                {
                    "net_layer": 0,
                    "net_instance_id": node.name,
                    "net_type": LAYER0_NET_TYPE,
                    "net_attr": "",
                    "rank_addr_list": [_address(a, where) for a in item.addresses],
                }
            ]
            if several:
                levels.append(
                    {
                        "net_layer": 1,
                        "net_instance_id": CLUSTER_INSTANCE,
                        "net_type": "CLOS",
                        "net_attr": "",
                        "rank_addr_list": [
                            {"addr_type": "IPV4", "addr": host, "ports": [HOST_PORT_NAME], "plane_id": "0"}
                        ],
                    }
                )
            ranks.append(
                {
                    "rank_id": len(ranks),
                    "local_id": npu,
                    "device_id": item.device_id,
                    "level_list": levels,
                }
            )
    return {"status": "completed", "version": VERSION, "rank_count": len(ranks), "rank_list": ranks}


def topology_files(inventory: "Inventory") -> Sequence[str]:
    """The factory topology files HCCL will read on the inventory's servers (one per card count)."""
    product = inventory.product
    paths = {product.topology_file(node.npus) for node in inventory.nodes}
    return sorted(path for path in paths if path)


def rank_table_v2_from_facts(
    inventory: "Inventory", facts: Mapping[str, "HostFacts"]
) -> tuple[Optional[dict[str, Any]], list[str]]:
    """The 2.0 table from what the hosts report: each NPU's UB ports and EIDs (``-dev_info``),
    its physical id (``npu-smi info -m`` ``Chip Phy-ID``, else the NPU id) and the node's host
    address; or None and why not (a node not read, an NPU without UB ports or EIDs)."""
    ub: dict[str, dict[int, NpuUb]] = {}
    missing: list[str] = []
    for node in inventory.nodes:
        host = facts.get(node.name)
        if host is None:
            missing.append(f"{node.name}: not read")
            continue
        physical = {c.npu_id: c.chip_phy_id for c in host.npu_chips or () if c.chip_phy_id is not None}
        for npu in range(node.npus):
            npu_facts = host.npus.get(npu)
            dev_info = npu_facts.ub.dev_info if npu_facts is not None and npu_facts.ub is not None else None
            if dev_info is None:
                missing.append(f"{node.name} NPU {npu}: -dev_info not read")
                continue
            ports = [(p.udie, p.port) for p in dev_info.ports if p.port_type.upper() == "UB"]
            if not ports:
                missing.append(f"{node.name} NPU {npu}: -dev_info lists no UB port")
                continue
            try:
                addresses = addresses_from_dev_info(ports, dev_info.eids)
            except RankTableInputError as exc:
                missing.append(f"{node.name} NPU {npu}: {exc}")
                continue
            ub.setdefault(node.name, {})[npu] = NpuUb(physical.get(npu, npu), addresses)
    if missing:
        return None, missing
    hosts = {node.name: node.host for node in inventory.nodes if _is_ipv4(node.host)}
    try:
        return build_rank_table_v2(inventory, ub, hosts), []
    except RankTableInputError as exc:
        return None, [str(exc)]


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
