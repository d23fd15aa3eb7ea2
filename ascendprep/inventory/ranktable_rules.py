"""The rules HCCL's own parser applies to a rank table, checked before a table is planned.

Rule numbers and sources are those of ``docs/ranktable-rules.md`` (HCCL's concise parser for
versions 1.0 and 1.2, ``topoinfo_ranktableConcise.cc`` and ``config.cc``). Two halves:

* :func:`check_rank_table`: a table (any JSON value, hostile or ours) against every rule that
  can be decided from the file and the product. ``build_desired`` runs it on the table it is
  about to plan; a violation is a plan error (``ranktable.R6``), so a table HCCL would refuse
  to load (and torch_npu would then drop silently, falling back to root-info) is never written.
* :func:`inventory_problems`: the inventories that would produce such a table, refused at load
  with a located error that says what to change. Where the table can be written so that it
  passes instead (``server_id`` of a host listed twice, or longer than 64 characters, see
  :func:`ascendprep.desired.ranktable.server_ids`; ``host_ip`` of a node given by name is left out),
  it is.

Rules about the running job (R1 path, R2 status polling, R14 local device, R18 NIC addresses)
are checked as far as a file allows: the path's suffix, ``completed``, unique device ids per
server; R18 is the device-IP verify against the same plan.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ascendprep.base.yamlsource import Located, YamlDocument
from ascendprep.inventory.hccl_env import (
    hccl_env_problems,
    hccl_env_problems_950,
    op_retry_levels,
    ub_timeout_problems,
)
from ascendprep.inventory.products import Product

if TYPE_CHECKING:
    from ascendprep.inventory.model import InventoryModel, Node

#: R19: the compact JSON HCCL reads is at most 40 MiB.
RANK_TABLE_MAX_BYTES = 40 * 1024 * 1024
#: R6: ``server_id`` is at most 64 characters.
SERVER_ID_MAX_CHARS = 64
#: R9: ``rank_id``/``device_id`` are decimal strings up to 0xFFFFFFFF.
ID_MAX = 0xFFFFFFFF
#: R3: versions the concise parser reads (1.1 is the heterogeneous parser, absent the legacy one).
CONCISE_VERSIONS = ("1.0", "1.2")
PORT_KEYS = ("host_port", "device_port", "device_vnic_port", "backup_device_port")
_DECIMAL = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class Violation:
    """One broken rule: its number in docs/ranktable-rules.md, what HCCL says, and where."""

    rule: str
    message: str
    server: Optional[int] = None
    device: Optional[int] = None

    def __str__(self) -> str:
        where = ""
        if self.server is not None:
            where = (
                f"server_list[{self.server}]" + (f".device[{self.device}]" if self.device is not None else "") + ": "
            )
        return f"{self.rule}: {where}{self.message}"


def check_path(path: str) -> list[Violation]:
    """R1: HCCL loads only a path ending in ``.json``."""
    return (
        [] if path.endswith(".json") else [Violation("R1", f"{path}: HCCL loads only a file whose name ends in .json")]
    )


def _ip(text: Any) -> Optional[int]:
    """R7: the address family (4 or 6) when ``inet_pton`` accepts ``text`` as HCCL calls it (IPv6
    when the text has 2+ ':', else IPv4), None when it does not; 0 for the unspecified address."""
    if not isinstance(text, str):
        return None
    family = socket.AF_INET6 if text.count(":") >= 2 else socket.AF_INET
    try:
        packed = socket.inet_pton(family, text)
    except (OSError, ValueError):
        return None
    if not any(packed):
        return 0
    return 6 if family == socket.AF_INET6 else 4


def _decimal(value: Any, limit: int = ID_MAX) -> Optional[int]:
    if isinstance(value, str) and _DECIMAL.match(value) and len(value) <= 10 and int(value) <= limit:
        return int(value)
    return None


def check_rank_table(table: Any, product: Product, compact_bytes: Optional[int] = None) -> list[Violation]:
    """Every rule of docs/ranktable-rules.md that ``table`` breaks for ``product`` (empty: HCCL
    loads it). ``compact_bytes``: the compact JSON's size when known (R19); measured otherwise."""
    if not isinstance(table, dict):
        return [Violation("R1", "the rank table is not a JSON object")]
    out: list[Violation] = []
    status = table.get("status")
    if not isinstance(status, str):
        out.append(Violation("R2", "status is required and must be a string (EI0017)"))
    elif status != "completed":
        out.append(
            Violation(
                "R2",
                f"status is '{status}': HCCL re-reads the file until it says 'completed' and gives up after 1800 s",
            )
        )
    version = table.get("version")
    if version not in CONCISE_VERSIONS:
        out.append(
            Violation(
                "R3",
                f'version {version!r} is not "1.0" or "1.2" (absent selects the legacy parser, others give EI0014 \'version is not support\')',
            )
        )
    servers = table.get("server_list")
    if not isinstance(servers, list) or not servers:
        out.append(Violation("R4", "server_list is required and must not be empty"))
        return out
    if "server_count" in table:
        count = _decimal(table["server_count"])
        if count is None or count == 0 or count != len(servers):
            out.append(
                Violation(
                    "R5",
                    f"server_count {table['server_count']!r} is not the decimal string '{len(servers)}' (EI0014 'serverList size neq server num')",
                )
            )
    out += _server_rules(servers, product)
    out += _device_rules(servers, product)
    if version == "1.2":
        out += _superpod_rules(table, servers)
    size = compact_bytes if compact_bytes is not None else len(json.dumps(table, separators=(",", ":")).encode())
    if size > RANK_TABLE_MAX_BYTES:
        out.append(Violation("R19", f"the table is {size} bytes; HCCL reads at most {RANK_TABLE_MAX_BYTES} (40 MiB)"))
    return out


