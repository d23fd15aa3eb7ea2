"""A3 super-pod identity checks: what each die says it is, against what HCCL and the driver need.

Facts (docs/a3-superpod.md §1, §2): each die reports its SDID, pod, server index and pod size
(``npu-smi info -t spod-info``) and its HCCS vNIC (``hccn_tool -vnic -g``). A 1.2 rank table's
``super_device_id`` is the SDID and must be unique within a pod (HCCL EI0014 otherwise); the
vNIC is ``192.<server_index>.<2+die>.<199-devid>``; the two dies of one NPU must sit in different
RoCE subnets (Huawei's rule; same subnet makes the die's pings fail).

* ``superpod.identity`` (node): every planned die's spod-info was read, and all dies of the
  server agree on pod and server index; a server whose pod facts cannot be read is named, not guessed.
* ``superpod.vnic`` (npu): the die's vNIC is the one its server index and device id give.
* ``superpod.die_subnets`` (node): no NPU has both dies in one subnet (live addresses).
* ``cluster.sdid``: no two dies of one physical pod report the same SDID; both are named.
* ``superpod.rank_table`` (node): the 1.2 rank table on the node agrees with the hardware: each of
  this server's devices has ``super_device_id`` = the die's SDID (spod-info) and, where the table
  has one, ``device_ip`` = the die's live address and ``backup_device_ip`` (op-retry) = the live
  address of the other die of the same NPU. The table is planned from the inventory's
  ``server_index``, so a wrong index, a moved server or a changed address shows here, on the die.
  Compared only when the file is byte-identical to the planned one (``files.managed`` names any
  other), so the planned content is the file's content and no table travels back.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any, Dict, List, Mapping, Tuple

from ascendprep.base.findings import Severity
from ascendprep.base.paths import RANK_TABLE
from ascendprep.desired.ranktable import server_ids
from ascendprep.facts.model import NpuFacts, SuperPodDie
from ascendprep.plan import drift
from ascendprep.verify.checks.context import ClusterContext, NodeContext
from ascendprep.verify.checks.hccs import node_pod, not_a3
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped


def expected_vnic(server_index: int, devid: int) -> str:
    """The driver's vNIC address of a die (``tool_cmd.c``)."""
    return f"192.{server_index}.{2 + devid % 2}.{199 - devid}"


def _die_name(devid: int) -> str:
    npu, die = divmod(devid, 2)
    return f"device {devid} (NPU {npu} die {die})"


def identity(ctx: NodeContext) -> Verdict:
    facts = ctx.facts
    planned = ctx.npus
    missing = [devid for devid in planned if devid not in facts.superpod]
    if missing:
        errors = facts.errors_for("npu_smi.spod")
        names = ", ".join(_die_name(devid) for devid in missing)
        evidence = {"missing": missing, "errors": [e.message for e in errors[:4]]}
        if errors:
            return could_not_check(f"super-pod identity of {names} could not be read: {errors[0].message}", evidence)
        return failed(
            f"npu-smi gave no super-pod identity (spod-info) for {names}",
            evidence,
            fix="run npu-smi info -t spod-info -i <NPU> -c <chip> there; a server outside a super-pod needs HCCL's 1.0 rank table",
        )
    places = {(die.super_pod_id, die.server_index) for die in facts.superpod.values()}
    evidence = {"pods": sorted({p for p, _ in places}), "server_indexes": sorted({s for _, s in places})}
    if len(places) != 1:
        return failed(
            f"the dies of one server disagree on their pod/server index: {sorted(places)}",
            evidence,
            fix="read npu-smi info -t spod-info on every die; a mixed answer is a driver or BIOS fault",
        )
    pod, index = places.pop()
    if not all(die.in_pod for die in facts.superpod.values()):
        return passed(
            f"in no super-pod (server index {index}): HCCL wants a 1.0 rank table here, and there is no HCCS plane to ping",
            evidence,
        )
    return passed(f"super-pod {pod}, server index {index}, {len(facts.superpod)} dies", evidence)


