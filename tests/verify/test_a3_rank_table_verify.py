"""verify: the 1.2 rank table on an A3 node agrees with the hardware (``superpod.rank_table``).

The table is planned from the inventory's ``super_pod``/``server_index`` and device addresses; the
dies report their SDID (spod-info) and their live address. Facts shaped like the real answers
(docs/a3-superpod.md §2), the example inventory in ``inventories/``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ascendprep.base.paths import RANK_TABLE
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import HostFacts, ManagedFile, NpuFacts, SuperPodDie
from ascendprep.inventory import superpods as superpod_rules
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.drift import sha256_text
from ascendprep.verify.checks.context import HostEvidence, NodeContext
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.superpod import rank_table, rank_table_disagreements

EXAMPLE = Path(__file__).resolve().parents[2] / "inventories" / "a3-superpod.yaml"


def desired_state(text: str | None = None):
    return build_desired(inventory_from_text(text or EXAMPLE.read_text(), str(EXAMPLE)))


def planned_table(desired) -> str:
    return next(f.content for f in next(iter(desired.nodes.values())).files if f.path == RANK_TABLE)


def hardware(desired, name: str, server_index: int, pod: int, file_text: str | None = None) -> HostFacts:
    """What a healthy server reports: SDIDs from its server index, the planned addresses, and the
    rank table on disk (by sha256, as the gather reads it)."""
    node = desired.nodes[name]
    superpod = {
        d: SuperPodDie(
            npu_id=d // 2,
            chip=d % 2,
            sdid=superpod_rules.sdid(server_index, d),
            super_pod_id=pod,
            server_index=server_index,
            pod_size=64,
        )
        for d in range(node.nproc)
    }
    npus = {s.npu: NpuFacts(devid=s.npu, ip=s.ip, netmask=s.netmask) for s in node.hccn}
    text = planned_table(desired) if file_text is None else file_text
    files = {RANK_TABLE: ManagedFile(RANK_TABLE, True, sha256_text(text))}
    return HostFacts(npus=npus, superpod=superpod, managed_files=files, hccn_tool="/usr/bin/hccn_tool")


def run(desired, name: str, facts: HostFacts):
    return rank_table(NodeContext(desired, desired.nodes[name], HostEvidence(name, "10.50.0.12", facts)))


def test_the_planned_table_agrees_with_healthy_hardware():
    desired = desired_state()
    (verdict,) = run(desired, "a3p0s2", hardware(desired, "a3p0s2", 1, 0))
    assert verdict.status is Status.PASSED and verdict.evidence["devices_compared"] == 16, verdict.message


def test_a_server_index_unlike_the_inventorys_is_named_on_every_die():
    desired = desired_state()
    # the hardware numbers this server 5, the inventory counted it 1: every super_device_id is wrong
    verdicts = run(desired, "a3p0s2", hardware(desired, "a3p0s2", 5, 0))
    assert [v.status for v in verdicts] == [Status.FAILED] * 16
    assert sorted(v.npu for v in verdicts) == list(range(16))
    die3 = next(v for v in verdicts if v.npu == 3)
    assert (
        f"super_device_id {superpod_rules.sdid(1, 3)}, but the die reports SDID {superpod_rules.sdid(5, 3)}"
        in die3.message
    ) and "device 3 (NPU 1 die 1)" in die3.message


def test_a_die_whose_address_moved_is_named():
    desired = desired_state()
    facts = hardware(desired, "a3p1s1", 0, 1)
    moved = dict(facts.npus)
    moved[6] = dataclasses.replace(moved[6], ip="10.60.0.250")
    own, partner = run(desired, "a3p1s1", dataclasses.replace(facts, npus=moved))
    assert own.status is Status.FAILED and own.npu == 6
    assert "device_ip" in own.message and "but the die has 10.60.0.250" in own.message
    # op-retry is on in the example: die 7 names die 6 as its backup, so it is named there too
    assert partner.status is Status.FAILED and partner.npu == 7
    assert "backup_device_ip" in partner.message and "device 6 (NPU 3 die 0) has 10.60.0.250" in partner.message


def test_a_hand_edited_file_is_left_to_files_managed():
    desired = desired_state()
    edited = json.dumps(dict(json.loads(planned_table(desired)), status="initializing"))
    (verdict,) = run(desired, "a3p0s1", hardware(desired, "a3p0s1", 0, 0, file_text=edited))
    assert verdict.status is Status.SKIPPED and "files.managed" in verdict.message


def test_without_a_planned_rank_table_there_is_nothing_to_compare():
    text = EXAMPLE.read_text().replace("  rank_table: true", "  rank_table: false")
    desired = desired_state(text)
    (verdict,) = run(desired, "a3p0s1", hardware(desired, "a3p0s1", 0, 0, file_text=""))
    assert verdict.status is Status.SKIPPED and "training.rank_table" in verdict.message


def test_disagreements_are_pure_and_skip_dies_not_read():
    table = {
        "server_list": [
            {
                "server_id": "s",
                "device": [
                    {"device_id": "0", "super_device_id": "10", "device_ip": "10.0.0.1", "rank_id": "0"},
                    {"device_id": "1", "super_device_id": "11", "rank_id": "1"},
                    {"device_id": "x", "rank_id": "2"},
                ],
            }
        ]
    }
    die = SuperPodDie(npu_id=0, chip=0, sdid=10, super_pod_id=0, server_index=0, pod_size=16)
    found, compared = rank_table_disagreements(table, "s", {0: die}, {0: NpuFacts(devid=0, ip="10.0.0.2")})
    assert compared == 1
    assert found == [
        (0, "device 0 (NPU 0 die 0): the rank table's device_ip 10.0.0.1, but the die has 10.0.0.2"),
        (-1, "a device of server s has device_id 'x'"),
    ]


def test_a_backup_address_that_is_not_the_partner_dies_is_named():
    """op-retry's backup_device_ip must be the other die of the same NPU; the unlike case, the
    partner's live address, passes."""
    table = {
        "server_list": [
            {
                "server_id": "s",
                "device": [
                    {"device_id": "2", "device_ip": "10.0.0.2", "backup_device_ip": "10.0.1.9", "rank_id": "0"},
                    {"device_id": "3", "device_ip": "10.0.1.3", "backup_device_ip": "10.0.0.2", "rank_id": "1"},
                ],
            }
        ]
    }
    npus = {2: NpuFacts(devid=2, ip="10.0.0.2"), 3: NpuFacts(devid=3, ip="10.0.1.3")}
    found, compared = rank_table_disagreements(table, "s", {}, npus)
    assert compared == 2
    assert found == [
        (
            2,
            "device 2 (NPU 1 die 0): the rank table's backup_device_ip 10.0.1.9, but its partner "
            "device 3 (NPU 1 die 1) has 10.0.1.3",
        )
    ]


def test_the_example_op_retry_table_is_compared_on_backups_too():
    desired = desired_state()  # the example turns op-retry on: every device names its partner die
    table = json.loads(planned_table(desired))
    assert all("backup_device_ip" in d for s in table["server_list"] for d in s["device"])
    (verdict,) = run(desired, "a3p0s2", hardware(desired, "a3p0s2", 1, 0))
    assert verdict.status is Status.PASSED and "backup_device_ip" in verdict.message
