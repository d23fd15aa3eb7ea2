"""verify against the virtual cluster: a clean lab passes, and each lab fault is found by the right
check on the right node and NPU, with nothing failing that the fault does not explain.

One lab for the module; ``ascendprep plan`` + ``ascendprep apply`` configure it once, then each
fault is injected, verified and healed in turn.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import DesiredState, build_desired
from ascendprep.inventory.load import load_inventory
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab

Where = Tuple[str, Optional[str], Optional[int]]


class Applied:
    """The configured lab: where verify runs from, and the plan it was configured with."""

    def __init__(self, lab: Lab, workdir: Path, desired: DesiredState):
        self.lab = lab
        self.workdir = workdir
        self.desired = desired

    def verify(self, *args: str) -> Tuple[int, Dict[str, Any]]:
        cwd = os.getcwd()
        os.chdir(self.workdir)
        try:
            outcome = CliRunner().invoke(verify_command, [str(self.lab.inventory_path), "--format", "json", *args])
        finally:
            os.chdir(cwd)
        assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
        return outcome.exit_code, json.loads(outcome.stdout)

    def ip_of(self, node: str, npu: int) -> str:
        return self.desired.ipplan.address(node, npu).ip  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def applied(verify_lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Applied]:
    workdir = tmp_path_factory.mktemp("verify-lab")
    plan = workdir / "plan.json"
    assert run_plan(verify_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    yield Applied(verify_lab, workdir, build_desired(load_inventory(verify_lab.inventory_path)))


def _failed(doc: Dict[str, Any], severity: str) -> List[Dict[str, Any]]:
    return [c for c in doc["checks"] if c["status"] == "failed" and c["severity"] == severity]


def _benign_warning(check: Dict[str, Any]) -> bool:
    """Warnings a healthy lab has: unknown compatibility of its versions, flaps left by link-down."""
    return check["check"] in ("cluster.compat", "network.link_flaps")


def test_clean_lab_passes_with_two_round_trips_per_host(applied: Applied) -> None:
    code, doc = applied.verify("--junit", str(applied.workdir / "clean.xml"))
    assert code == 0, [c["message"] for c in _failed(doc, "error")]
    assert _failed(doc, "error") == []
    assert all(_benign_warning(c) for c in _failed(doc, "warning"))
    assert doc["summary"]["passed"] > 100
    assert all(host["ssh_execs"] <= 2 for host in doc["hosts"].values())
    pairs = [c for c in doc["checks"] if c["check"] == "cluster.reachability"]
    assert len(pairs) == 3 * 4  # ring node1-node2, node2-node3, node3-node1 (master) per NPU
    assert all(c["status"] == "passed" for c in pairs)
    bundle = applied.workdir / doc["bundle"]
    # each kind of transcript in one file, each node's a gzip member of it that run.json locates
    kinds = {p.name for p in (bundle / "hosts").iterdir() if not p.name.endswith(".facts.json.gz")}
    assert {"gather.out.gz", "ping.out.gz"} <= kinds <= {"gather.out.gz", "ping.out.gz", "gather.err.gz", "ping.err.gz"}
    assert {"gather.out", "ping.out"} <= set(json.loads((bundle / "run.json").read_text())["hosts"]["node1"]["files"])
    node1 = {p.name for p in (bundle / "hosts").iterdir() if p.name.startswith("node1.")}
    # facts.json only for a node a person will look at (a failed check, e.g. a benign warning)
    assert ("node1.facts.json.gz" in node1) == any(
        c["node"] == "node1" for c in doc["checks"] if c["status"] == "failed"
    )
    junit = ET.parse(applied.workdir / "clean.xml").getroot()
    assert junit.get("failures") == "0" and [s.get("name") for s in junit.findall("testsuite")] == [
        "node1",
        "node2",
        "node3",
        "cluster",
    ]
    # The bundle re-checks to the same results with no SSH.
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(bundle), "--format", "json"])
    assert outcome.exit_code == 0
    assert json.loads(outcome.stdout)["checks"] == doc["checks"]


def _net_health_of_peers(applied: Applied, node: str, npu: int) -> Set[Where]:
    """NPUs whose detect IP is (node, npu): their net_health fails when that port goes dark."""
    target = applied.ip_of(node, npu)
    return {
        ("network.net_health", name, s.npu)
        for name, wanted in applied.desired.nodes.items()
        for s in wanted.hccn
        if s.netdetect == target
    }


def _pairs_touching(node: str, npu: int) -> Callable[[Dict[str, Any]], bool]:
    return lambda c: (
        c["check"] == "cluster.reachability"
        and any((end["node"], end["npu"]) == (node, npu) for end in (c["evidence"]["a"], c["evidence"]["b"]))
    )


# fault → (options, errors that must be found, extra errors the fault explains)
Case = Tuple[Dict[str, Any], Callable[[Applied], Set[Where]], Callable[[Applied], Callable[[Dict[str, Any]], bool]]]
NOTHING_ELSE: Callable[[Applied], Callable[[Dict[str, Any]], bool]] = lambda a: lambda c: False

CASES: Dict[str, Case] = {
    "net-health-fail": ({"npu": 3}, lambda a: {("network.net_health", "node2", 3)}, NOTHING_ELSE),
    "lldp-empty": ({"npu": 3}, lambda a: {("network.lldp", "node2", 3)}, NOTHING_ELSE),
    "tls-mismatch": ({"npu": 3}, lambda a: {("cluster.tls", "node2", 3)}, NOTHING_ELSE),
    "npu-alarm": ({"npu": 3}, lambda a: {("npu.health", "node2", 3)}, NOTHING_ELSE),
    "stale-hccn-conf": ({"npu": 3}, lambda a: {("network.hccn_conf", "node2", 3)}, NOTHING_ELSE),
    "cann-drift": (
        {},
        lambda a: {("software.cann", "node2", None), ("cluster.versions", "node2", None)},
        lambda a: lambda c: c["check"] == "cluster.compat" and c["node"] == "node2",
    ),
    "sshd-down": ({}, lambda a: {("node.reachable", "node2", None)}, NOTHING_ELSE),
    # hccn_tool stops answering on NPU 3; the gather script gives up on hccn_tool for the rest of
    # the run, so node2's later NPUs are "could not check" too (never passed).
    "hccn-hang": (
        {"npu": 3},
        lambda a: {("network.ip", "node2", 3), ("network.link", "node2", 3)},
        lambda a: (
            lambda c: (
                c["node"] == "node2"
                and c["check"].startswith(("network.", "optics.", "ports."))
                and c["message"].startswith("could not check: ")
            )
        ),
    ),
    # Last: it leaves a flap in the link history (a warning from then on, as on real hardware).
    "link-down": (
        {"npu": 3},
        # a cut fibre: every lane dark with Rx LoS/LoL, so the optics checks name it too
        lambda a: (
            {
                ("network.link", "node2", 3),
                ("network.net_health", "node2", 3),
                ("network.lldp", "node2", 3),
                ("optics.power", "node2", 3),
                ("optics.signal", "node2", 3),
            }
            | _net_health_of_peers(a, "node2", 3)
        ),
        lambda a: _pairs_touching("node2", 3),
    ),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_fault_is_found_where_it_is(applied: Applied, kind: str) -> None:
    options, must, explained = CASES[kind]
    with fault_injected(applied.lab, "node2", kind, **options):
        code, doc = applied.verify()
    errors = _failed(doc, "error")
    found = {(c["check"], c["node"], c["npu"]) for c in errors}
    assert code == 1
    assert must(applied) <= found, f"{kind}: expected {must(applied)}, found {found}"
    unexplained = [
        c for c in errors if (c["check"], c["node"], c["npu"]) not in must(applied) and not explained(applied)(c)
    ]
    assert unexplained == [], f"{kind}: {[(c['check'], c['node'], c['npu'], c['message']) for c in unexplained]}"
    assert all(_benign_warning(c) for c in _failed(doc, "warning")), kind
    if kind == "hccn-hang":
        hung = next(c for c in errors if (c["check"], c["npu"]) == ("network.ip", 3))
        assert "timed out" in hung["message"]
    if kind == "link-down":
        assert any(_pairs_touching("node2", 3)(c) for c in errors), "no broken ping pair named"


def test_healed_lab_passes_again(applied: Applied) -> None:
    code, doc = applied.verify("--only", "network,npu,software,node")
    assert code == 0, [c["message"] for c in _failed(doc, "error")]
