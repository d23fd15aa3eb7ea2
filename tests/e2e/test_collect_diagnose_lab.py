"""collect + diagnose on the virtual cluster: for every fault a lab job can fail with, and for two
at once, diagnose names the node and NPU the fault was put on, from the bundle collect made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from click.testing import CliRunner
from labsupport import start_test_lab

from ascendprep.commands.collect import collect_command
from ascendprep.commands.diagnose import diagnose_command
from ascendprep.lab.job import run_job
from ascendprep.lab.lab import Lab

pytestmark = pytest.mark.lab

#: The knowledge-base entry diagnose names for each lab fault that leaves lines of its own (a
#: killed rank leaves none: only its silence, and the timeouts of the others, name it).
CAUSE = {
    "port-down": "npu.port_down",
    "port-taken": "hccl.port_listen",
    "wrong-if-ip": "hccl.if_ip_not_found",
    "tls-mismatch": "hccl.tls_inconsistent",
    "stale-ranktable": "hccp.ip_check",
    "hbm-ecc": "npu.hbm_ecc",
    "npu-oom": "npu.out_of_memory",
}


@pytest.fixture(scope="module")
def diagnose_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=3, product="atlas-a2", suffix="diagnose", npus=4)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture
def healed(diagnose_lab: Lab) -> Iterator[Lab]:
    yield diagnose_lab
    diagnose_lab.heal()
    for node in diagnose_lab.nodes:
        diagnose_lab.run_in_node(node.name, ["rm", "-rf", "/root/ascend/log", "/root/jobs"])


def collect_and_diagnose(lab: Lab, faults: List[str], out: Path) -> tuple[Dict[str, Any], Dict[str, Any]]:
    job = run_job(lab, "job", faults)
    collected = CliRunner().invoke(
        collect_command, [str(lab.inventory_path), "--out", str(out), "--console", job["console_glob"]]
    )
    assert collected.exit_code == 0, collected.output
    diagnosed = CliRunner().invoke(
        diagnose_command, [str(out), "--inventory", str(lab.inventory_path), "--format", "json"]
    )
    assert diagnosed.exception is None or isinstance(diagnosed.exception, SystemExit), diagnosed.output
    assert diagnosed.exit_code == 0, diagnosed.output
    return job, json.loads(diagnosed.stdout)


@pytest.mark.parametrize(
    "fault",
    [
        "port-down:node2:1",
        "rank-killed:node1:2",
        "port-taken:node3:0",
        "wrong-if-ip:node2:3",
        "tls-mismatch:node2:2",
        "stale-ranktable:node3:1",
        "hbm-ecc:node1:3",
        "npu-oom:node3:2",
    ],
    ids=lambda fault: fault.split(":")[0],
)
def test_diagnose_names_the_node_and_npu_of_the_fault(healed: Lab, tmp_path: Path, fault: str):
    job, report = collect_and_diagnose(healed, [fault], tmp_path / "run")
    placed = job["faults"][0]
    (found,) = report["jobs"]
    assert found["root"]["decided"]
    culprits = [(c["node"], c["device"], c["rank"]) for c in found["root"]["culprits"]]
    assert culprits == [(placed["node"], placed["npu"], placed["rank"])]
    if placed["kind"] in CAUSE:
        roots = {c["key"]: {e["node"] for e in c["evidence"]} for c in found["causes"] if c["root"]}
        assert roots.get(CAUSE[placed["kind"]]) == {placed["node"]}, found["causes"]


@pytest.mark.parametrize(
    "faults",
    [["port-down:node1:0", "hbm-ecc:node3:2"], ["port-taken:node2:1", "wrong-if-ip:node3:3"]],
    ids=lambda faults: "+".join(f.split(":")[0] for f in faults),
)
def test_two_faults_at_once_are_both_root_causes_on_their_nodes(healed: Lab, tmp_path: Path, faults: List[str]):
    job, report = collect_and_diagnose(healed, faults, tmp_path / "run")
    (found,) = report["jobs"]
    roots = {c["key"]: {e["node"] for e in c["evidence"]} for c in found["causes"] if c["root"]}
    placed = {(f["node"], f["npu"], f["rank"]) for f in job["faults"]}
    for fault in job["faults"]:
        assert roots.get(CAUSE[fault["kind"]]) == {fault["node"]}, found["causes"]
    assert {(c["node"], c["device"], c["rank"]) for c in found["root"]["culprits"]} <= placed
