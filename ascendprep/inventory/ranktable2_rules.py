"""The rules HCCL's rank table 2.0 parser applies (Ascend 950), checked before a table is written.

The Ascend 950 loads ``libhccl_v2.so``, which accepts only version 2.0 and refuses anything else
with EI0014 (``version[x] ... expect 2.0``). Rule numbers V1-V9 are those of ``docs/ascend950.md``;
their sources are the HCCL user guide (hicann/hccl ``docs/zh/user_guide/cluster_info_config/
rank_table_config_a5.md``) and the HCOMM parser (``src/coll_communicator_mgr/rank_graph/
rank_table_info/*.cc``: ``rank_table_info.cc``, ``json_parser.cc``, ``new_rank_info.cc``,
``rank_level_info.cc``, ``address_info.cc``).

:func:`check_rank_table_v2` takes any JSON value (hostile or ours) and returns every rule it
breaks, each naming the rank and level it is in.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Optional, TypeGuard

VERSION = "2.0"
#: V8: the file HCCL reads is at most 1 GB (1.x: 40 MiB).
RANK_TABLE_V2_MAX_BYTES = 1024 * 1024 * 1024
#: V3: ``rank_count`` range.
MAX_RANKS = 65536
#: V4: physical ``device_id`` and in-server ``local_id`` range.
MAX_DEVICE_ID = 64
#: V4: the NPU port HCCL uses when ``device_port``/``host_port`` are absent.
DEFAULT_DEVICE_PORT = 16666
#: V5: levels per rank, and the ``net_layer`` range.
MAX_LEVELS = 8
MAX_NET_LAYER = 7
NET_INSTANCE_ID_MAX_CHARS = 1024
#: V5: layer 0 is described by the factory topology file; other layers may be a Clos fabric too.
#: The parser also knows the mesh and server kinds below (``rank_level_info.cc``).
LAYER0_NET_TYPE = "TOPO_FILE_DESC"
NET_TYPES = ("CLOS", "TOPO_FILE_DESC", "1DMESH", "2DMESH", "A3_SERVER", "A2_AX_SERVER")
#: V6: addresses per level, address length, ports per address, a port's length, ``plane_id``.
MAX_ADDRESSES = 24
ADDR_MAX_CHARS = 256
MAX_PORTS = 16
PORT_MAX_CHARS = 32
PLANE_ID_MAX_CHARS = 1024
ADDR_TYPES = ("EID", "IPV4", "IPV6")
#: V2: the keys the 2.0 parser reads as JSON integers (``get<s64>``); 1.x wrote them as strings.
INTEGER_KEYS = ("rank_count", "rank_id", "local_id", "device_id", "device_port", "host_port", "net_layer")
#: V9: 1.x keys that have no place in 2.0 (servers and pods are ``net_instance_id``s per level).
V1_KEYS = ("server_count", "server_list", "server_id", "device_ip", "super_device_id", "super_pod_list", "device")

_EID = re.compile(r"^[0-9a-fA-F]{32}$")
_DIE_PORT = re.compile(r"^([0-9]+)/([0-9]+)$")
#: The host-NIC port name of the vendor's example (a host IPv4 address bound to ``["d2h"]``).
HOST_PORT_NAME = "d2h"


@dataclass(frozen=True)
class Violation:
    """One broken 2.0 rule (V1-V9), with the rank and level it was found in."""

    rule: str
    message: str
    rank: Optional[int] = None
    level: Optional[int] = None

    def __str__(self) -> str:
        where = ""
        if self.rank is not None:
            where = f"rank_list[{self.rank}]" + (f".level_list[{self.level}]" if self.level is not None else "") + ": "
        return f"{self.rule}: {where}{self.message}"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check_rank_table_v2(table: Any, compact_bytes: Optional[int] = None) -> list[Violation]:
    """Every 2.0 rule ``table`` breaks; ``compact_bytes``: the size of the file as written (V8)."""
    if not isinstance(table, dict):
        return [Violation("V1", "the rank table must be a JSON object")]
    found: list[Violation] = []
    if table.get("version") != VERSION:
        found.append(Violation("V1", f'version must be "2.0" (libhccl_v2 refuses {table.get("version")!r}: EI0014)'))
    if "status" in table and table["status"] not in ("completed", "initializing"):
        found.append(Violation("V1", f"status must be completed or initializing, not {table['status']!r}"))
    if "detour" in table and table["detour"] not in ("true", "false", ""):
        found.append(Violation("V1", f'detour must be "true", "false" or empty, not {table["detour"]!r}'))
    found += [Violation("V9", f"{key} is a 1.x key; 2.0 has none") for key in V1_KEYS if key in table]
    if compact_bytes is not None and compact_bytes > RANK_TABLE_V2_MAX_BYTES:
        found.append(Violation("V8", f"the file is {compact_bytes} bytes; HCCL reads at most 1 GB"))
    ranks = table.get("rank_list")
    count = table.get("rank_count")
    if not _is_int(count):
        found.append(Violation("V2", f"rank_count must be a JSON integer, not {count!r}"))
    if not isinstance(ranks, list) or not ranks:
        found.append(Violation("V3", "rank_list must be a non-empty list"))
        return found
    if _is_int(count) and not (1 <= count <= MAX_RANKS and count == len(ranks)):
        found.append(
            Violation("V3", f"rank_count {count} must be 1..{MAX_RANKS} and equal the {len(ranks)} ranks listed")
        )
    rank_ids: list[int] = []
    local_ids: dict[str, dict[int, int]] = {}
    for index, rank in enumerate(ranks):
        if not isinstance(rank, dict):
            found.append(Violation("V3", "a rank must be a JSON object", index))
            continue
        found += _rank_rules(rank, index)
        if _is_int(rank.get("rank_id")):
            rank_ids.append(rank["rank_id"])
        server = _server_of(rank)
        local = rank.get("local_id")
        if server is not None and _is_int(local):
            seen = local_ids.setdefault(server, {})
            if local in seen:
                found.append(
                    Violation("V4", f"local_id {local} repeats rank {seen[local]}'s in server {server!r}", index)
                )
            seen.setdefault(local, index)
    if len(rank_ids) == len(ranks) and sorted(rank_ids) != list(range(len(ranks))):
        found.append(Violation("V3", f"rank_ids must be unique and exactly 0..{len(ranks) - 1}"))
    return found


def _server_of(rank: dict) -> Optional[str]:
    """The rank's layer-0 ``net_instance_id`` (its server, as 2.0 names servers)."""
    levels = rank.get("level_list")
    if isinstance(levels, list) and levels and isinstance(levels[0], dict) and levels[0].get("net_layer") == 0:
        instance = levels[0].get("net_instance_id")
        return instance if isinstance(instance, str) else None
    return None


