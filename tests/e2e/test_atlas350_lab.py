"""plan → apply → plan on an Atlas 350 lab (Ascend 950PR, two servers of two cards): the bond
addresses are set with the 950 syntax, the rank table 2.0 built from both hosts' EIDs is written
to every node as the plan showed it, and a second plan finds nothing left; the table on the
nodes, and the one built from verify's facts, pass HCCL's 2.0 rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest
from labsupport import start_test_lab, verify_json

from ascendprep.base.paths import RANK_TABLE
from ascendprep.desired.ranktable2 import rank_table_v2_from_facts
from ascendprep.facts.gather import parse_gather_output
from ascendprep.inventory.load import load_inventory
from ascendprep.inventory.ranktable2_rules import check_rank_table_v2
from ascendprep.lab.lab import Lab
from ascendprep.lab.spec import Versions
from ascendprep.plan.drift import sha256_text
from ascendprep.run.apply import run_apply
from ascendprep.run.bundle import read_bundle
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def a350_lab() -> Iterator[Lab]:
    # CANN 9.0.0 and the 25.7 driver line: what the card needs (docs/ascend950.md)
    versions = Versions(cann="9.0.0", driver="25.7.rc1")
    lab = start_test_lab(nodes=2, product="atlas-350", suffix="a350", npus=2, versions=versions)
    try:
        yield lab
    finally:
        lab.down()


def _plan(lab: Lab, path: Path) -> dict:
    assert run_plan(lab.inventory_path, path, "text", False, False, None) == 0
    return json.loads(path.read_text())


def test_plan_apply_plan_converges_and_the_2_0_rank_table_passes(
    a350_lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _plan(a350_lab, tmp_path / "plan.json")
    shown = capsys.readouterr().out
    assert "ranktable.v2_planned" in shown and "ranktable.v2_from_hosts" not in shown
    targets = {c["target"] for host in first["hosts"] for c in host["changes"] if c["kind"].startswith("hccn.")}
    assert targets == {f"npu {n} bond{n}" for n in (0, 1)}  # the lab's slot is the NPU id
    # the 2.0 table from both hosts' EIDs, one digest on every node, the topology file named
    tables = [c for host in first["hosts"] for c in host["changes"] if c["target"] == RANK_TABLE]
    assert len(tables) == 2 and len({c["after"] for c in tables}) == 1
    assert run_apply(tmp_path / "plan.json", False, None) == 0
    second = _plan(a350_lab, tmp_path / "again.json")
    assert [c for host in second["hosts"] for c in host["changes"]] == []
    for node in ("node1", "node2"):
        written = a350_lab.ssh(node, f"cat {RANK_TABLE}").stdout
        assert sha256_text(written) == tables[0]["after"]
        on_node = json.loads(written)
        assert check_rank_table_v2(on_node, len(written.encode())) == [] and on_node["rank_count"] == 4

    code, doc = verify_json(a350_lab, tmp_path)
    saved = read_bundle(tmp_path / doc["bundle"])
    facts = {node: parse_gather_output(saved.hosts[node].gather_stdout) for node in ("node1", "node2")}
    table, problems = rank_table_v2_from_facts(load_inventory(a350_lab.inventory_path), facts)
    assert problems == [] and table is not None
    assert check_rank_table_v2(table, len(json.dumps(table))) == []
    assert table["rank_count"] == 4 and all(
        a["addr_type"] == "EID" and len(a["addr"]) == 32
        for rank in table["rank_list"]
        for a in rank["level_list"][0]["rank_addr_list"]
    )
