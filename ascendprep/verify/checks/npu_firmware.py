"""Per-NPU firmware drift: every NPU of the fleet runs the same firmware.

The firmware package's ``version.info`` says what was installed on a node (cluster.versions
compares it); what each NPU actually runs is ``Firmware Version`` of ``npu-smi info -t board -i
N``. An upgrade that failed or was never activated (it takes a reboot) on one card leaves that
NPU behind its siblings with nothing else showing it. The same majority rule as the driver and
CANN comparison names the odd ones out. (MCU versions: no public capture shows ``-t board``
print one, so they are not compared.)
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Tuple

from ascendprep.base.findings import Severity
from ascendprep.verify.checks.context import ClusterContext, chip_devids
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped

PROBE = "npu_smi.board"


def npu_firmware(ctx: ClusterContext) -> List[Verdict]:
    versions: Dict[Tuple[str, int], str] = {}
    devid_of: Dict[Tuple[str, int], int] = {}
    for node, facts in ctx.gathered().items():
        devids = chip_devids(facts)
        for npu_id, version in sorted(facts.npu_firmware.items()):
            if version is not None and not facts.errors_for(PROBE, npu_id):
                versions[(node, npu_id)] = version
                devid_of[(node, npu_id)] = devids.get((npu_id, 0), npu_id)
    if not versions:
        return [skipped("no NPU reported a firmware version (npu-smi info -t board)")]
    evidence_all = {"firmware": {f"{node}:{npu}": value for (node, npu), value in versions.items()}}
    counts = Counter(versions.values()).most_common()
    if len(counts) == 1:
        return [passed(f"firmware {counts[0][0]} on all {len(versions)} NPUs", evidence_all)]
    common, common_count = counts[0]
    if common_count * 2 <= len(versions):
        return [
            failed(
                "NPU firmware differs with no majority: "
                + ", ".join(f"{count} NPUs on {value}" for value, count in counts),
                evidence_all,
                fix="install and activate one firmware package on every node (npu-smi upgrade, then a reboot)",
            )
        ]
    return [
        failed(
            f"NPU firmware is {version}, unlike {common} on the other {common_count} NPUs",
            {"firmware": version, "fleet_firmware": common, "npu_smi_id": npu_id},
            fix="upgrade this NPU's firmware to the fleet's and reboot to activate it (npu-smi upgrade -t firmware ...)",
            node=node,
            npu=devid_of[(node, npu_id)],
            subject=f"{node} npu {npu_id}",
        )
        for (node, npu_id), version in versions.items()
        if version != common
    ]


CHECKS: List[Check] = [
    Check(
        "firmware.npus",
        ("firmware", "cluster", "software"),
        "cluster",
        Severity.ERROR,
        "every NPU runs the same firmware",
        "",
        npu_firmware,
    ),
]