def _rank_rules(rank: dict, index: int) -> list[Violation]:
    found = [
        Violation("V2", f"{key} must be a JSON integer, not {rank[key]!r}", index)
        for key in INTEGER_KEYS
        if key in rank and not _is_int(rank[key])
    ]
    for key in ("rank_id", "local_id", "device_id"):
        if key not in rank:
            found.append(Violation("V3" if key == "rank_id" else "V4", f"{key} is required", index))
    for key in ("device_id", "local_id"):
        value = rank.get(key)
        if _is_int(value) and not 0 <= value <= MAX_DEVICE_ID:
            found.append(Violation("V4", f"{key} {value} must be 0..{MAX_DEVICE_ID}", index))
    for key in ("device_port", "host_port"):
        value = rank.get(key)
        if _is_int(value) and not 1 <= value <= 65535:
            found.append(Violation("V4", f"{key} {value} must be 1..65535", index))
    found += [Violation("V9", f"{key} is a 1.x key; 2.0 has none", index) for key in V1_KEYS if key in rank]
    levels = rank.get("level_list")
    if not isinstance(levels, list) or not levels:
        return found + [Violation("V5", "level_list must be a non-empty list", index)]
    if len(levels) > MAX_LEVELS:
        found.append(Violation("V5", f"{len(levels)} levels; at most {MAX_LEVELS}", index))
    layers = [level.get("net_layer") for level in levels if isinstance(level, dict)]
    if layers and (
        layers[0] != 0 or any(not _is_int(a) or not _is_int(b) or a >= b for a, b in zip(layers, layers[1:]))
    ):
        found.append(Violation("V5", f"net_layer must start at 0 and ascend, got {layers}", index))
    for number, level in enumerate(levels):
        if not isinstance(level, dict):
            found.append(Violation("V5", "a level must be a JSON object", index, number))
            continue
        found += _level_rules(level, index, number)
    return found


