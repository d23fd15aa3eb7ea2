"""plan → apply → verify on an A3 lab of 4 servers in 2 super-pods (issue 21), and the HCCS and
SDID faults named on the right die, with their unlike variants."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from labsupport import start_test_lab, verify_json

from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def a3_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=4, product="atlas-a3", suffix="a3pods", pod_servers=2)
    try:
        yield lab
    finally:
        lab.down()


def _failed_messages(doc: Dict[str, Any]):
    return [(c["check"], c["node"], c["npu"], c["message"]) for c in doc["checks"] if c["status"] != "passed"][:20]


def _failed(doc: Dict[str, Any]):
    return [
        (c["check"], c["node"], c["npu"]) for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "error"
    ]


@pytest.fixture(scope="module")
def applied(a3_lab: Lab, tmp_path_factory) -> Lab:
    workdir = tmp_path_factory.mktemp("a3plan")
    plan = workdir / "plan.json"
    assert run_plan(a3_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    return a3_lab


def test_plan_apply_verify_passes_on_two_pods(applied: Lab, tmp_path: Path) -> None:
    code, doc = verify_json(applied, tmp_path)
    assert _failed(doc) == [] and code == 0, _failed_messages(doc)
    checks = [
        c
        for c in doc["checks"]
        if c["check"] in ("cluster.hccs", "cluster.sdid", "superpod.identity", "superpod.vnic", "superpod.die_subnets")
    ]
    assert {c["status"] for c in checks} == {"passed"}
    hccs = [c for c in checks if c["check"] == "cluster.hccs"]
    # per pod: 16 cross-server pairs (2 servers: one per die) + 2 x 16 in-server ring pairs, two pods
    assert len(hccs) == 2 * (16 + 32)
    # no pair crosses pods: node1/node2 form pod 0, node3/node4 pod 1
    for check in hccs:
        ends = {check["evidence"]["from"]["node"], check["evidence"]["to"]["node"]}
        assert ends <= {"node1", "node2"} or ends <= {"node3", "node4"}
        assert check["evidence"]["average_us"] is not None
    (identity,) = [c for c in checks if (c["check"], c["node"]) == ("superpod.identity", "node3")]
    assert identity["message"].startswith("super-pod 1, server index 0, 16 dies")


def test_hccs_link_down_is_named_on_its_die_and_roce_link_down_is_not_an_hccs_fault(
    applied: Lab, tmp_path: Path
) -> None:
    with fault_injected(applied, "node2", "hccs-link-down", npu=5):
        code, doc = verify_json(applied, tmp_path)
    failed = _failed(doc)
    assert code == 1
    assert set(failed) == {("cluster.hccs", "node2", 5)}
    messages = [c["message"] for c in doc["checks"] if c["check"] == "cluster.hccs" and c["status"] == "failed"]
    assert len(messages) == 3  # its cross-server pair and its two in-server ring pairs
    assert all("node2 device 5 (NPU 2 die 1" in m and "its link is the suspect" in m for m in messages)

    # unlike variant: the RoCE port of that die down fails the RoCE checks, never HCCS
    with fault_injected(applied, "node2", "link-down", npu=5):
        code, doc = verify_json(applied, tmp_path)
    assert code == 1
    assert not [f for f in _failed(doc) if f[0] == "cluster.hccs"]
    assert ("network.link", "node2", 5) in _failed(doc)


def test_duplicate_sdid_names_both_dies(applied: Lab, tmp_path: Path) -> None:
    with fault_injected(applied, "node4", "sdid-duplicate", npu=7):
        code, doc = verify_json(applied, tmp_path)
    assert code == 1
    (sdid,) = [c for c in doc["checks"] if c["check"] == "cluster.sdid" and c["status"] == "failed"]
    assert "super-pod 1" in sdid["message"] and "EI0014" in sdid["message"]
    assert {(d["node"], d["device"]) for d in sdid["evidence"]["dies"]} == {("node4", 6), ("node4", 7)}
    # unlike variant: pods 0 and 1 hold the same SDIDs (server indexes restart), which is no finding
    code, doc = verify_json(applied, tmp_path)
    assert [c["status"] for c in doc["checks"] if c["check"] == "cluster.sdid"] == ["passed"], _failed_messages(doc)