def vnic(ctx: NodeContext, npu: int) -> Verdict:
    facts = ctx.facts
    die = facts.superpod.get(npu)
    if die is None:
        return skipped("no super-pod identity for this die (superpod.identity names it)")
    if not die.in_pod:
        return skipped(f"the server is in no super-pod (server index {die.server_index}): no HCCS vNIC to check")
    live = facts.npus.get(npu)
    if live is None or live.vnic_ip is None:
        errors = facts.errors_for("hccn.vnic", npu)
        return could_not_check(errors[0].message if errors else f"hccn_tool -i {npu} -vnic -g was not read")
    want = expected_vnic(die.server_index, npu)
    evidence = {"vnic": live.vnic_ip, "expected": want, "server_index": die.server_index}
    if live.vnic_ip != want:
        return failed(
            f"{_die_name(npu)}: vNIC {live.vnic_ip}, but server index {die.server_index} gives {want}",
            evidence,
            fix="the driver derives the vNIC from the server index: check spod-info and the driver version on this server",
        )
    return passed(f"vNIC {live.vnic_ip}", evidence)


def die_subnets(ctx: NodeContext) -> List[Verdict]:
    facts = ctx.facts
    verdicts: List[Verdict] = []
    for devid in ctx.npus:
        if devid % 2 or devid + 1 not in ctx.npus:
            continue
        first, second = facts.npus.get(devid), facts.npus.get(devid + 1)
        if first is None or second is None or not (first.ip and first.netmask and second.ip):
            continue
        network = ipaddress.IPv4Network(f"{first.ip}/{first.netmask}", strict=False)
        if ipaddress.IPv4Address(second.ip) in network:
            verdicts.append(
                failed(
                    f"NPU {devid // 2}: both dies in {network} (device {devid} {first.ip}, device {devid + 1} {second.ip})",
                    {"network": str(network), "die0": first.ip, "die1": second.ip},
                    npu=devid,
                    fix="give the two dies of an NPU addresses in different subnets (plan does: re-run plan and apply)",
                )
            )
    return verdicts or [passed("the two dies of every NPU are in different subnets")]


def sdid(ctx: ClusterContext) -> List[Verdict]:
    owners: Dict[Tuple[int, int], List[Tuple[str, int]]] = {}
    read = 0
    for name, facts in ctx.gathered().items():
        pod = node_pod(facts)
        if pod is None:
            continue
        read += 1
        for devid, die in sorted(facts.superpod.items()):
            owners.setdefault((pod, die.sdid), []).append((name, devid))
    if not read:
        return [skipped("no node reported a super-pod (spod-info)")]
    verdicts = []
    for (pod, value), dies in owners.items():
        if len(dies) < 2:
            continue
        names = " and ".join(f"{node} {_die_name(devid)}" for node, devid in dies)
        node, devid = dies[-1]
        verdicts.append(
            failed(
                f"super-pod {pod}: SDID {value} reported by {names} (HCCL refuses the rank table: EI0014)",
                {"pod": pod, "sdid": value, "dies": [{"node": n, "device": d} for n, d in dies]},
                fix="SDIDs come from the hardware: check spod-info on those dies and the server indexes of the pod",
                subject=f"pod {pod} sdid {value}",
                node=node,
                npu=devid,
            )
        )
    return verdicts or [passed(f"SDIDs unique within each pod ({read} servers)")]


def rank_table_disagreements(
    table: Mapping[str, Any], server_id: str, superpod: Mapping[int, SuperPodDie], npus: Mapping[int, NpuFacts]
) -> Tuple[List[Tuple[int, str]], int]:
    """([(device id, what disagrees)], devices compared) for ``server_id``'s devices in ``table``.

    Pure. A device whose die was not read is not compared (superpod.identity and the network
    checks name what was not read); a table without this server raises ValueError.
    """
    servers = [s for s in table.get("server_list") or () if isinstance(s, dict) and s.get("server_id") == server_id]
    if len(servers) != 1:
        raise ValueError(f"the rank table lists server_id {server_id!r} {len(servers)} times")
    found: List[Tuple[int, str]] = []
    compared = 0
    for device in servers[0].get("device") or ():
        text = str(device.get("device_id", "")) if isinstance(device, dict) else ""
        if not text.isdigit():
            found.append((-1, f"a device of server {server_id} has device_id {text!r}"))
            continue
        devid = int(text)
        die, live = superpod.get(devid), npus.get(devid)
        if die is None and live is None:
            continue
        compared += 1
        wanted_sdid = device.get("super_device_id")
        if die is not None and wanted_sdid is not None and str(wanted_sdid) != str(die.sdid):
            found.append(
                (
                    devid,
                    f"{_die_name(devid)}: the rank table's super_device_id {wanted_sdid}, "
                    f"but the die reports SDID {die.sdid} (server index {die.server_index})",
                )
            )
        wanted_ip = device.get("device_ip")
        if live is not None and live.ip is not None and wanted_ip is not None and str(wanted_ip) != live.ip:
            found.append(
                (devid, f"{_die_name(devid)}: the rank table's device_ip {wanted_ip}, but the die has {live.ip}")
            )
        # op-retry's backup path is the other die of the same NPU (docs/a3-superpod.md §1)
        wanted_backup, partner = device.get("backup_device_ip"), npus.get(devid ^ 1)
        if (
            partner is not None
            and partner.ip is not None
            and wanted_backup is not None
            and str(wanted_backup) != partner.ip
        ):
            found.append(
                (
                    devid,
                    f"{_die_name(devid)}: the rank table's backup_device_ip {wanted_backup}, but its partner "
                    f"{_die_name(devid ^ 1)} has {partner.ip}",
                )
            )
    return found, compared


