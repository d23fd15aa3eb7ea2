"""Issue 19 on the lab: one node's hccn_tool floods, another's hangs, and plan and verify still end.

A 3-node lab of its own (node1 healthy, node2 ``hccn-flood``, node3 ``hccn-hang``). The CLI runs
as a child process (this worktree's package) so that its peak RSS is its own: under the flood it
must stay under 300 MB, name both sick nodes, keep node1's results, and write its JSON (with
``limits_hit``) and its evidence bundle. With ``--timeout`` shorter than the hung tool's limit the
hung node is given up on at the deadline, and the rest of the report is still written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from labsupport import start_test_lab

from ascendprep.base import limits
from ascendprep.lab.cli_run import CliRun, run_cli
from ascendprep.lab.lab import Lab

pytestmark = pytest.mark.lab

#: Each hccn_tool call on node2 prints 4 MiB (stdout) and 1 MiB (stderr): 40 calls per gather.
FLOOD_SIZE = "4M"
MAX_RSS_MB = 300
CAP_TEXT = f"output over {limits.REMOTE_CALL_OUTPUT_CAP // 1024} KB"


@pytest.fixture(scope="module")
def sick_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=3, product="atlas-a2", suffix="flood", npus=4)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture
def flood_and_hang(sick_lab: Lab) -> Iterator[Lab]:
    sick_lab.fault("node2", "hccn-flood", size=FLOOD_SIZE)
    sick_lab.fault("node3", "hccn-hang")
    try:
        yield sick_lab
    finally:
        sick_lab.heal()


def _run(lab: Lab, workdir: Path, *args: str, timeout: float = 300) -> tuple[CliRun, Dict[str, Any]]:
    run = run_cli([args[0], str(lab.inventory_path), *args[1:], "--format", "json"], workdir, timeout)
    assert not run.killed, f"{args[0]} did not end within {timeout}s"
    assert run.max_rss_mb < MAX_RSS_MB, f"{args[0]}: peak RSS {run.max_rss_mb:.0f} MB"
    assert "Traceback" not in run.stderr, run.stderr
    return run, json.loads(run.stdout)


def _hits(document: Dict[str, Any], limit: str) -> List[Dict[str, Any]]:
    return [hit for hit in document["limits_hit"] if hit["limit"] == limit]


def test_plan_under_flood_and_hang_names_the_sick_nodes_and_keeps_the_healthy_one(
    flood_and_hang: Lab, tmp_path: Path
) -> None:
    run, document = _run(flood_and_hang, tmp_path, "plan", "-o", str(tmp_path / "plan.json"))

    assert run.returncode == 1 and document["complete"] is False
    hosts = {host["node"]: host for host in document["hosts"]}
    assert hosts["node1"]["incomplete"] == [] and hosts["node1"]["changes"], "the healthy node's plan was lost"
    assert any(CAP_TEXT in line and "hccn_tool -i 0 -ip -g" in line for line in hosts["node2"]["incomplete"])
    assert any("timed out" in line for line in hosts["node3"]["incomplete"])
    assert not any(CAP_TEXT in line for line in hosts["node1"]["incomplete"] + hosts["node3"]["incomplete"])
    (cut,) = _hits(document, "remote_call_output_cap")
    assert cut["host"] == "node2" and cut["bytes"] == limits.REMOTE_CALL_OUTPUT_CAP
    # plan reads only what its diff needs (per NPU: ip and, the lab planning a detect IP but no
    # gateway or TLS, netdetect): each one was cut
    assert {p["probe"] for p in cut["probes"]} >= {"hccn.ip", "hccn.netdetect"}
    assert (tmp_path / "plan.json").exists()


def test_verify_under_flood_and_hang_ends_with_findings_and_a_bundle(flood_and_hang: Lab, tmp_path: Path) -> None:
    run, document = _run(flood_and_hang, tmp_path, "verify")

    assert run.returncode == 1 and document["exit_code"] == 1
    by_node: Dict[str, List[Dict[str, Any]]] = {}
    for check in document["checks"]:
        by_node.setdefault(check["node"], []).append(check)
    reachable = {c["node"]: c["status"] for c in document["checks"] if c["check"] == "node.reachable"}
    assert reachable == {"node1": "passed", "node2": "passed", "node3": "passed"}
    # node1's own results are there and none of them is a "could not check".
    node1_ip = [c for c in by_node["node1"] if c["check"] == "network.ip"]
    assert len(node2_ip := [c for c in by_node["node2"] if c["check"] == "network.ip"]) == 4
    assert len(node1_ip) == 4 and not any("could not check" in c["message"] for c in by_node["node1"])
    node2_ip = [c for c in by_node["node2"] if c["check"] == "network.ip"]
    assert all(c["status"] == "failed" and CAP_TEXT in c["message"] for c in node2_ip)
    node3_ip = [c for c in by_node["node3"] if c["check"] == "network.ip"]
    assert node3_ip and all(
        c["status"] == "failed" and ("timed out" in c["message"] or "hung earlier" in c["message"]) for c in node3_ip
    )
    assert [hit["host"] for hit in _hits(document, "remote_call_output_cap")] == ["node2"]
    assert _hits(document, "command_timeout") == []
    bundle = Path(document["bundle"])
    assert (tmp_path / bundle if not bundle.is_absolute() else bundle).exists()


def test_the_command_deadline_gives_up_on_a_stalled_node_and_still_reports(sick_lab: Lab, tmp_path: Path) -> None:
    """node3's link is shaped to 8 kbit/s: its gather needs about a minute; --timeout 20 ends first.

    (A hung hccn_tool costs the gather only its 10 s per-command limit, too close to the healthy
    nodes' own gather time on a loaded machine to tell the two apart.)
    """
    sick_lab.fault("node3", "slow", rate="8kbit")
    try:
        run, document = _run(sick_lab, tmp_path, "verify", "--timeout", "20")
    finally:
        sick_lab.heal()

    assert run.returncode == 1 and run.wall_s < 20 + 10, f"verify took {run.wall_s:.1f}s"
    gather_hit = [hit for hit in _hits(document, "command_timeout") if hit["step"] == "gathering facts"]
    assert [(hit["seconds"], hit["source"], hit["hosts"]) for hit in gather_hit] == [(20, "--timeout", ["node3"])]
    node3 = document["hosts"]["node3"]
    assert node3["reachable"] is False and node3["error_kind"] == "timeout"
    assert node3["error"].startswith("node3: timed out in gathering facts: the command's deadline (20s, --timeout)")
    # The healthy nodes' facts were kept and checked.
    assert document["hosts"]["node1"]["reachable"] and document["hosts"]["node2"]["reachable"]
    reachable = {c["node"]: c["status"] for c in document["checks"] if c["check"] == "node.reachable"}
    assert reachable == {"node1": "passed", "node2": "passed", "node3": "failed"}
    assert document["bundle"] and (tmp_path / document["bundle"]).exists()
