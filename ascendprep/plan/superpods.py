"""The hardware's word on A3 super-pods: ``npu-smi info -t spod-info`` against the inventory.

The rank table's super-pod fields come from the inventory (:mod:`ascendprep.inventory.superpods`),
so that ``plan --offline`` shows them; the plan confirms them against what each die reports.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ascendprep.base.findings import Finding, Severity
from ascendprep.facts.model import ProbeError, SuperPodDie
from ascendprep.inventory.model import Node
from ascendprep.inventory.products import A3_SUPERPOD_MAX_SERVERS
from ascendprep.inventory.superpods import sdid

#: Finding ids of :func:`hardware_findings`.
IDENTITY_MISMATCH = "a3.superpod_identity"
NOT_DECLARED = "a3.superpod_undeclared"
NOT_READ = "a3.superpod_unread"


def hardware_findings(
    node: "Node", superpod: "Mapping[int, SuperPodDie]", errors: "Sequence[ProbeError]" = ()
) -> list["Finding"]:
    """What ``npu-smi info -t spod-info`` says about ``node`` against what the inventory plans.

    The rank table's ``super_device_id``s and pods come from the inventory (so ``plan --offline``
    shows them byte for byte); the hardware confirms them here. A die whose SDID, pod or server
    index is not the planned one is an error naming the die and the value to write (a wrong or
    repeated SDID makes HCCL refuse the table, EI0014); a server the hardware puts in a pod that
    the inventory does not declare is a warning (HCCL would never use HCCS to it); a die that
    could not be read is named, never guessed.
    """
    findings: list[Finding] = []
    unread = sorted({e.npu for e in errors if e.probe == "npu_smi.spod" and e.npu is not None})
    if node.super_pod is not None and unread:
        findings.append(
            Finding(
                NOT_READ,
                Severity.WARNING,
                f"{node.name}: npu-smi spod-info could not be read on NPU {', '.join(map(str, unread))}: the planned SDIDs (server {node.server_index} of super-pod {node.super_pod}) are not confirmed by the hardware",
                "run 'npu-smi info -t spod-info -i <NPU> -c 0' on the node",
                node=node.name,
            )
        )
    if not superpod:
        return findings
    if node.super_pod is None:
        pods = sorted({die.super_pod_id for die in superpod.values() if die.server_index < A3_SUPERPOD_MAX_SERVERS})
        if pods:
            first = next(die for die in superpod.values() if die.super_pod_id == pods[0])
            findings.append(
                Finding(
                    NOT_DECLARED,
                    Severity.WARNING,
                    f"{node.name} is server {first.server_index} of super-pod {pods[0]} (npu-smi spod-info), but the inventory gives it no super_pod: the rank table stays 1.0 and HCCL never uses HCCS between the servers",
                    f"add super_pod: {pods[0]} (and server_index: {first.server_index}) to {node.name}'s entry",
                    node=node.name,
                )
            )
        return findings
    assert node.server_index is not None
    wrong = []
    for devid, die in sorted(superpod.items()):
        if devid >= node.npus:
            continue
        expected = sdid(node.server_index, devid)
        if die.super_pod_id != node.super_pod or die.server_index != node.server_index or die.sdid != expected:
            wrong.append((devid, die, expected))
    if wrong:
        devid, die, expected = wrong[0]
        dies = ", ".join(str(d) for d, _, _ in wrong)
        findings.append(
            Finding(
                IDENTITY_MISMATCH,
                Severity.ERROR,
                f"{node.name} die {dies}: the hardware says SDID {die.sdid}, server {die.server_index} of super-pod {die.super_pod_id} (die {devid}); the inventory plans SDID {expected}, server {node.server_index} of super-pod {node.super_pod}: the rank table would carry the wrong super_device_id (HCCL refuses a repeated one, EI0014)",
                f"set super_pod: {die.super_pod_id} and server_index: {die.server_index} for {node.name}"
                if len({(d.super_pod_id, d.server_index) for _, d, _ in wrong}) == 1
                and die.sdid == sdid(die.server_index, devid)
                else "the dies report SDIDs that do not follow their server index: check the super-pod's configuration (npu-smi info -t spod-info on every die)",
                node=node.name,
                npu=devid,
                evidence={
                    "dies": [
                        {
                            "die": d,
                            "sdid": x.sdid,
                            "super_pod_id": x.super_pod_id,
                            "server_index": x.server_index,
                            "planned_sdid": e,
                        }
                        for d, x, e in wrong[:16]
                    ]
                },
            )
        )
    return findings
