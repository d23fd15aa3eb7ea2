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
"""

from __future__ import annotations

import ipaddress
from typing import Dict, List, Optional, Tuple

from ascendprep.checks.context import ClusterContext, NodeContext
from ascendprep.checks.hccs import node_pod, not_a3
from ascendprep.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.findings import Severity


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
        return failed(f"npu-smi gave no super-pod identity (spod-info) for {names}", evidence,
                      fix="run npu-smi info -t spod-info -i <NPU> -c <chip> there; a server outside a super-pod needs HCCL's 1.0 rank table")
    places = {(die.super_pod_id, die.server_index) for die in facts.superpod.values()}
    evidence = {"pods": sorted({p for p, _ in places}), "server_indexes": sorted({s for _, s in places})}
    if len(places) != 1:
        return failed(f"the dies of one server disagree on their pod/server index: {sorted(places)}", evidence,
                      fix="read npu-smi info -t spod-info on every die; a mixed answer is a driver or BIOS fault")
    pod, index = places.pop()
    if not all(die.in_pod for die in facts.superpod.values()):
        return passed(f"in no super-pod (server index {index}): HCCL wants a 1.0 rank table here, and there is no HCCS plane to ping", evidence)
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
        return failed(f"{_die_name(npu)}: vNIC {live.vnic_ip}, but server index {die.server_index} gives {want}", evidence,
                      fix="the driver derives the vNIC from the server index: check spod-info and the driver version on this server")
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
            verdicts.append(failed(
                f"NPU {devid // 2}: both dies in {network} (device {devid} {first.ip}, device {devid + 1} {second.ip})",
                {"network": str(network), "die0": first.ip, "die1": second.ip}, npu=devid,
                fix="give the two dies of an NPU addresses in different subnets (plan does: re-run plan and apply)",
            ))
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
        verdicts.append(failed(
            f"super-pod {pod}: SDID {value} reported by {names} (HCCL refuses the rank table: EI0014)",
            {"pod": pod, "sdid": value, "dies": [{"node": n, "device": d} for n, d in dies]},
            fix="SDIDs come from the hardware: check spod-info on those dies and the server indexes of the pod",
            subject=f"pod {pod} sdid {value}", node=node, npu=devid,
        ))
    return verdicts or [passed(f"SDIDs unique within each pod ({read} servers)")]


_REQUIRES = ("node.reachable", "node.npu_smi")

CHECKS: List[Check] = [
    Check("superpod.identity", ("superpod",), "node", Severity.ERROR, "every die reports its super-pod identity (spod-info)", "",
          identity, requires=_REQUIRES, applies=not_a3),
    Check("superpod.vnic", ("superpod",), "npu", Severity.ERROR, "the die's HCCS vNIC is the one its server index gives", "",
          vnic, requires=("node.reachable", "node.hccn_tool"), applies=not_a3),
    Check("superpod.die_subnets", ("superpod", "network"), "node", Severity.ERROR, "the two dies of each NPU are in different subnets", "",
          die_subnets, requires=("node.reachable",), applies=not_a3),
    Check("cluster.sdid", ("cluster", "superpod"), "cluster", Severity.ERROR, "SDIDs are unique within each super-pod", "",
          sdid, applies=not_a3),
]
