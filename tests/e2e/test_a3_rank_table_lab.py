"""On an A3 lab (2 servers in one super-pod, one NPU = two dies each, ``training.rank_table``):
the all-reduce proves every rank found itself in the applied 1.2 rank table (SDIDs read from the
simulated spod-info), names the ranks of a table whose ranks are out of order or that cannot be
read, and verify's ``superpod.rank_table`` names the die whose SDID is not the table's.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest
import yaml
from click.testing import CliRunner
from labsupport import start_test_lab
from rich.console import Console

from ascendprep.base.paths import RANK_TABLE
from ascendprep.commands.verify import verify_command
from ascendprep.inventory.load import load_inventory
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.allreduce import AllreduceOptions, run_allreduce
from ascendprep.run.apply import run_apply
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.run.plan import run_plan
from ascendprep.verify.allreduce.gates import RANK_TABLE as GATE

pytestmark = pytest.mark.lab

TINY = {"nproc_per_node": 2, "sizes": "1K", "warmup": 0, "iters": 1, "timeout": 120}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Tuple[Lab, Path, Path]]:
    lab = start_test_lab(nodes=2, product="atlas-a3", suffix="a3rt", npus=2, pod_servers=2)
    try:
        folder = tmp_path_factory.mktemp("a3rt")
        data = yaml.safe_load(lab.inventory_path.read_text())
        data["ssh"]["key"] = str(lab.key_path)
        data["ssh"]["known_hosts"] = str(lab.known_hosts_path)
        data["training"] = {**(data.get("training") or {}), "rank_table": True}
        inventory = folder / "inventory.yaml"
        inventory.write_text(yaml.safe_dump(data))
        plan = folder / "plan.json"
        assert run_plan(inventory, plan, "text", False, False, None) == 0
        assert run_apply(plan, False, None) == 0
        yield lab, inventory, folder
    finally:
        lab.down()


def allreduce(inventory: Path):
    loaded = load_inventory(inventory)
    text = io.StringIO()
    with Session(host_accesses(loaded), forks=2) as session:
        outcome = run_allreduce(
            loaded, session, AllreduceOptions(**TINY), Console(file=text, width=200, highlight=False)
        )
    return outcome, text.getvalue()


def on_node(lab: Lab, node: str, command: str) -> str:
    done = lab.ssh(node, command)
    assert done.returncode == 0, done.stderr
    return done.stdout


def verify(inventory: Path, workdir: Path) -> Tuple[int, Dict[str, Any]]:
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        outcome = CliRunner().invoke(verify_command, [str(inventory), "--format", "json", "--only", "superpod"])
    finally:
        os.chdir(cwd)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, json.loads(outcome.stdout)


def test_the_applied_table_is_taken_by_every_rank(cluster) -> None:
    _, inventory, _ = cluster
    outcome, printed = allreduce(inventory)
    gate = outcome.verdict.gate_named(GATE)
    assert outcome.passed and gate.ok, printed
    assert gate.figure == f"4/4 ranks found in {RANK_TABLE}"
    # the SDIDs were compared with the simulated spod-info, not skipped
    assert gate.warnings == (), gate.warnings
    assert f"rank table: 4/4 ranks found in {RANK_TABLE} OK" in printed


def test_a_table_with_ranks_out_of_order_is_named(cluster) -> None:
    lab, inventory, _ = cluster
    swap = (
        "import json; p='{0}'; t=json.load(open(p)); d=t['server_list'][1]['device']; "
        "d[0]['rank_id'], d[1]['rank_id'] = d[1]['rank_id'], d[0]['rank_id']; "
        "json.dump(t, open(p, 'w'))"
    ).format(RANK_TABLE)
    on_node(lab, "node2", f'cp -p {RANK_TABLE} {RANK_TABLE}.keep && python3 -c "{swap}"')
    try:
        outcome, printed = allreduce(inventory)
    finally:
        on_node(lab, "node2", f"mv {RANK_TABLE}.keep {RANK_TABLE}")
    gate = outcome.verdict.gate_named(GATE)
    assert not outcome.passed and not gate.ok, printed
    # the all-reduce itself worked; only the table is wrong, and on node2's ranks only
    assert outcome.verdict.gate_named("connectivity").ok
    assert [r.split(":")[0] for r in gate.reasons] == ["rank 2 (node2)", "rank 3 (node2)"]
    assert "rank_id 2 is device_id 1" in gate.reasons[0]
    (finding,) = [f for f in outcome.findings if f.id == "allreduce.rank_table"]
    assert "rank 2 (node2)" in finding.message


def test_a_table_that_cannot_be_read_is_named(cluster) -> None:
    lab, inventory, _ = cluster
    on_node(lab, "node1", f"mv {RANK_TABLE} {RANK_TABLE}.keep")
    try:
        outcome, printed = allreduce(inventory)
    finally:
        on_node(lab, "node1", f"mv {RANK_TABLE}.keep {RANK_TABLE}")
    gate = outcome.verdict.gate_named(GATE)
    assert not gate.ok and not outcome.passed, printed
    assert [r.split(":")[0] for r in gate.reasons] == ["rank 0 (node1)", "rank 1 (node1)"]
    assert all("cannot be read" in r for r in gate.reasons)


def test_verify_compares_the_table_with_the_dies_sdids(cluster, tmp_path: Path) -> None:
    lab, inventory, _ = cluster
    code, doc = verify(inventory, tmp_path)
    checks = [c for c in doc["checks"] if c["check"] == "superpod.rank_table"]
    assert [c["status"] for c in checks] == ["passed", "passed"], checks
    assert all(c["evidence"]["devices_compared"] == 2 for c in checks)
    # unlike variant: die 1 of node2 reports its sibling's SDID; the table's super_device_id is named
    with fault_injected(lab, "node2", "sdid-duplicate", npu=1):
        code, doc = verify(inventory, tmp_path)
    assert code == 1
    failed = [
        (c["node"], c["npu"], c["message"])
        for c in doc["checks"]
        if c["check"] == "superpod.rank_table" and c["status"] == "failed"
    ]
    assert [(node, npu) for node, npu, _ in failed] == [("node2", 1)], failed
    assert "super_device_id" in failed[0][2] and "device 1 (NPU 0 die 1)" in failed[0][2]
