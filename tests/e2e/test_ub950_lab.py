"""An Atlas 350 (Ascend 950) lab: plan -> apply -> verify passes on it (bond addresses set and
read back the 950 way, the UB ports healthy), and verify's UB checks name each UB fault on its
node, NPU and port, and not its unlike variant (the same port down on another card is named
there; a partial link that recovered and a CRC count that does not grow are not named at all)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, Set, Tuple

import pytest
from labsupport import start_test_lab, verify_json

from ascendprep.lab.lab import Lab
from ascendprep.lab.spec import Versions
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def ub_lab() -> Iterator[Lab]:
    # CANN and driver left to the spec: an atlas-350 spec defaults to the stack the card needs
    # (CANN 9.0.0, HDK 25.7: docs/ascend950.md#versions)
    versions = Versions(firmware="7.8.0.1.201")
    lab = start_test_lab(nodes=2, product="atlas-350", suffix="ub950", npus=4, versions=versions)
    try:
        yield lab
    finally:
        lab.down()


def _failed(doc: Dict[str, Any]) -> Set[Tuple[str, str, int, str]]:
    return {
        (c["check"], c["node"], c["npu"], c.get("subject") or "")
        for c in doc["checks"]
        if c["status"] == "failed" and c["check"].startswith("ub.")
    }


def test_plan_apply_verify_passes_on_the_950_lab(ub_lab: Lab, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run_plan(ub_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    code, doc = verify_json(ub_lab, tmp_path, "--sample-interval", "1")
    failed = [(c["check"], c["severity"], c["message"]) for c in doc["checks"] if c["status"] == "failed"]
    assert all(check == "cluster.compat" and severity == "warning" for check, severity, _ in failed), failed
    passed = {c["check"] for c in doc["checks"] if c["status"] == "passed"}
    assert {
        "network.ip",
        "network.hccn_conf",
        "ub.link",
        "ub.lanes",
        "ub.ping",
        "ub.sio",
        "ub.link_flaps",
        "cluster.reachability",
        "cluster.tls",
    } <= passed


def test_each_ub_fault_is_named_and_its_unlike_variant_is_not(ub_lab: Lab, tmp_path: Path) -> None:
    code, doc = verify_json(ub_lab, tmp_path, "--only", "ub", "--sample-interval", "2")
    assert _failed(doc) == set(), [c["message"] for c in doc["checks"] if c["status"] == "failed"]
    assert {c["check"] for c in doc["checks"] if c["status"] == "passed"} >= {"ub.link", "ub.lanes", "ub.ping"}

    ub_lab.fault("node1", "ub-port-down", npu=1, port=5)
    ub_lab.fault("node2", "ub-port-down", npu=3, port=5)  # the same port on another card
    ub_lab.fault("node1", "ub-lane-downgrade", npu=2, port=6)
    ub_lab.fault("node2", "ub-partial-link", npu=0, port=4, recover_s=0)  # already recovered
    ub_lab.fault("node2", "ub-crc-growing", npu=1, port=6)
    ub_lab.fault("node1", "ub-crc-static", npu=0, port=4)  # high since boot, not growing
    ub_lab.fault("node2", "ub-link-flap", npu=2, port=6)  # went down and back minutes ago
    ub_lab.fault("node1", "ub-old-flap", npu=3, port=6)  # one flap three days ago
    try:
        code, doc = verify_json(ub_lab, tmp_path, "--only", "ub", "--sample-interval", "2")
    finally:
        ub_lab.heal()
    failed = _failed(doc)
    assert code == 1
    assert ("ub.link", "node1", 1, "0/5") in failed and ("ub.link", "node2", 3, "0/5") in failed
    assert ("ub.lanes", "node1", 2, "0/6") in failed and ("ub.link", "node1", 2, "0/6") in failed
    assert ("ub.counters", "node2", 1, "0/6 crc_error_sum") in failed
    # port 5 of card 1 leads to card 2 (the 4-card mesh in lab/sim/ub950.py): their pings fail both ways
    assert ("ub.ping", "node1", 1, "to npu 2") in failed and ("ub.ping", "node1", 2, "to npu 1") in failed
    assert ("ub.link_flaps", "node2", 2, "0/6") in failed
    assert not any(c == "ub.link_flaps" and (n, p) == ("node1", 3) for c, n, p, _ in failed)  # the old flap
    # the recovered partial link: up on all lanes now, its down-and-back a flap (a warning) only
    assert {c for c, n, p, _ in failed if (n, p) == ("node2", 0)} == {"ub.link_flaps"}
    assert not any((n, p) == ("node2", 2) and c != "ub.link_flaps" for c, n, p, _ in failed)
    assert not any(c == "ub.counters" and (n, p) == ("node1", 0) for c, n, p, _ in failed)  # the static count
    assert all(c["fix"] for c in doc["checks"] if c["status"] == "failed" and c["check"].startswith("ub."))


def test_tls_is_read_on_950_and_a_card_that_differs_is_named(ub_lab: Lab, tmp_path: Path) -> None:
    """hccn_tool -g -tls -i N on every card: all agree on the lab (cluster.tls passes); a card that
    reports the other switch is named by cluster.tls."""
    ub_lab.fault("node2", "tls-mismatch", npu=3)
    try:
        code, doc = verify_json(ub_lab, tmp_path, "--only", "cluster.tls")
    finally:
        ub_lab.heal()
    (result,) = [c for c in doc["checks"] if c["check"] == "cluster.tls"]
    assert code == 1 and result["status"] == "failed", result
    assert (result["node"], result["npu"]) == ("node2", 3)
    assert len(result["evidence"]["tls"]) == 8  # every card of both nodes was read


def _topology(doc: Dict[str, Any]) -> Dict[str, Tuple[str, str]]:
    return {c["node"]: (c["status"], c["message"]) for c in doc["checks"] if c["check"] == "job.topology_file"}


def test_the_factory_topology_file_is_checked_and_each_fault_named_its_own_way(ub_lab: Lab, tmp_path: Path) -> None:
    assert ub_lab.spec.versions.cann == "9.0.0" and ub_lab.spec.versions.driver == "25.7.rc1"
    code, doc = verify_json(ub_lab, tmp_path, "--only", "job.topology_file")
    assert {node: status for node, (status, _) in _topology(doc).items()} == {"node1": "passed", "node2": "passed"}
    assert "atlas_350_3.json is readable" in _topology(doc)["node1"][1]

    ub_lab.fault("node1", "topo-missing")
    ub_lab.fault("node2", "topo-wrong-file")  # only the 2-card file on a 4-card node
    try:
        code, doc = verify_json(ub_lab, tmp_path, "--only", "job.topology_file")
    finally:
        ub_lab.heal()
    found = _topology(doc)
    assert code == 1 and {status for status, _ in found.values()} == {"failed"}
    assert "holds no topology file (atlas_350_3.json is missing)" in found["node1"][1]
    assert "holds only atlas_350_2.json" in found["node2"][1]

    code, doc = verify_json(ub_lab, tmp_path, "--only", "job.topology_file")
    assert {status for status, _ in _topology(doc).values()} == {"passed"}


def test_a_container_without_the_driver_fails_it_where_the_full_one_passes(ub_lab: Lab, tmp_path: Path) -> None:
    from ascendprep.lab.sim import jobenv as sim

    plan = tmp_path / "plan.json"  # applied: the hiding container covers /etc/ascendprep, which apply makes
    assert run_plan(ub_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    for node in ("node1", "node2"):
        ub_lab.fault(node, "container-hides")
    try:
        code, hiding = verify_json(ub_lab, tmp_path, "--only", "job.topology_file", "--exec-via", sim.CONTAINER_HIDING)
        _, full = verify_json(ub_lab, tmp_path, "--only", "job.topology_file", "--exec-via", sim.CONTAINER)
    finally:
        ub_lab.heal()
    (status, message) = _topology(hiding)["node1"]
    assert code == 1 and status == "failed" and sim.CONTAINER_HIDING in message, message
    fix = next(c["fix"] for c in hiding["checks"] if c["check"] == "job.topology_file" and c["node"] == "node1")
    assert "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in fix
    assert {status for status, _ in _topology(full).values()} == {"passed"}
