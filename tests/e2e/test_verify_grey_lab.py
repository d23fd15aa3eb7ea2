"""Issue 20 on the virtual cluster: verify names each grey failure on its node and NPU (a port whose
FCS errors grow 50/s, a PFC pause storm, a sub-health event code, an unknown event code) and passes
a clean lab; the rates are in --format json under the NPU exporter's metric names.

One lab session (the verify lab of this folder), plan + apply once, one clean run, one run with
all four faults in force at once on different nodes and NPUs.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from labsupport import verify_json

from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab

INTERVAL = "2"


def _verify(lab: Lab, workdir: Path, *args: str) -> Tuple[int, Dict[str, Any]]:
    return verify_json(lab, workdir, "--sample-interval", INTERVAL, *args)


def _failed(doc: Dict[str, Any], *severities: str) -> List[Dict[str, Any]]:
    return [c for c in doc["checks"] if c["status"] == "failed" and c["severity"] in severities]


def _benign(check: Dict[str, Any]) -> bool:
    """Warnings a healthy lab has (see test_verify_lab.py): unknown compatibility, old flaps."""
    return check["severity"] == "warning" and check["check"] in ("cluster.compat", "network.link_flaps")


def test_grey_failures_are_named_where_they_are_and_a_clean_lab_passes(verify_lab: Lab, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run_plan(verify_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0

    code, clean = _verify(verify_lab, tmp_path, "--only", "network,npu")
    assert code == 0, [c["message"] for c in _failed(clean, "error")]
    assert [c for c in _failed(clean, "error", "warning") if not _benign(c)] == []
    counters = [c for c in clean["checks"] if c["check"] == "network.counters"]
    assert len(counters) == 3 * 4 and all(c["status"] == "passed" for c in counters)
    assert all(c["evidence"]["interval_s"] >= 1.9 for c in counters)
    # counts since boot are shown, not judged; the trickle of PFC frames is a rate under the threshold
    assert counters[0]["evidence"]["since_boot"]["npu_chip_info_rx_fcs_num"] == 3
    assert 0 < counters[0]["evidence"]["rates_per_s"]["npu_chip_mac_rx_pfc_pkt_num"] < 10

    with ExitStack() as faults:
        faults.enter_context(fault_injected(verify_lab, "node1", "fcs-errors", npu=2))
        faults.enter_context(fault_injected(verify_lab, "node2", "pfc-storm", npu=1))
        faults.enter_context(fault_injected(verify_lab, "node3", "npu-subhealth", npu=0))
        faults.enter_context(fault_injected(verify_lab, "node3", "npu-unknown-code", npu=3))
        code, doc = _verify(verify_lab, tmp_path, "--only", "network,npu")
    assert code == 1
    named = {
        (c["check"], c["node"], c["npu"], c["subject"], c["severity"])
        for c in _failed(doc, "error", "warning")
        if not _benign(c)
    }
    assert named == {
        ("network.counters", "node1", 2, "mac_rx_fcs_err_pkt_num", "error"),
        ("network.counters", "node2", 1, "mac_rx_pfc_pkt_num", "error"),
        ("npu.health", "node3", 0, None, "warning"),
        ("npu.health", "node3", 3, None, "error"),
    }
    by_where = {(c["check"], c["node"], c["npu"]): c for c in doc["checks"] if c["status"] == "failed"}
    fcs = by_where[("network.counters", "node1", 2)]["evidence"]
    assert fcs["metric"] == "npu_chip_info_rx_fcs_num" and 40 <= fcs["rate_per_s"] <= 60
    assert fcs["threshold"] == {"name": "fcs_errors_per_s", "value": 1.0, "unit": "per second", "source": "default"}
    pfc = by_where[("network.counters", "node2", 1)]["evidence"]
    # +-20 % like the FCS rate above: the two reads' timestamps are taken beside the simulated
    # tool's own clock, and under a heavy load the gap between them moves the rate (18,207 seen).
    assert 16_000 <= pfc["rate_per_s"] <= 24_000
    assert [c["level"] for c in by_where[("npu.health", "node3", 0)]["evidence"]["codes"]] == ["SubHealth"]
    assert [(c["code"], c["level"]) for c in by_where[("npu.health", "node3", 3)]["evidence"]["codes"]] == [
        ("8FFF0001", "unknown")
    ]