def rank_table(ctx: NodeContext) -> List[Verdict]:
    wanted = next((f for f in ctx.node.files if f.path == RANK_TABLE), None)
    if wanted is None or not ctx.desired.inventory.model.training.rank_table:
        return [skipped(f"jobs do not use {RANK_TABLE} (training.rank_table is off)")]
    state = drift.managed_file(wanted, ctx.facts)
    if state.unknown is not None:
        return [could_not_check(f"{RANK_TABLE} could not be read: {state.unknown}")]
    if not state.in_sync:
        return [
            skipped(
                f"{RANK_TABLE} on the node is not the planned one (files.managed names it): its ids are not compared"
            )
        ]
    table = json.loads(wanted.content)
    if table.get("version") != "1.2":
        return [skipped(f"a {table.get('version')} rank table (servers outside a super-pod) has no super_device_id")]
    server_id = server_ids(ctx.desired.inventory.nodes)[ctx.name]
    try:
        found, compared = rank_table_disagreements(table, server_id, ctx.facts.superpod, ctx.facts.npus)
    except ValueError as exc:
        return [failed(f"{RANK_TABLE}: {exc}", {"server_id": server_id}, fix="re-run plan and apply")]
    evidence = {"path": RANK_TABLE, "server_id": server_id, "devices_compared": compared}
    fix = (
        "the table is planned from the inventory's super_pod/server_index and the NPU addresses: correct the "
        "inventory (or the server's spod-info), then plan and apply"
    )
    if found:
        return [
            failed(f"{RANK_TABLE}: {message}", evidence, npu=devid if devid >= 0 else None, fix=fix)
            for devid, message in found
        ]
    if not compared:
        return [could_not_check(f"no die of server {server_id} was read, so {RANK_TABLE} was not compared", evidence)]
    return [
        passed(
            f"{RANK_TABLE}: {compared} devices, super_device_id, device_ip and backup_device_ip as the hardware reports",
            evidence,
        )
    ]


_REQUIRES = ("node.reachable", "node.npu_smi")

CHECKS: List[Check] = [
    Check(
        "superpod.identity",
        ("superpod",),
        "node",
        Severity.ERROR,
        "every die reports its super-pod identity (spod-info)",
        "",
        identity,
        requires=_REQUIRES,
        applies=not_a3,
    ),
    Check(
        "superpod.vnic",
        ("superpod",),
        "npu",
        Severity.ERROR,
        "the die's HCCS vNIC is the one its server index gives",
        "",
        vnic,
        requires=("node.reachable", "node.hccn_tool"),
        applies=not_a3,
    ),
    Check(
        "superpod.die_subnets",
        ("superpod", "network"),
        "node",
        Severity.ERROR,
        "the two dies of each NPU are in different subnets",
        "",
        die_subnets,
        requires=("node.reachable",),
        applies=not_a3,
    ),
    Check(
        "superpod.rank_table",
        ("superpod", "files"),
        "node",
        Severity.ERROR,
        "the rank table's super_device_id and device_ip are the hardware's",
        "",
        rank_table,
        requires=_REQUIRES,
        applies=not_a3,
    ),
    Check(
        "cluster.sdid",
        ("cluster", "superpod"),
        "cluster",
        Severity.ERROR,
        "SDIDs are unique within each super-pod",
        "",
        sdid,
        applies=not_a3,
    ),
]