def _server_rules(servers: list, product: Product) -> list[Violation]:
    out = []
    seen: dict[str, int] = {}
    families: set[int] = set()
    for s, server in enumerate(servers):
        if not isinstance(server, dict):
            out.append(Violation("R6", "a server entry is not an object", s))
            continue
        sid = server.get("server_id")
        if not isinstance(sid, str) or not sid:
            out.append(Violation("R6", "server_id is required and must be a non-empty string", s))
        elif len(sid) > SERVER_ID_MAX_CHARS:
            out.append(
                Violation(
                    "R6",
                    f"server_id '{sid[:40]}…' is {len(sid)} characters; HCCL takes at most {SERVER_ID_MAX_CHARS}",
                    s,
                )
            )
        elif sid in seen:
            out.append(
                Violation(
                    "R6",
                    f"server_id '{sid}' is already server_list[{seen[sid]}] (EI0014 '[server_id] is already exist')",
                    s,
                )
            )
        else:
            seen[sid] = s
        if "host_ip" in server:
            family = _ip(server["host_ip"])
            if family is None:
                out.append(
                    Violation(
                        "R7",
                        f"host_ip {server['host_ip']!r} is not an IP address (EI0014 'ipStr convert failed'; a host name is not accepted)",
                        s,
                    )
                )
            elif family:
                families.add(family)
        devices = server.get("device")
        if not isinstance(devices, list) or not devices:
            out.append(Violation("R8", "device is required and must be a non-empty array", s))
    if len(servers) > 1 and len(families) > 1:
        out.append(Violation("R15", "host_ip values mix IPv4 and IPv6 (EI0001)"))
    if product.same_devices_per_server:
        counts = [len(server.get("device") or []) for server in servers if isinstance(server, dict)]
        if len(set(counts)) > 1:
            out.append(
                Violation(
                    "R16",
                    f"{product.chip} needs the same device count on every server; these have {', '.join(str(c) for c in sorted(set(counts)))} (EI0014 'devices num of each server error')",
                )
            )
    return out


def _device_rules(servers: list, product: Product) -> list[Violation]:
    out = []
    ranks: list[tuple[int, int]] = []
    ip_owner: dict[str, tuple[int, int]] = {}
    ip_counts: set[int] = set()
    families: set[int] = set()
    for s, server in enumerate(servers):
        if not isinstance(server, dict) or not isinstance(server.get("device"), list):
            continue
        host_ok = bool(_ip(server.get("host_ip")))
        local_ids: dict[int, int] = {}
        for d, device in enumerate(server["device"]):
            if not isinstance(device, dict):
                out.append(Violation("R8", "a device entry is not an object", s, d))
                continue
            rank = _decimal(device.get("rank_id"))
            if rank is None:
                out.append(
                    Violation(
                        "R9",
                        f"rank_id {device.get('rank_id')!r} must be a decimal string (a JSON number gives EI0017 'is not string')",
                        s,
                        d,
                    )
                )
            else:
                ranks.append((rank, s))
            device_id = _decimal(device.get("device_id"))
            if device_id is None:
                out.append(Violation("R9", f"device_id {device.get('device_id')!r} must be a decimal string", s, d))
            elif device_id > product.max_rank_device_id:
                out.append(
                    Violation(
                        "R10",
                        f"device_id {device_id} is more than {product.max_rank_device_id}, the highest device on {product.chip}",
                        s,
                        d,
                    )
                )
            elif device_id in local_ids:
                out.append(
                    Violation(
                        "R14",
                        f"device_id {device_id} is already device[{local_ids[device_id]}] of this server: each rank needs its own local device",
                        s,
                        d,
                    )
                )
            else:
                local_ids[device_id] = d
            out += _device_ip_rules(device, s, d, len(servers), host_ok, ip_owner, ip_counts, families)
            for key in PORT_KEYS:
                if key in device and _decimal(device[key], 65535) in (None, 0):
                    out.append(Violation("R12", f"{key} {device[key]!r} must be a decimal string in 1-65535", s, d))
            if "super_device_id" in device and _decimal(device["super_device_id"]) is None:
                out.append(
                    Violation("1.2", f"super_device_id {device['super_device_id']!r} must be a decimal string", s, d)
                )
    if len(ip_counts) > 1:
        out.append(
            Violation(
                "R11",
                f"ranks list different numbers of device_ip ({', '.join(str(c) for c in sorted(ip_counts))}); every rank needs the same count",
            )
        )
    if len(families) > 1:
        out.append(Violation("R15", "device_ip values mix IPv4 and IPv6 (EI0001)"))
    out += _rank_order(ranks)
    return out


