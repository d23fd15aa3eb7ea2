"""``verify --allreduce --launcher slurm`` on a real 2-node lab: the same worker, started with
(a stand-in for) srun inside an "allocation" of the lab's nodes, gives the verdict the SSH
launcher gives. The stand-in (srun_standin.py) keeps srun's documented contract and reaches the
lab node over the lab's ssh, as slurmd would run the step there."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import subprocess

from allreduce_lab.conftest import applied_cluster

pytestmark = pytest.mark.lab
prometheus_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client is in the test extra")

STANDIN = Path(__file__).resolve().parent / "srun_standin.py"
TINY = ["--nproc-per-node", "1", "--sizes", "1K:4K", "--backend", "gloo"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from applied_cluster(tmp_path_factory, "slurm", nodes=2)


def _verify(cluster, launcher, env, *more):
    argv = [sys.executable, "-m", "ascendprep", "verify", str(cluster.inventory), "--only", "node", "--allreduce", *TINY,
            "--launcher", launcher, "--format", "json", "--timeout", "240", *more]
    environment = {**os.environ, "HOME": str(cluster.folder), "COLUMNS": "200", **env}
    run = subprocess.run(argv, cwd=cluster.folder, env=environment, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run


def test_slurm_and_ssh_launchers_give_the_same_verdict(cluster, tmp_path):
    srun = tmp_path / "srun"
    srun.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    srun.chmod(0o755)
    log = tmp_path / "srun.log"
    nodes = [node.name for node in cluster.lab.nodes]
    env = {
        "ASCENDPREP_SRUN": str(srun), "SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "node[1-2]",
        "SRUN_STANDIN_LOG": str(log),
        "SRUN_STANDIN_NODES": json.dumps({name: cluster.lab.ssh_argv(name) for name in nodes}),
    }
    prom = tmp_path / "ascendprep.prom"
    by_slurm, run = _verify(cluster, "slurm", env, "--prometheus-file", str(prom))
    by_ssh, _ = _verify(cluster, "ssh", {})
    assert by_slurm["allreduce"]["passed"] is True, run.stderr
    for document in (by_slurm, by_ssh):
        verdict = document["allreduce"]["verdict"]
        assert verdict["world_size"] == 2 and verdict["backend"] == "gloo"
    gates = lambda d: [(g["name"], g["ok"]) for g in d["allreduce"]["verdict"]["gates"]]  # noqa: E731
    assert gates(by_slurm) == gates(by_ssh)
    assert [s["bytes"] for s in by_slurm["allreduce"]["verdict"]["sizes"]] == [s["bytes"] for s in by_ssh["allreduce"]["verdict"]["sizes"]]
    assert by_slurm["exit_code"] == by_ssh["exit_code"] == 0
    # Every all-reduce step went through srun onto its own node, overlapping the job's steps ...
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    assert {s["options"]["--nodelist"] for s in steps} == {"node1", "node2"}
    assert all(s["options"]["--jobid"] == "77" and "--overlap" in s["options"] for s in steps)
    # ... and none over the SSH connections: those did the gather only (one exec per node).
    assert by_slurm["hosts"]["node1"]["ssh_execs"] < by_ssh["hosts"]["node1"]["ssh_execs"]
    # The live run's metrics parse with Prometheus' own parser and carry the all-reduce.
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in prometheus_parser.text_string_to_metric_families(prom.read_text()) for s in family.samples}
    assert samples[("ascendprep_allreduce_passed", ())] == 1 and samples[("ascendprep_verify_success", ())] == 1
    assert samples[("ascendprep_allreduce_busbw_bytes_per_second", (("size_bytes", "4096"),))] > 0
    assert samples[("ascendprep_check_passed", (("check", "node.reachable"), ("node", "node2"), ("severity", "error")))] == 1
