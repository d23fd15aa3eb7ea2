"""Rank table 2.0 for Ascend 950: a written table holds every rule of HCCL's 2.0 parser, and a
table breaking each rule is refused by the rule's name (docs/ascend950.md V1-V9)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ascendprep.desired.ranktable2 import (
    DieAddress,
    NpuUb,
    RankTableInputError,
    build_rank_table_v2,
    normalise_eid,
    topology_files,
)
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.ranktable2_rules import RANK_TABLE_V2_MAX_BYTES, check_rank_table_v2

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ranktable2"

#: The EIDs of the vendor's -dev_info example, as -dev_info prints them per udma device
#: (hicann/driver docs/en/Ascend_950_HCCN_Tool/.../querying-the-npu-device-information.md).
DOC_EID = "0000:0000:0000:0000:0010:0000:dfdf:0020"


def inventory(nodes=2, npus=2):
    data = {
        "name": "t",
        "product": "atlas-350",
        "npus_per_node": npus,
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": f"n[1-{nodes}]", "host": f"10.0.0.[11-{10 + nodes}]"}]
        if nodes > 1
        else [{"name": "n1", "host": "10.0.0.11"}],
    }
    return inventory_from_text(yaml.safe_dump(data))


def eid(node: int, npu: int, die: int) -> str:
    return f"0000:0000:0000:0000:0010:0000:df{node:02x}:{npu:02x}{die:02x}"


def ub_for(inv):
    """Two dies per NPU, the Atlas 350 2-card ports (4, 5, 6 and 8 on die 0) and one die-1 port."""
    return {
        node.name: {
            npu: NpuUb(
                device_id=npu,
                addresses=(
                    DieAddress(eid(node.index, npu, 0), ("0/4", "0/5", "0/6", "0/8")),
                    DieAddress(eid(node.index, npu, 1), ("1/0",), plane_id="plane1"),
                ),
            )
            for npu in range(node.npus)
        }
        for node in inv.nodes
    }


def table(nodes=2, npus=2):
    inv = inventory(nodes, npus)
    return build_rank_table_v2(inv, ub_for(inv), {node.name: node.host for node in inv.nodes})


def rules(t, compact_bytes=None):
    return sorted({v.rule for v in check_rank_table_v2(t, compact_bytes)})


def test_the_eid_of_dev_info_is_normalised_to_32_hex_digits():
    assert normalise_eid(DOC_EID) == "000000000000000000100000dfdf0020"
    assert normalise_eid("000000000000000000100000DFDF0020") == "000000000000000000100000dfdf0020"
    with pytest.raises(RankTableInputError):
        normalise_eid("::10:0:dfdf:20")  # the ipourma0 form is not an EID the table takes


def test_a_written_table_passes_every_rule():
    t = table()
    assert check_rank_table_v2(t, len(json.dumps(t))) == []
    assert t["version"] == "2.0" and t["rank_count"] == 4
    first = t["rank_list"][0]
    # integers, not strings (V2)
    assert all(type(first[k]) is int for k in ("rank_id", "local_id", "device_id"))
    assert [r["rank_id"] for r in t["rank_list"]] == [0, 1, 2, 3]
    assert [(r["level_list"][0]["net_instance_id"], r["local_id"]) for r in t["rank_list"]] == [
        ("n1", 0),
        ("n1", 1),
        ("n2", 0),
        ("n2", 1),
    ]
    layer0, layer1 = first["level_list"]
    assert layer0["net_type"] == "TOPO_FILE_DESC" and layer0["net_layer"] == 0
    # one address list entry per die, ports as die/port
    assert [a["ports"] for a in layer0["rank_addr_list"]] == [["0/4", "0/5", "0/6", "0/8"], ["1/0"]]
    assert layer0["rank_addr_list"][0]["addr"] == "000000000000000000100000df000000"
    assert layer1 == {
        "net_layer": 1,
        "net_instance_id": "cluster",
        "net_type": "CLOS",
        "net_attr": "",
        "rank_addr_list": [{"addr_type": "IPV4", "addr": "10.0.0.11", "ports": ["d2h"], "plane_id": "0"}],
    }
    # no 1.x key anywhere
    text = json.dumps(t)
    assert "server_list" not in text and "device_ip" not in text and "server_id" not in text


def test_one_server_has_only_the_topology_file_layer():
    t = table(nodes=1, npus=4)
    assert check_rank_table_v2(t) == [] and all(len(r["level_list"]) == 1 for r in t["rank_list"])


def test_the_vendor_guide_example_passes():
    example = json.loads((FIXTURES / "hccl_guide_eid_example.json").read_text())["table"]
    assert check_rank_table_v2(example) == []


def _break(mutate):
    t = table()
    mutate(t)
    return t


def _rank0(t):
    return t["rank_list"][0]


def _layer0_addresses(t):
    return _rank0(t)["level_list"][0]["rank_addr_list"]


@pytest.mark.parametrize(
    ("rule", "mutate"),
    [
        ("V1", lambda t: t.update(version="1.0")),
        ("V1", lambda t: t.update(status="ready")),
        ("V1", lambda t: t.update(detour="yes")),
        ("V2", lambda t: _rank0(t).update(rank_id="0")),
        ("V2", lambda t: t.update(rank_count="4")),
        ("V2", lambda t: _rank0(t)["level_list"][0].update(net_layer="0")),
        ("V3", lambda t: t.update(rank_count=5)),
        ("V3", lambda t: t["rank_list"][1].update(rank_id=0)),
        ("V3", lambda t: t.update(rank_list=[])),
        ("V4", lambda t: _rank0(t).update(device_id=65)),
        ("V4", lambda t: t["rank_list"][1].update(local_id=0)),
        ("V4", lambda t: _rank0(t).update(device_port=0)),
        ("V5", lambda t: _rank0(t)["level_list"][0].update(net_type="CLOS")),
        ("V5", lambda t: _rank0(t)["level_list"][1].update(net_type="RING")),
        ("V5", lambda t: _rank0(t).update(level_list=list(reversed(_rank0(t)["level_list"])))),
        ("V5", lambda t: _rank0(t).update(level_list=[copy.deepcopy(_rank0(t)["level_list"][0])] * 9)),
        ("V5", lambda t: _rank0(t)["level_list"][0].update(net_instance_id="")),
        ("V6", lambda t: _layer0_addresses(t)[0].update(addr=DOC_EID)),
        ("V6", lambda t: _layer0_addresses(t)[0].update(ports=["4"])),
        ("V6", lambda t: _layer0_addresses(t)[0].update(ports=["0/4", "1/5"])),
        ("V6", lambda t: _layer0_addresses(t)[1].update(ports=["0/4"])),
        ("V6", lambda t: _layer0_addresses(t)[0].update(addr_type="IPv4")),
        ("V6", lambda t: _layer0_addresses(t).extend([copy.deepcopy(_layer0_addresses(t)[1])] * 24)),
        ("V6", lambda t: _rank0(t)["level_list"][1]["rank_addr_list"][0].update(addr="10.0.0")),
        ("V6", lambda t: _layer0_addresses(t)[0].update(ports=[f"0/{p}" for p in range(17)])),
        ("V9", lambda t: t.update(server_list=[])),
        ("V9", lambda t: _rank0(t).update(device_ip="10.20.0.2")),
    ],
)
def test_a_table_breaking_a_rule_is_refused_by_its_name(rule, mutate):
    found = rules(_break(mutate))
    assert rule in found, found


def test_a_table_over_one_gigabyte_is_refused():
    assert rules(table(), compact_bytes=RANK_TABLE_V2_MAX_BYTES + 1) == ["V8"]
    assert rules(table(), compact_bytes=RANK_TABLE_V2_MAX_BYTES) == []


def test_hostile_values_are_reported_not_raised():
    assert rules(["not", "a", "table"]) == ["V1"]
    assert "V3" in rules({"version": "2.0", "rank_count": 1, "rank_list": [42]})


def test_the_builder_refuses_missing_or_malformed_addresses():
    inv = inventory()
    ub = ub_for(inv)
    hosts = {node.name: node.host for node in inv.nodes}
    del ub["n2"][1]
    with pytest.raises(RankTableInputError, match="n2 NPU 1: no UB address"):
        build_rank_table_v2(inv, ub, hosts)
    ub = ub_for(inv)
    ub["n1"][0] = NpuUb(0, (DieAddress(DOC_EID, ("0/4", "1/5")),))
    with pytest.raises(RankTableInputError, match="spans two dies"):
        build_rank_table_v2(inv, ub, hosts)
    with pytest.raises(RankTableInputError, match="no host IPv4"):
        build_rank_table_v2(inv, ub_for(inv), {"n1": "10.0.0.11"})


def test_topology_files_follow_the_card_count():
    assert topology_files(inventory(npus=2)) == ["/usr/local/Ascend/driver/topo/950/atlas_350_2.json"]
    assert topology_files(inventory(npus=4)) == ["/usr/local/Ascend/driver/topo/950/atlas_350_3.json"]


def test_a_950_plan_writes_no_1x_rank_table_and_says_why():
    from ascendprep.base.paths import RANK_TABLE
    from ascendprep.desired.state import build_desired

    state = build_desired(inventory())
    assert all(f.path != RANK_TABLE for node in state.nodes.values() for f in node.files)
    [pending] = [f for f in state.findings if f.id == "ranktable.v2_from_hosts"]
    assert "atlas_350_2.json" in pending.message and "2.0" in pending.message


def test_a_950_launch_from_the_rank_table_points_set_env_at_the_planned_file():
    from ascendprep.base.paths import RANK_TABLE, SET_ENV_SH
    from ascendprep.desired.state import build_desired

    data = {
        "name": "t",
        "product": "atlas-350",
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": "n1", "host": "10.0.0.11"}],
        "training": {"rank_table": True},
    }
    state = build_desired(inventory_from_text(yaml.safe_dump(data, sort_keys=False), file="inv.yaml"))
    [set_env] = [f for f in state.nodes["n1"].files if f.path == SET_ENV_SH]
    assert f"RANK_TABLE_FILE={RANK_TABLE}" in set_env.content


def test_addresses_from_the_vendor_dev_info_example_match_the_hccl_guide():
    """-dev_info's example (ports 0/4-0/6; four EIDs) gives the guide's three addresses."""
    from ascendprep.desired.ranktable2 import addresses_from_dev_info

    eids = [f"0000:0000:0000:0000:0010:0000:dfdf:00{low}" for low in ("20", "28", "30", "51")]
    addresses = addresses_from_dev_info([(0, 4), (0, 5), (0, 6)], eids)
    example = json.loads((FIXTURES / "hccl_guide_eid_example.json").read_text())["table"]
    guide = example["rank_list"][0]["level_list"][0]["rank_addr_list"]
    assert [(a.eid, list(a.ports)) for a in addresses] == [(g["addr"], g["ports"]) for g in guide]
    with pytest.raises(RankTableInputError, match="3 UB ports but only 2 EIDs"):
        addresses_from_dev_info([(0, 4), (0, 5), (0, 6)], eids[:2])


def test_a_table_from_the_hosts_dev_info_passes_the_rules():
    """Facts as the gather fills them: each NPU's -dev_info (the vendor's example form) parsed."""
    from ascendprep.desired.ranktable2 import rank_table_v2_from_facts
    from ascendprep.facts.model import HostFacts, NpuFacts, NpuSmiChip
    from ascendprep.facts.ub_dev_info import parse_dev_info
    from ascendprep.facts.ub_model import UbFacts

    text = (Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out").read_text()
    dev_info = parse_dev_info(text)
    inv = inventory(nodes=2, npus=2)
    facts = {
        node.name: HostFacts(
            npus={n: NpuFacts(devid=n, ub=UbFacts(dev_info=dev_info)) for n in range(2)},
            npu_chips=tuple(NpuSmiChip(n, 0, "950PR", slot_id=n, chip_phy_id=10 + n) for n in range(2)),
        )
        for node in inv.nodes
    }
    table, problems = rank_table_v2_from_facts(inv, facts)
    assert problems == [] and table is not None
    assert check_rank_table_v2(table) == []
    assert [r["device_id"] for r in table["rank_list"]] == [10, 11, 10, 11]
    assert [a["ports"] for a in table["rank_list"][0]["level_list"][0]["rank_addr_list"]] == [["0/4"], ["0/5"], ["0/6"]]
    del facts["n2"]
    assert rank_table_v2_from_facts(inv, facts) == (None, ["n2: not read"])
