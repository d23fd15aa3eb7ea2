"""Ascend 950: the rank table 2.0 planned from every host's ``-dev_info`` as the managed file
/etc/ascendprep/rank_table.json, all or nothing, and only when it passes HCCL's 2.0 rules."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ascendprep.base.findings import Severity
from ascendprep.base.paths import RANK_TABLE
from ascendprep.desired.state import build_desired, plan_rank_table_v2
from ascendprep.facts.model import HostFacts, NpuFacts, NpuSmiChip
from ascendprep.facts.ub_dev_info import parse_dev_info
from ascendprep.facts.ub_model import UbFacts
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.ranktable2_rules import check_rank_table_v2

#: The vendor's -dev_info example (hicann/driver docs/en/Ascend_950_HCCN_Tool, querying the NPU
#: device information): ports 0/4, 0/5, 0/6 and their EIDs.
DEV_INFO = parse_dev_info(
    (Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out").read_text()
)


def desired(nodes=2, npus=2):
    data = {
        "name": "t",
        "product": "atlas-350",
        "npus_per_node": npus,
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": f"n[1-{nodes}]", "host": f"10.0.0.[11-{10 + nodes}]"}],
    }
    return build_desired(inventory_from_text(yaml.safe_dump(data)))


def host(npus=2, phy_base=10, dev_info=DEV_INFO):
    return HostFacts(
        npus={n: NpuFacts(devid=n, ub=UbFacts(dev_info=dev_info)) for n in range(npus)},
        npu_chips=tuple(NpuSmiChip(n, 0, "950PR", slot_id=n, chip_phy_id=phy_base + n) for n in range(npus)),
    )


def table_files(state):
    return {name: [f for f in node.files if f.path == RANK_TABLE] for name, node in state.nodes.items()}


def test_every_node_gets_the_same_table_built_from_all_hosts_eids():
    state = desired()
    [planned] = plan_rank_table_v2(state, {"n1": host(), "n2": host()})
    files = table_files(state)
    [first] = files["n1"]
    assert [f.content for f in files["n2"]] == [first.content]
    table = json.loads(first.content)
    assert check_rank_table_v2(table, len(first.content)) == []
    assert table["version"] == "2.0" and table["rank_count"] == 4
    assert [r["device_id"] for r in table["rank_list"]] == [10, 11, 10, 11]
    # the plan says which factory topology file HCCL reads beside the table (2 cards: atlas_350_2)
    assert planned.id == "ranktable.v2_planned" and planned.severity is Severity.INFO
    assert "/usr/local/Ascend/driver/topo/950/atlas_350_2.json" in planned.message and "4 ranks" in planned.message
    assert "RANK_TABLE_FILE" in planned.fix


def test_a_host_whose_eids_were_not_read_gets_no_table_anywhere_and_is_named():
    state = desired()
    findings = plan_rank_table_v2(state, {"n1": host(), "n2": None})
    assert [(f.id, f.severity, f.node) for f in findings] == [("ranktable.v2_eids", Severity.ERROR, "n2")]
    assert "n2: not read" in findings[0].message
    assert table_files(state) == {"n1": [], "n2": []}


def test_an_npu_without_dev_info_names_its_host():
    state = desired()
    partial = host()
    partial.npus[1] = NpuFacts(devid=1)
    findings = plan_rank_table_v2(state, {"n1": host(), "n2": partial})
    assert [f.node for f in findings] == ["n2"] and "n2 NPU 1: -dev_info not read" in findings[0].message
    assert table_files(state) == {"n1": [], "n2": []}


def test_a_table_breaking_a_2_0_rule_is_refused_by_the_rule_name():
    state = desired()
    # npu-smi reporting physical ids past 64: HCCL's parser refuses such a device_id (V4)
    findings = plan_rank_table_v2(state, {"n1": host(phy_base=70), "n2": host()})
    assert findings and {f.id for f in findings} == {"ranktable.V4"}
    assert all(f.severity is Severity.ERROR and "V4" in f.message for f in findings)
    assert table_files(state) == {"n1": [], "n2": []}


def test_planning_again_replaces_the_table_instead_of_adding_a_second():
    state = desired()
    plan_rank_table_v2(state, {"n1": host(), "n2": host()})
    plan_rank_table_v2(state, {"n1": host(phy_base=20), "n2": host()})
    [again] = table_files(state)["n1"]
    assert [r["device_id"] for r in json.loads(again.content)["rank_list"]][:2] == [20, 21]


def test_one_card_servers_have_no_ub_port_so_no_table_and_no_error():
    state = desired(npus=1)
    [finding] = plan_rank_table_v2(state, {"n1": host(npus=1), "n2": host(npus=1)})
    assert finding.id == "ranktable.v2_single_card" and finding.severity is Severity.INFO
    assert table_files(state) == {"n1": [], "n2": []}
