"""The simulated A3 super-pod: spod-info, HCCS vNICs, ``-hccs_ping`` and the driver's reserved ranges.

Facts from docs/a3-superpod.md §2 (driver ``hccn_product_ext/tool_cmd.c``, ``tool_ops_ext.c``,
``cmd_ext.c``):

* a node of a pod carries ``super_pod`` in its document: ``{"id": P, "server_index": S, "size": N}``
  (``lab up --pod-servers K`` puts K servers in each pod, in node order; ``size`` counts the
  pod's NPUs, as npu-smi's ``Super Pod Size`` does: 384 on a CM384);
* SDID = ``server_index << 22 | npu << 18 | die << 16 | devid`` (the real capture's dev0 on server
  40 is 167772160, dev1 167837697, dev10 169082890);
* vNIC = ``192.<server_index>.<2 + die>.<199 - devid>``;
* ``-ip -s`` refuses (``conflicted``) an address inside 192.0.0.0/8 on a server in a pod, and
  inside 192.168.0.0/21 on an A3 outside one;
* ``-hccs_ping -g address A [pkt P] [cnt C] [interval I] [timeout T]`` (or ``sdid S``) reaches
  the die whose vNIC (or SDID) it names when both dies are in the same physical pod and neither
  has its HCCS link down. The output follows ``tool_ping_printf``: ``device D PING A``, per
  packet ``This pkt ping success!`` and ``recv seq S, time = x.yyyus, L1 plane check result =
  0x0`` (or ``This pkt check recv msg fail!``), then ``N packets transmitted, M received, P%
  packets loss`` and the ``max``/``min``/``average``/``TP95 time`` lines. [I] the exact
  punctuation of the time lines, and the exit status of a lossy run (the RoCE ping's
  ``Command execute failed!``, exit 1, is used).

Faults (``state.set_fault`` with ``npu`` = the die's devid): ``hccs-link-down`` cuts that die's
HCCS link (its RoCE port is untouched, and ``link-down`` leaves HCCS alone: the two planes are
separate); ``sdid-duplicate`` makes the die report its sibling die's SDID (HCCL EI0014).

Only stdlib imports: on the start-up path of every simulated tool call.
"""

from __future__ import annotations

import time

from . import ipv4
from .hccn_codes import (
    DSMI_EXE_ERR,
    OK,
    PARAM_CMD_COUNT_ERR,
    PARAM_INVALID_ERR,
    PARAM_IP_INVALID_ERR,
    PARAM_OP_NOT_SUPPORT_ERR,
    TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR,
)

#: The faults this module renders (registered with the lab's device faults in state.py).
A3_FAULTS = ("hccs-link-down", "sdid-duplicate")

#: ``A3_SUPERPOD_MAX_NUMS``: a spod server index at or above it means "not in a super-pod".
SUPERPOD_MAX_SERVERS = 48
#: Driver ranges ``-ip -s`` refuses on an A3 (network, mask): in a pod, and outside one.
RESERVED_IN_POD = ("192.0.0.0", "255.0.0.0")
RESERVED_OUTSIDE_POD = ("192.168.0.0", "255.255.248.0")

HCCS_PKT = (1792, 3000)
HCCS_CNT = (1, 1000)
HCCS_INTERVAL_MS = (0, 10)
HCCS_TIMEOUT_MS = (1, 20000)
HCCS_DEFAULT_CNT = 3


def pod_of(doc: dict) -> dict | None:
    """The node's ``super_pod`` record, or None when it is not in a pod (or not an A3)."""
    pod = doc.get("super_pod")
    return pod if doc.get("product") == "atlas-a3" and isinstance(pod, dict) else None


def sdid(server_index: int, devid: int) -> int:
    npu, die = divmod(devid, 2)
    return (server_index << 22) | (npu << 18) | (die << 16) | devid


def reported_sdid(doc: dict, devid: int) -> int:
    """What spod-info says for ``devid``: its SDID, or its sibling's under ``sdid-duplicate``."""
    pod = pod_of(doc) or {}
    index = int(pod.get("server_index", 0))
    if _has_fault(doc, "sdid-duplicate", devid):
        return sdid(index, devid ^ 1)
    return sdid(index, devid)


def vnic_address(server_index: int, devid: int) -> str:
    return f"192.{server_index}.{2 + devid % 2}.{199 - devid}"


def _has_fault(doc: dict, kind: str, devid: int) -> bool:
    return any(f.get("kind") == kind and f.get("npu") in (None, devid) for f in doc.get("faults", []))


def hccs_link_up(doc: dict, devid: int) -> bool:
    return not _has_fault(doc, "hccs-link-down", devid)


# --------------------------------------------------------------------------- npu-smi


def _kv(key: str, value: object) -> str:
    return f"\t{key:<31}: {value}"


