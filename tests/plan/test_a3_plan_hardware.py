"""Live plan on A3: what npu-smi spod-info reports (HostFacts.superpod, a3a's facts) against the
super-pod identity the inventory plans into the rank table."""

from __future__ import annotations

from dataclasses import replace

import yaml
from verify_cluster_facts import healthy_facts

from ascendprep.base.findings import Severity
from ascendprep.desired.ranktable import build_rank_table, identities_from_facts
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import ProbeError, SuperPodDie
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.superpods import sdid
from ascendprep.plan.diff import diff_host
from ascendprep.plan.superpods import IDENTITY_MISMATCH, NOT_DECLARED, NOT_READ, hardware_findings


def inventory(pods: bool = True, **entry):
    nodes = [{"name": "a3-[1-2]", "host": "10.231.0.[11-12]", **({"super_pod": 0} if pods else {}), **entry}]
    return inventory_from_text(
        yaml.safe_dump(
            {
                "name": "a3",
                "product": "atlas-a3",
                "device_network": {"subnets": ["10.30.0.0/24", "10.31.0.0/24"]},
                "nodes": nodes,
            }
        )
    )


def spod(server_index: int, pod: int = 0, dies: int = 16, override=None) -> dict:
    override = override or {}
    out = {}
    for devid in range(dies):
        npu, chip = divmod(devid, 2)
        out[devid] = SuperPodDie(npu, chip, override.get(devid, sdid(server_index, devid)), pod, server_index, 384)
    return out


def test_hardware_that_matches_the_plan_says_nothing() -> None:
    node = inventory().nodes[1]
    assert hardware_findings(node, spod(1)) == []


def test_a_server_in_another_slot_is_an_error_saying_what_to_write() -> None:
    node = inventory().nodes[1]
    (finding,) = hardware_findings(node, spod(5))
    assert finding.id == IDENTITY_MISMATCH and finding.severity is Severity.ERROR
    assert (
        "a3-2 die 0, 1," in finding.message
        and f"the hardware says SDID {sdid(5, 0)}, server 5 of super-pod 0" in finding.message
    )
    assert finding.fix == "set super_pod: 0 and server_index: 5 for a3-2"


def test_a_duplicated_sdid_on_one_die_is_named_on_that_die() -> None:
    node = inventory().nodes[1]
    (finding,) = hardware_findings(node, spod(1, override={3: sdid(0, 3)}))
    assert finding.npu == 3 and "a3-2 die 3:" in finding.message and "EI0014" in finding.message
    assert "do not follow their server index" in finding.fix


def test_a_pod_the_inventory_does_not_declare_is_a_warning() -> None:
    node = inventory(pods=False).nodes[0]
    (finding,) = hardware_findings(node, spod(0, pod=3))
    assert finding.id == NOT_DECLARED and finding.severity is Severity.WARNING
    assert "add super_pod: 3 (and server_index: 0)" in finding.fix
    # Server index 48 and above: not in a super-pod (the driver's own test).
    assert hardware_findings(node, spod(48)) == []


def test_an_unreadable_die_is_named_not_guessed() -> None:
    node = inventory().nodes[0]
    (finding,) = hardware_findings(node, {}, (ProbeError("npu_smi.spod", "timeout", "timed out", npu=2),))
    assert finding.id == NOT_READ and "NPU 2" in finding.message and "not confirmed" in finding.message


def test_live_plan_reports_it_per_host() -> None:
    desired = build_desired(inventory())
    facts = replace(healthy_facts(desired, "a3-2"), superpod=spod(7))
    plan = diff_host(desired, "a3-2", facts)
    assert [f.id for f in plan.findings] == [IDENTITY_MISMATCH]
    # apply's partial re-read (areas given) does not judge it again.
    assert diff_host(desired, "a3-2", facts, areas=("npu",)).findings == []


def test_a_table_from_the_hardware_equals_the_planned_one_when_they_agree() -> None:
    inv = inventory()
    desired = build_desired(inv)
    read = {node.name: identities_from_facts(node, spod(node.server_index)) for node in inv.nodes}
    assert build_rank_table(inv, desired.ipplan, read) == build_rank_table(inv, desired.ipplan)
    read["a3-2"] = identities_from_facts(inv.nodes[1], spod(0))
    differs = build_rank_table(inv, desired.ipplan, read)
    assert differs["server_list"][1]["device"][0]["super_device_id"] == str(sdid(0, 0))