def _level_rules(level: dict, index: int, number: int) -> list[Violation]:
    found = []
    layer = level.get("net_layer")
    if not _is_int(layer):
        found.append(Violation("V2", f"net_layer must be a JSON integer, not {layer!r}", index, number))
    if _is_int(layer) and not 0 <= layer <= MAX_NET_LAYER:
        found.append(Violation("V5", f"net_layer {layer} must be 0..{MAX_NET_LAYER}", index, number))
    instance = level.get("net_instance_id")
    if not isinstance(instance, str) or not 1 <= len(instance) <= NET_INSTANCE_ID_MAX_CHARS:
        found.append(
            Violation("V5", f"net_instance_id must be 1..{NET_INSTANCE_ID_MAX_CHARS} characters", index, number)
        )
    net_type = level.get("net_type")
    if layer == 0 and net_type != LAYER0_NET_TYPE:
        found.append(Violation("V5", f"net_type on layer 0 must be TOPO_FILE_DESC, not {net_type!r}", index, number))
    elif layer != 0 and net_type not in NET_TYPES:
        found.append(Violation("V5", f"net_type {net_type!r} is not one of {', '.join(NET_TYPES)}", index, number))
    addresses = level.get("rank_addr_list")
    if not isinstance(addresses, list) or not addresses:
        return found + [Violation("V6", "rank_addr_list must be a non-empty list", index, number)]
    if len(addresses) > MAX_ADDRESSES:
        found.append(Violation("V6", f"{len(addresses)} addresses; at most {MAX_ADDRESSES}", index, number))
    ports_seen: set[str] = set()
    for address in addresses:
        if not isinstance(address, dict):
            found.append(Violation("V6", "an address must be a JSON object", index, number))
            continue
        found += [Violation("V6", message, index, number) for message in _address_problems(address, ports_seen)]
    return found


def _address_problems(address: dict, ports_seen: set[str]) -> list[str]:
    problems = []
    kind, addr = address.get("addr_type"), address.get("addr")
    if kind not in ADDR_TYPES:
        problems.append(f"addr_type {kind!r} is not one of {', '.join(ADDR_TYPES)}")
    if not isinstance(addr, str) or not 1 <= len(addr) <= ADDR_MAX_CHARS:
        problems.append(f"addr must be 1..{ADDR_MAX_CHARS} characters")
    elif kind == "EID" and not _EID.match(addr):
        problems.append(f"EID {addr!r} must be 32 hex digits without colons")
    elif kind in ("IPV4", "IPV6"):
        try:
            parsed = ipaddress.ip_address(addr)
        except ValueError:
            parsed = None
        if parsed is None or parsed.version != (4 if kind == "IPV4" else 6):
            problems.append(f"{addr!r} is not an {kind} address")
    ports = address.get("ports")
    if not isinstance(ports, list) or not 1 <= len(ports) <= MAX_PORTS:
        return problems + [f"ports must list 1..{MAX_PORTS} ports"]
    dies = set()
    for port in ports:
        if not isinstance(port, str) or len(port) > PORT_MAX_CHARS:
            problems.append(f"port {port!r} must be text of at most {PORT_MAX_CHARS} characters")
            continue
        match = _DIE_PORT.match(port)
        if match is None and not (port == HOST_PORT_NAME and kind in ("IPV4", "IPV6")):
            problems.append(f'port {port!r} must be written die/port, such as "0/4"')
        if match is not None:
            dies.add(match.group(1))
        if port in ports_seen:
            problems.append(f"port {port} maps to two addresses on one layer")
        ports_seen.add(port)
    if kind == "EID" and len(dies) > 1:
        problems.append(f"one address spans dies {', '.join(sorted(dies))}: each die needs its own address")
    plane = address.get("plane_id", "0")
    if not isinstance(plane, str) or len(plane) > PLANE_ID_MAX_CHARS:
        problems.append(f"plane_id must be text of at most {PLANE_ID_MAX_CHARS} characters")
    return problems
