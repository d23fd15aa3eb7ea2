"""``verify --local`` on A3 runs the HCCS pings as the SSH verify does: each node sends the pairs
it is the source of in its pod's ring (its peers placed by the inventory), judges them in its own
report, and ``--from-bundle`` finds every pair of the SSH plan at its source; ``--exec-via`` runs
the HCCS pings in the wrapper too.

The nodes are this machine playing each simulated A3 server in turn (a3sim.A3Lab: the lab's
hccn_tool and npu-smi as subprocesses, the node chosen by ASCENDPREP_LAB_NODE_FILE).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple
from unittest import mock

import pytest
import yaml
from a3sim import A3Lab
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.lab.sim import state
from ascendprep.run.bundle import read_bundle
from ascendprep.verify.checks.hccs import plan_for, plan_local

DIES = 4
INVENTORY = {
    "name": "a3",
    "product": "atlas-a3",
    "npus_per_node": DIES,
    "device_network": {"subnets": ["10.30.0.0/24", "10.31.0.0/24"], "tls": False},
    "nodes": [{"name": "node[1-2]", "host": "10.231.0.[11-12]", "super_pod": 0}],
}


@pytest.fixture
def a3(tmp_path: Path) -> Tuple[A3Lab, Path, Path]:
    """Two A3 servers of one pod; (the simulator, the inventory, a folder of the tools)."""
    lab = A3Lab(tmp_path / "sim", nodes=2, pod_servers=2, npus=DIES)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, module in (("hccn_tool", "hccn_tool"), ("npu-smi", "npu_smi")):
        path = tools / name
        path.write_text(f'#!/bin/sh\nexec {sys.executable} -S -m ascendprep.lab.sim.{module} "$@"\n')
        path.chmod(0o755)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    return lab, inventory, tools


def local_verify(
    lab: A3Lab, node: str, inventory: Path, folder: Path, path: str, *more: str
) -> Tuple[int, Dict[str, Any]]:
    """``verify --local --node NODE --only cluster.hccs`` as ``node``, with ``path`` as PATH."""
    env = {**lab.env(node), "PATH": path}
    args = [
        str(inventory),
        "--local",
        "--node",
        node,
        "--only",
        "cluster.hccs",
        "--bundle-dir",
        str(folder),
        "--sample-interval",
        "0",
        "--format",
        "json",
        *more,
    ]
    outcome = CliRunner().invoke(verify_command, args, env=env)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, json.loads(outcome.stdout)


def hccs_results(document: Dict[str, Any]) -> Dict[str, Tuple[str, str]]:
    return {c["subject"]: (c["status"], c["message"]) for c in document["checks"] if c["check"] == "cluster.hccs"}


def test_a_local_run_pings_and_judges_its_own_hccs_pairs_across_servers(a3, tmp_path: Path) -> None:
    lab, inventory, tools = a3
    path = f"{tools}:{os.environ['PATH']}"
    state.set_fault(lab.state_dir, "node1", "hccs-link-down", 1)
    code, document = local_verify(lab, "node1", inventory, tmp_path / "b1", path)
    results = hccs_results(document)
    desired = build_desired(inventory_from_text(inventory.read_text()))
    facts = read_bundle(tmp_path / "b1").hosts["node1"].facts
    sent = plan_local(desired, "node1", facts)
    assert {pair.subject for pair in sent} == set(results)
    # its in-server ring and, across servers, one pair per die to node2 (placed by the inventory)
    assert {f"node1:{d}<->node2:{d}" for d in range(DIES)} <= set(results)
    assert all(pair.source.node == "node1" for pair in sent)
    # node1's die 1 is down: both its pairs fail (the one to node2 too), and it is named the suspect
    assert code == 1
    broken = {"node1:1<->node2:1", "node1:1<->node1:3"}
    for subject in broken:
        status, message = results[subject]
        assert status == "failed" and "every HCCS pair of node1 device 1 failed" in message, message
    assert {status for subject, (status, _) in results.items() if subject not in broken} == {"passed"}


def test_merged_local_runs_find_every_pair_of_the_ssh_plan_at_its_source(a3, tmp_path: Path) -> None:
    lab, inventory, tools = a3
    path = f"{tools}:{os.environ['PATH']}"
    folders: List[str] = []
    for node in ("node1", "node2"):
        # each node's bundle written as on a machine of its own (a merge refuses two from one)
        with mock.patch("ascendprep.run.node_local.machine_id_digest", lambda machine=f"machine-of-{node}": machine):
            code, document = local_verify(lab, node, inventory, tmp_path / node, path)
        assert code == 0, hccs_results(document)
        folders.append(str(tmp_path / node))
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", *folders, "--format", "json"])
    assert outcome.exit_code in (0, 1), outcome.output
    merged = json.loads(outcome.stdout)
    desired = build_desired(inventory_from_text(inventory.read_text()))
    facts = {node: read_bundle(Path(folder)).hosts[node].facts for node, folder in zip(("node1", "node2"), folders)}
    expected = {pair.subject for pair in plan_for(desired, facts)}
    results = hccs_results(merged)
    assert set(results) == expected and any("node1" in s and "node2" in s for s in expected)
    assert {status for status, _ in results.values()} == {"passed"}, results
    assert outcome.exit_code == 0


def test_exec_via_runs_the_hccs_pings_where_the_tools_are(a3, tmp_path: Path) -> None:
    """The tools exist only inside the "container" the wrapper enters (its PATH), not on the host."""
    lab, inventory, tools = a3
    wrapper = tmp_path / "container"
    wrapper.write_text(f'#!/bin/sh\nPATH={tools}:$PATH exec "$@"\n')
    wrapper.chmod(0o755)
    code, document = local_verify(
        lab, "node1", inventory, tmp_path / "b", os.environ["PATH"], "--exec-via", str(wrapper)
    )
    results = hccs_results(document)
    assert {f"node1:{d}<->node2:{d}" for d in range(DIES)} <= set(results)
    assert {status for status, _ in results.values()} == {"passed"}, results
    assert code == 0


def test_a_local_plan_places_only_the_peers_the_inventory_puts_in_its_pod() -> None:
    from tests.verify.test_a3_checks import _facts

    declared = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))
    pairs = plan_local(declared, "node2", _facts(0, 1, DIES))
    assert {(p.source.node, p.target.node) for p in pairs} == {
        ("node2", "node2")
    }  # the ring's node1->node2 pairs are node1's
    pairs = plan_local(declared, "node1", _facts(0, 0, DIES))
    assert {p.target.vnic for p in pairs if p.target.node == "node2"} == {
        f"192.1.{2 + d % 2}.{199 - d}" for d in range(DIES)
    }
    undeclared = build_desired(
        inventory_from_text(yaml.safe_dump({**INVENTORY, "nodes": [{"name": "node[1-2]", "host": "10.231.0.[11-12]"}]}))
    )
    pairs = plan_local(undeclared, "node1", _facts(0, 0, DIES))
    assert pairs and {p.target.node for p in pairs} == {"node1"}  # its in-server ring only
    assert plan_local(declared, "node1", None) == ()  # no pod read: nothing to ping