def spod_info(doc: dict, npu: int, chip: int) -> str:
    """``npu-smi info -t spod-info -i N -c C``; a node outside a pod has server index 65535 [I]."""
    pod = pod_of(doc)
    devid = npu * 2 + chip
    if pod is None:
        lines = [
            _kv("SDID", reported_sdid(doc, devid)),
            _kv("Super Pod Size", 0),
            _kv("Super Pod ID", 0),
            _kv("Server Index", 65535),
        ]
    else:
        lines = [
            _kv("SDID", reported_sdid(doc, devid)),
            _kv("Super Pod Size", pod["size"]),
            _kv("Super Pod ID", pod["id"]),
            _kv("Server Index", pod["server_index"]),
        ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- hccn_tool


def reserved_conflict(doc: dict, address: str) -> bool:
    """An A3 driver refuses a RoCE address in the HCCS-reserved range (``tool_a3_ipaddr_conflict_extend``)."""
    if doc.get("product") != "atlas-a3" or ipv4.parse(address) is None:
        return False
    pod = pod_of(doc)
    in_pod = pod is not None and int(pod.get("server_index", SUPERPOD_MAX_SERVERS)) < SUPERPOD_MAX_SERVERS
    network, mask = RESERVED_IN_POD if in_pod else RESERVED_OUTSIDE_POD
    return ipv4.same_subnet(address, network, mask)


def cmd_vnic(inv, args: list[str]) -> int:
    """``-vnic -g``: the die's HCCS vNIC address (A3 only)."""
    if inv.product != "atlas-a3":
        return TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR
    if len(args) != 1:
        return PARAM_CMD_COUNT_ERR
    if args[0] != "-g":
        return PARAM_OP_NOT_SUPPORT_ERR
    inv.get_flag = True
    pod = pod_of(inv.doc)
    index = int(pod["server_index"]) if pod is not None else 0
    inv.print(f"vnic ipaddr: {vnic_address(index, inv.devid)}")
    return OK


def _number(text: str, low: int, high: int) -> int | None:
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        return None
    value = int(text)
    return value if low <= value <= high else None


def _locate_die(nodes: dict[str, dict], pod_id: int, key: str, value: str) -> tuple[str, int] | None:
    """(node, devid) whose vNIC address or SDID is ``value`` in pod ``pod_id`` (both repeat in
    every pod: the server index restarts at 0, so a vNIC names a die only within its pod)."""
    for name, doc in nodes.items():
        pod = pod_of(doc)
        if pod is None or pod["id"] != pod_id:
            continue
        for devid in range(len(doc["devices"])):
            mine = vnic_address(int(pod["server_index"]), devid) if key == "address" else str(reported_sdid(doc, devid))
            if mine == value:
                return name, devid
    return None


def hccs_reachable(nodes: dict[str, dict], node: str, devid: int, target: tuple[str, int] | None) -> bool:
    """Both dies in one physical pod, both HCCS links up."""
    if target is None:
        return False
    here, there = nodes[node], nodes[target[0]]
    mine, theirs = pod_of(here), pod_of(there)
    if mine is None or theirs is None or mine["id"] != theirs["id"]:
        return False
    return hccs_link_up(here, devid) and hccs_link_up(there, target[1])


def cmd_hccs_ping(inv, args: list[str], read_all_nodes) -> int:
    """``-hccs_ping -g address A|sdid S [pkt P] [cnt C] [interval I] [timeout T]``."""
    if inv.product != "atlas-a3":
        return TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR
    if not args or args[0] != "-g":
        return PARAM_OP_NOT_SUPPORT_ERR if args else PARAM_CMD_COUNT_ERR
    rest = args[1:]
    if len(rest) < 2 or len(rest) % 2:
        return PARAM_CMD_COUNT_ERR
    values: dict[str, str] = {}
    for index in range(0, len(rest), 2):
        key = rest[index]
        if key not in ("address", "sdid", "pkt", "cnt", "interval", "timeout") or key in values:
            return PARAM_OP_NOT_SUPPORT_ERR
        values[key] = rest[index + 1]
    if ("address" in values) == ("sdid" in values):
        return PARAM_INVALID_ERR  # exactly one of the two
    if "address" in values and ipv4.parse(values["address"]) is None:
        return PARAM_IP_INVALID_ERR
    if "sdid" in values and not (values["sdid"].isascii() and values["sdid"].isdigit() and len(values["sdid"]) <= 10):
        return PARAM_INVALID_ERR
    limits = {"pkt": HCCS_PKT, "cnt": HCCS_CNT, "interval": HCCS_INTERVAL_MS, "timeout": HCCS_TIMEOUT_MS}
    numbers: dict[str, int] = {}
    for key, (low, high) in limits.items():
        if key in values:
            number = _number(values[key], low, high)
            if number is None:
                return PARAM_INVALID_ERR
            numbers[key] = number
    count = numbers.get("cnt", HCCS_DEFAULT_CNT)
    if count * numbers.get("interval", 0) > 20000:
        return PARAM_INVALID_ERR
    inv.get_flag = True
    key = "address" if "address" in values else "sdid"
    nodes = read_all_nodes(inv.identity.state_dir)
    mine = pod_of(nodes[inv.identity.node])
    target = None if mine is None else _locate_die(nodes, mine["id"], key, values[key])
    ok = hccs_reachable(nodes, inv.identity.node, inv.devid, target)
    inv.print(f"device {inv.devid} PING {values[key]}")
    jitter = (time.perf_counter_ns() // 1000) % 1000
    times = []
    for seq in range(count):
        if ok:
            micros = 8.0 + ((jitter * (seq + 3)) % 400) / 100
            times.append(micros)
            inv.print("This pkt ping success!")
            inv.print(f"recv seq {seq}, time = {micros:.3f}us, L1 plane check result = 0x0")
        else:
            inv.print("This pkt check recv msg fail!")
    received = len(times)
    loss = 100.0 * (count - received) / count
    inv.print(f"{count} packets transmitted, {received} received, {loss:.2f}% packets loss")
    ordered = sorted(times) or [0.0]
    tp95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    for label, value in (
        ("max", ordered[-1]),
        ("min", ordered[0]),
        ("average", sum(ordered) / len(ordered)),
        ("TP95", tp95),
    ):
        inv.print(f"{label} time = {value:.3f}us")
    return OK if received == count else DSMI_EXE_ERR
