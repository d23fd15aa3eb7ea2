"""Issue 17 in the lab: a process on an NPU, a listener on HCCL's port 60000 and a NIC without the
address each fail exactly their check on their node, with the process or NIC named; a listener on
an unrelated port fails nothing; ``verify --allreduce`` refuses the busy NPU; healed, all pass.

One lab for all of it (lab set-up is the slow part): four nodes of four NPUs, every fault on its
own node, so each check must name the right node and only it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from labsupport import start_test_lab, verify_json

from ascendprep.lab.lab import Lab
from ascendprep.lab.sim.npu_procs import busy_pid
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab

MINE = ("npu.busy", "node.hccl_ports", "node.host_nic")


@pytest.fixture(scope="module")
def jobs_lab(tmp_path_factory) -> Iterator[Lab]:
    lab = start_test_lab(nodes=4, product="atlas-a2", suffix="jobs", npus=4)
    try:
        plan = tmp_path_factory.mktemp("plan") / "plan.json"
        assert run_plan(lab.inventory_path, plan, "text", False, False, None) == 0
        assert run_apply(plan, False, None) == 0
        yield lab
    finally:
        lab.down()


def _verify(lab: Lab, workdir: Path, *options: str) -> tuple[int, Dict[str, Any]]:
    return verify_json(lab, workdir, *options)


def _failed(doc: Dict[str, Any]) -> List[tuple]:
    return sorted(
        (c["check"], c["node"], c["npu"]) for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "error"
    )


def test_each_cause_fails_its_check_on_its_node_and_passes_healed(jobs_lab: Lab, tmp_path: Path) -> None:
    try:
        jobs_lab.fault("node2", "npu-busy", npu=1)
        jobs_lab.fault("node3", "port-listener")
        jobs_lab.fault("node1", "port-listener", port=61000)  # unlike: not HCCL's block, not the master port
        jobs_lab.fault("node4", "nic-no-address")
        code, doc = _verify(jobs_lab, tmp_path)
        assert code == 1
        assert _failed(doc) == [
            ("node.hccl_ports", "node3", None),
            ("node.host_nic", "node4", None),
            ("npu.busy", "node2", 1),
        ]
        by = {(c["check"], c["node"], c["npu"]): c for c in doc["checks"]}
        busy = by[("npu.busy", "node2", 1)]
        assert f"pid {busy_pid(1)} (python3, 37709 MB)" in busy["message"] and f"kill {busy_pid(1)}" in busy["fix"]
        assert by[("npu.busy", "node2", 0)]["status"] == "passed"
        ports = by[("node.hccl_ports", "node3", None)]
        assert "listens on 0.0.0.0:60000" in ports["message"] and ports["evidence"]["source"] == "ss"
        assert ports["evidence"]["taken"][0]["process"].startswith("python")
        assert by[("node.hccl_ports", "node1", None)]["status"] == "passed"
        nic = by[("node.host_nic", "node4", None)]
        assert "binds ascnic0" in nic["message"] and "leaves through eth0" in nic["message"]

        # The all-reduce is not started on a busy NPU, and says why.
        junit = tmp_path / "junit.xml"
        code, doc = _verify(jobs_lab, tmp_path, "--allreduce", "--only", "npu", "--junit", str(junit))
        assert code == 1 and doc["allreduce"] is None
        refusal = [f for f in doc["findings"] if f["id"] == "allreduce.busy_npus"]
        assert len(refusal) == 1 and f"node2: NPU 1 chip 0 pid {busy_pid(1)}" in refusal[0]["message"]
        assert "allreduce.busy_npus" in junit.read_text()  # CI sees why the all-reduce did not run
    finally:
        jobs_lab.heal()
    code, doc = _verify(jobs_lab, tmp_path)
    assert _failed(doc) == [] and code == 0
    assert {c["status"] for c in doc["checks"] if c["check"] in MINE} == {"passed"}
