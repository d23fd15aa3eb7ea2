"""The job-environment checks against the virtual cluster (issue 17): each lab fault fails its
check on the faulty node, the healed lab passes, and each fault's unlike variant passes too.

One lab, planned and applied once; the rank-table launch variant (training.rank_table: true)
re-plans last, from a copy of the lab's inventory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.lab.lab import Lab
from ascendprep.lab.sim import jobenv as sim
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


class Applied:
    def __init__(self, lab: Lab, workdir: Path):
        self.lab = lab
        self.workdir = workdir

    def verify(self, *args: str, inventory: Path | None = None) -> Tuple[int, Dict[str, Any]]:
        cwd = os.getcwd()
        os.chdir(self.workdir)
        try:
            outcome = CliRunner().invoke(
                verify_command, [str(inventory or self.lab.inventory_path), "--format", "json", *args]
            )
        finally:
            os.chdir(cwd)
        assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
        return outcome.exit_code, json.loads(outcome.stdout)


@pytest.fixture(scope="module")
def applied(verify_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Applied]:
    workdir = tmp_path_factory.mktemp("verify-lab-job")
    plan = workdir / "plan.json"
    assert run_plan(verify_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    yield Applied(verify_lab, workdir)


def _of(doc: Dict[str, Any], check: str, node: str = "node2") -> Dict[str, Any]:
    (result,) = [c for c in doc["checks"] if c["check"] == check and c["node"] == node]
    return result


def _failed_elsewhere(doc: Dict[str, Any], check: str) -> List[Tuple[str, str]]:
    return [
        (c["check"], c["node"])
        for c in doc["checks"]
        if c["status"] == "failed" and (c["check"], c["node"]) != (check, "node2")
    ]


def test_clean_lab_passes_the_job_checks(applied: Applied) -> None:
    code, doc = applied.verify("--only", "job")
    assert code == 0, [c["message"] for c in doc["checks"] if c["status"] == "failed"]
    for node in ("node1", "node2", "node3"):
        assert _of(doc, "job.rank_table", node)["status"] == "passed"
        assert _of(doc, "job.connect_timeout", node)["status"] == "passed"
        assert _of(doc, "job.nnal", node)["status"] == "passed"
        assert _of(doc, "job.torch_npu_import", node)["status"] == "passed"
        assert _of(doc, "job.container", node)["status"] == "skipped"  # no --exec-via


@pytest.mark.parametrize(
    "kind, check, says",
    [
        ("stray-rank-table", "job.rank_table", sim.STRAY_RANK_TABLE),
        ("short-connect-timeout", "job.connect_timeout", f"'{sim.SHORT_TIMEOUT_S}'"),
        ("torch-npu-import", "job.torch_npu_import", sim.UNDEFINED_SYMBOL),
    ],
)
def test_a_job_fault_fails_its_check_on_its_node_and_healing_passes(
    applied: Applied, kind: str, check: str, says: str
) -> None:
    with fault_injected(applied.lab, "node2", kind):
        code, doc = applied.verify("--only", "job")
    result = _of(doc, check)
    assert code == 1 and result["status"] == "failed" and result["severity"] == "error"
    assert says in result["message"], result["message"]
    assert _failed_elsewhere(doc, check) == []
    code, doc = applied.verify("--only", check)
    assert code == 0 and _of(doc, check)["status"] == "passed"


def test_exec_via_names_what_the_container_hides_and_a_full_container_passes(applied: Applied) -> None:
    with fault_injected(applied.lab, "node2", "container-hides"):
        code, hiding = applied.verify("--only", "job.container", "--exec-via", sim.CONTAINER_HIDING)
        _, full = applied.verify("--only", "job", "--exec-via", sim.CONTAINER)
    result = _of(hiding, "job.container")
    assert code == 1 and result["status"] == "failed"
    for hidden in (
        "hccn_tool",
        "/usr/local/Ascend/driver/lib64",
        "/etc/ascendprep/env.sh",
        "/etc/ascendprep/set_env.sh",
    ):
        assert hidden in result["message"], result["message"]
    assert sim.CONTAINER_HIDING in result["message"]
    # The unlike variant: a container that sees everything passes, and the job checks run inside it.
    assert _of(full, "job.container")["status"] == "passed"
    assert _of(full, "job.torch_npu_import")["status"] == "passed"
    # node1 and node3 have no wrapper: it does not start, and every check there says so.
    for node in ("node1", "node3"):
        reach = _of(full, "node.reachable", node)
        assert (
            reach["status"] == "failed"
            and "did not start the checks" in reach["message"]
            and "not found" in reach["message"]
        )
        assert (
            _of(full, "job.container", node)["status"] == "skipped"
            and "node.reachable" in _of(full, "job.container", node)["message"]
        )


def test_exec_via_carries_the_pings_and_every_all_reduce_step_into_the_container(applied: Applied) -> None:
    """Each node's wrapper notes which step it was asked to run (the name the step's shell gets;
    the gather's is ``sh``), then runs it in a "container" that sees everything: the pings and
    the all-reduce pass, and every one of their steps went through the wrapper."""
    via, log = "/usr/local/bin/ascendprep-test-via", "/root/ascendprep-test-via.log"
    wrapper = f'#!/bin/sh\n[ "$1 $2" = "sh -c" ] && echo "$4" >> {log}\nexec unshare -m -- "$@"\n'
    nodes = [node.name for node in applied.lab.nodes]
    for node in nodes:
        applied.lab.run_in_node(node, ["sh", "-c", f"cat > {via} && chmod 755 {via} && rm -f {log}"], input=wrapper)
    try:
        code, doc = applied.verify(
            "--only",
            "node",
            "--only",
            "cluster.reachability",
            "--exec-via",
            via,
            "--sample-interval",
            "0",
            "--allreduce",
            "--nproc-per-node",
            "1",
            "--sizes",
            "1K:4K",
            "--backend",
            "gloo",
        )
        steps = {node: applied.lab.run_in_node(node, ["cat", log]).stdout.split() for node in nodes}
    finally:
        for node in nodes:
            applied.lab.run_in_node(node, ["rm", "-f", via, log])
    assert code == 0 and doc["allreduce"]["passed"], [c["message"] for c in doc["checks"] if c["status"] != "passed"]
    reach = [c for c in doc["checks"] if c["check"] == "cluster.reachability"]
    assert reach and {c["status"] for c in reach} == {"passed"}
    for node, names in steps.items():
        assert names[0] == "sh" and {
            "ascendprep-all-reduce-preflight",
            "ascendprep-worker-upload",
            "ascendprep-all-reduce-launch",
        } <= set(names), (node, names)
    pingers = {c["evidence"]["from"]["node"] for c in reach}
    assert pingers and all("ascendprep-ping" in steps[node] for node in pingers), steps


def test_rank_table_launch_exports_the_planned_table_and_passes(applied: Applied) -> None:
    """The unlike variant of stray-rank-table: the planned table, asked for by the inventory."""
    original = applied.lab.inventory_path
    variant = original.with_name("inventory-rank-table.yaml")
    variant.write_text(original.read_text() + "training:\n  rank_table: true\n")
    try:
        plan = applied.workdir / "plan-rank-table.json"
        assert run_plan(variant, plan, "text", False, False, None) == 0
        assert run_apply(plan, False, None) == 0
        code, doc = applied.verify("--only", "job.rank_table", inventory=variant)
        result = _of(doc, "job.rank_table")
        assert code == 0 and result["status"] == "passed", result["message"]
        assert result["evidence"]["set_env_RANK_TABLE_FILE"] == "/etc/ascendprep/rank_table.json"
        # The plain inventory now finds set_env.sh in rank-table mode: that is the accident.
        code, doc = applied.verify("--only", "job.rank_table")
        assert code == 1 and "jobs start in rank-table mode" in _of(doc, "job.rank_table")["message"]
    finally:
        plan = applied.workdir / "plan-back.json"
        assert run_plan(original, plan, "text", False, False, None) == 0
        assert run_apply(plan, False, None) == 0
        variant.unlink()