def _device_ip_rules(
    device: dict,
    s: int,
    d: int,
    server_count: int,
    host_ok: bool,
    owner: dict[str, tuple[int, int]],
    counts: set[int],
    families: set[int],
) -> list[Violation]:
    out = []
    raw = device.get("device_ip")
    if raw is None:
        if server_count > 1 and not host_ok:
            out.append(
                Violation(
                    "R11", "device_ip is required with more than one server unless the server has a valid host_ip", s, d
                )
            )
        counts.add(0)
        return out
    if not isinstance(raw, str) or not raw:
        out.append(Violation("R11", f"device_ip {raw!r} must be a non-empty string", s, d))
        return out
    items = raw.split(",")
    counts.add(len(items))
    for item in items:
        family = _ip(item)
        if not family:
            out.append(Violation("R11", f"device_ip '{item}' is not a valid address", s, d))
            continue
        families.add(family)
        if item in owner:
            first = owner[item]
            out.append(
                Violation(
                    "R11",
                    f"device_ip {item} is already server_list[{first[0]}].device[{first[1]}]'s (EI0014 '[device_ip] is already exist')",
                    s,
                    d,
                )
            )
        else:
            owner[item] = (s, d)
    return out


def _rank_order(ranks: list[tuple[int, int]]) -> list[Violation]:
    """R13: rank ids exactly 0..N-1, and (as the docs ask) one contiguous block per server."""
    out = []
    ids = sorted(rank for rank, _ in ranks)
    if ids != list(range(len(ids))):
        wrong = next((i for i, rank in enumerate(ids) if rank != i), len(ids))
        out.append(
            Violation(
                "R13",
                f"rank_ids are not exactly 0..{len(ids) - 1} (first gap or repeat at {wrong}; EI0014 'rankId error')",
            )
        )
        return out
    servers_in_rank_order = [server for _, server in sorted(ranks)]
    seen_done: set[int] = set()
    current = None
    for server in servers_in_rank_order:
        if server != current:
            if server in seen_done:
                out.append(
                    Violation("R13", f"server_list[{server}]'s ranks are interleaved with another server's", server)
                )
                break
            if current is not None:
                seen_done.add(current)
            current = server
    return out


