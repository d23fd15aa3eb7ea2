"""Node-local runs on the virtual cluster, started inside each node through the lab's ssh (as a
Slurm prolog or an Ansible task would start them): ``apply --local`` on every node converges the
cluster, and ``verify --local`` on every node merged with ``--from-bundle`` gives the verdicts
the SSH-driven ``verify`` gives, on a healthy lab and with faults only the cluster view shows
(CANN skew on one node, a link down whose pairs its peers must ping)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest
from click.testing import CliRunner
from labsupport import start_test_lab

from ascendprep.commands.verify import verify_command
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab

Verdicts = Set[Tuple[str, Any, Any, Any, str]]
#: Per in-node command: a verify or apply of one node on a loaded 2-core machine.
IN_NODE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def local_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=3, product="atlas-a2", suffix="local", npus=4)
    try:
        yield lab
    finally:
        lab.down()


def in_node(lab: Lab, node: str, workdir: Path, *args: str) -> Tuple[int, str, str]:
    """``ascendprep ARGS`` run inside ``node`` over the lab's ssh, from ``workdir`` (a folder the
    node shares with the host), with this checkout's package (the nodes see the host's
    interpreter and the checkout read-only)."""
    python = lab.python
    command = f"cd {shlex.quote(str(workdir))} && PYTHONPATH={shlex.quote(str(python.package_root))} {shlex.quote(python.executable)} -m ascendprep {shlex.join(args)}"
    done = lab.ssh(node, command, timeout=IN_NODE_TIMEOUT_S)
    return done.returncode, done.stdout, done.stderr


def ssh_verify(lab: Lab, workdir: Path) -> Tuple[int, Dict[str, Any]]:
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        outcome = CliRunner().invoke(
            verify_command, [str(lab.inventory_path), "--format", "json", "--sample-interval", "0"]
        )
    finally:
        os.chdir(cwd)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, json.loads(outcome.stdout)


def merged_local_verify(lab: Lab, workdir: Path, round_name: str) -> Tuple[int, Dict[str, Any]]:
    folders: List[str] = []
    (workdir / round_name).mkdir()
    for node in lab.nodes:
        folder = workdir / round_name / node.name
        # no --node: each node finds itself in the inventory by its host name or address
        code, out, err = in_node(
            lab,
            node.name,
            workdir,
            "verify",
            str(lab.inventory_path),
            "--local",
            "--bundle-dir",
            str(folder),
            "--sample-interval",
            "0",
            "--format",
            "json",
        )
        assert code in (0, 1), f"{node.name}: exit {code}\n{err}"
        assert json.loads(out)["local_node"] == node.name
        folders.append(str(folder))
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", *folders, "--format", "json"])
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, json.loads(outcome.stdout)


def verdicts(document: Dict[str, Any]) -> Verdicts:
    return {(c["check"], c.get("node"), c.get("npu"), c.get("subject"), c["status"]) for c in document["checks"]}


def failing(document: Dict[str, Any]) -> Set[Tuple[str, Any, Any]]:
    return {
        (c["check"], c.get("node"), c.get("npu"))
        for c in document["checks"]
        if c["status"] == "failed" and c["severity"] == "error"
    }


@pytest.fixture(scope="module")
def converged(local_lab: Lab) -> Path:
    """The lab planned over SSH, then applied node by node with ``apply --local`` inside each node.

    The work folder is the lab's shared folder, the stand-in for the cluster file system a
    scheduler's nodes share: each node's /tmp (where pytest's folders lie) is its own."""
    workdir = local_lab.shared_dir / "local-lab"
    workdir.mkdir()
    plan = workdir / "plan.json"
    assert run_plan(local_lab.inventory_path, plan, "text", False, False, None) == 0
    for node in local_lab.nodes:
        code, out, err = in_node(local_lab, node.name, workdir, "apply", str(plan), "--local")
        assert code == 0, f"{node.name}: exit {code}\n{out}\n{err}"
        assert f"--local: only {node.name} (this machine)" in err
    journals = [json.loads(p.read_text()) for p in (workdir / "journal").glob("apply-*.json")]
    assert sorted(j["local_node"] for j in journals) == sorted(n.name for n in local_lab.nodes)
    assert all(j["status"] == "finished" for j in journals)
    assert (
        run_plan(local_lab.inventory_path, workdir / "replan.json", "text", True, False, None) == 0
    )  # nothing left to change
    return workdir


def test_healthy_lab_merged_local_verify_equals_ssh_verify(local_lab: Lab, converged: Path) -> None:
    ssh_code, ssh_doc = ssh_verify(local_lab, converged)
    local_code, local_doc = merged_local_verify(local_lab, converged, "healthy")
    assert ssh_code == 0, failing(ssh_doc)
    assert local_code == 0, failing(local_doc)
    assert any(v[0] == "cluster.reachability" and v[4] == "passed" for v in verdicts(local_doc))
    assert verdicts(local_doc) == verdicts(ssh_doc)


def test_faults_only_the_cluster_view_shows_are_found_by_the_merge_as_over_ssh(local_lab: Lab, converged: Path) -> None:
    with fault_injected(local_lab, "node2", "cann-drift"), fault_injected(local_lab, "node3", "link-down", npu=1):
        ssh_code, ssh_doc = ssh_verify(local_lab, converged)
        local_code, local_doc = merged_local_verify(local_lab, converged, "faulty")
    assert ssh_code == local_code == 1
    assert ("cluster.versions", "node2", None) in failing(local_doc)
    down = [c for c in local_doc["checks"] if c["check"] == "cluster.reachability" and "node3:1" in c["subject"]]
    assert down and all(c["status"] == "failed" for c in down)
    assert verdicts(local_doc) == verdicts(ssh_doc)