def _superpod_rules(table: dict, servers: list) -> list[Violation]:
    """1.2 (C 835-1060): every server in exactly one pod, pods unique, every rank with an SDID,
    SDIDs unique per pod, pod servers adding up to server_count, a pod's servers contiguous."""
    out = []
    pods = table.get("super_pod_list")
    if not isinstance(pods, list) or not pods:
        return [
            Violation(
                "1.2",
                "version 1.2 without super_pod_list: HCCL falls back to AI-Server mode and never uses HCCS between servers",
            )
        ]
    index_of = {server.get("server_id"): s for s, server in enumerate(servers) if isinstance(server, dict)}
    pod_of: dict[int, str] = {}
    seen_pods: set[str] = set()
    for p, pod in enumerate(pods):
        pod_id = pod.get("super_pod_id") if isinstance(pod, dict) else None
        if not isinstance(pod_id, str) or not pod_id:
            out.append(Violation("1.2", f"super_pod_list[{p}].super_pod_id is required and must be a non-empty string"))
            continue
        if pod_id in seen_pods:
            out.append(Violation("1.2", f"super_pod_id '{pod_id}' is listed twice"))
        seen_pods.add(pod_id)
        members = pod.get("server_list")
        for member in members if isinstance(members, list) else []:
            sid = member.get("server_id") if isinstance(member, dict) else None
            if sid not in index_of:
                out.append(
                    Violation("1.2", f"super-pod '{pod_id}' lists server_id {sid!r}, which is not in server_list")
                )
            elif index_of[sid] in pod_of:
                out.append(
                    Violation("1.2", f"server '{sid}' is in super-pods '{pod_of[index_of[sid]]}' and '{pod_id}'")
                )
            else:
                pod_of[index_of[sid]] = pod_id
    if len(pod_of) != len(servers):
        missing = [s for s in range(len(servers)) if s not in pod_of]
        if missing:
            out.append(
                Violation(
                    "1.2",
                    f"{len(missing)} server(s) are in no super-pod (first: server_list[{missing[0]}]); the pods' servers must add up to server_count",
                    missing[0],
                )
            )
    sdids: dict[tuple[str, int], tuple[int, int]] = {}
    previous: Optional[str] = None
    finished: set[str] = set()
    for s, server in enumerate(servers):
        pod_id = pod_of.get(s)
        if pod_id is not None and pod_id != previous:
            if pod_id in finished:
                out.append(Violation("1.2", f"super-pod '{pod_id}''s servers are not listed contiguously", s))
            if previous is not None:
                finished.add(previous)
            previous = pod_id
        for d, device in enumerate(server.get("device") or [] if isinstance(server, dict) else []):
            if not isinstance(device, dict):
                continue
            sdid = _decimal(device.get("super_device_id"))
            if sdid is None:
                if "super_device_id" not in device:
                    out.append(
                        Violation(
                            "1.2", "super_device_id is missing: every rank in super-pod mode needs its SDID", s, d
                        )
                    )
                continue
            if pod_id is None:
                continue
            key = (pod_id, sdid)
            if key in sdids:
                first = sdids[key]
                out.append(
                    Violation(
                        "1.2",
                        f"super_device_id {sdid} is already server_list[{first[0]}].device[{first[1]}]'s in super-pod '{pod_id}' (EI0014 'devices have same superDeviceId')",
                        s,
                        d,
                    )
                )
            else:
                sdids[key] = (s, d)
    return out


# --- the inventory: refuse what would make such a table -------------------------------------------


def inventory_problems(
    doc: YamlDocument, model: "InventoryModel", nodes: list["Node"], product: Product
) -> list[Located]:
    """Located refusals for inventories whose rank table HCCL would not load, and for A3 HCCL
    settings that contradict it (:func:`ascendprep.inventory.hccl_env.hccl_env_problems`)."""

    problems: list[Located] = []
    if product.same_devices_per_server and len({node.npus for node in nodes}) > 1:
        counts = sorted({node.npus for node in nodes})
        odd = next(node for node in nodes if node.npus != nodes[0].npus)
        path = ("nodes", odd.entry, "npus") if model.nodes[odd.entry].npus is not None else ("nodes", odd.entry)
        problems.append(
            doc.problem(
                path,
                f"{odd.name} has {odd.npus} NPUs but {nodes[0].name} has {nodes[0].npus} ({', '.join(map(str, counts))} in this cluster): HCCL on {product.chip} loads a rank table only when every server lists the same number of devices (EI0014 'devices num of each server error'); plan servers of one NPU count per cluster",
            )
        )
    a3 = product.dies_per_npu > 1
    physical = {node.super_pod for node in nodes if node.super_pod is not None}
    if product.is_950:
        env_problems = hccl_env_problems_950(model.env, chip=product.chip, servers=len(nodes))
    else:
        env_problems = hccl_env_problems(
            model.env, a3=a3, physical_pods=len(physical), rank_table=model.training.rank_table
        ) + ub_timeout_problems(model.env, a5=False)
    for key, message in env_problems:
        problems.append(doc.problem(("env", key), message))
    try:
        retry = any(op_retry_levels(model.env.get("HCCL_OP_RETRY_ENABLE")).values())
    except ValueError:
        retry = False
    if a3 and retry:
        for node in nodes:
            if _ip(node.host) is None:
                problems.append(
                    doc.problem(
                        ("nodes", node.entry, "host"),
                        f"'{node.host}' is a host name: op-retry (HCCL_OP_RETRY_ENABLE) needs the rank table's host_ip, which HCCL takes only as an IP address; give the node's IP as host",
                    )
                )
                break
    return problems
