"""``verify --allreduce --launcher slurm`` on a real 2-node lab: the same worker, started with
srun inside an allocation of the lab's nodes, gives the verdict the SSH launcher gives.

Twice: with the srun stand-in (srun_standin.py: srun's documented contract, reaching the lab node
over the lab's ssh), which runs wherever the lab does; and with a real Slurm (Debian's slurmctld,
slurmd and munge; slurmlab.py), where those are installed (.ci/run installs them, so under
CI=true a missing one fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from allreduce_cluster import applied_cluster
from labsupport import skip_or_fail
from slurmlab import SlurmOnLab, missing_tools
from test_slurm_nodecheck import FAKE_ASCENDPREP, NODECHECK

pytestmark = pytest.mark.lab
prometheus_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client is in the test extra")

STANDIN = Path(__file__).resolve().parent / "srun_standin.py"
TINY = ["--nproc-per-node", "1", "--sizes", "1K:4K", "--backend", "gloo"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from applied_cluster(tmp_path_factory, "slurm", nodes=2)


def _verify(cluster, launcher, env, *more):
    argv = [
        sys.executable,
        "-m",
        "ascendprep",
        "verify",
        str(cluster.inventory),
        "--only",
        "node",
        "--allreduce",
        *TINY,
        "--launcher",
        launcher,
        "--format",
        "json",
        "--timeout",
        "240",
        *more,
    ]
    environment = {**os.environ, "HOME": str(cluster.folder), "COLUMNS": "200", **env}
    run = subprocess.run(argv, cwd=cluster.folder, env=environment, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run


def gates(document):
    return [(g["name"], g["ok"]) for g in document["allreduce"]["verdict"]["gates"]]


def test_slurm_and_ssh_launchers_give_the_same_verdict(cluster, tmp_path):
    srun = tmp_path / "srun"
    srun.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    srun.chmod(0o755)
    log = tmp_path / "srun.log"
    nodes = [node.name for node in cluster.lab.nodes]
    env = {
        "ASCENDPREP_SRUN": str(srun),
        "SLURM_JOB_ID": "77",
        "SLURM_JOB_NODELIST": "node[1-2]",
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
    assert gates(by_slurm) == gates(by_ssh)
    assert [s["bytes"] for s in by_slurm["allreduce"]["verdict"]["sizes"]] == [
        s["bytes"] for s in by_ssh["allreduce"]["verdict"]["sizes"]
    ]
    assert by_slurm["exit_code"] == by_ssh["exit_code"] == 0
    # Every all-reduce step went through srun onto its own node, overlapping the job's steps ...
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    assert {s["options"]["--nodelist"] for s in steps} == {"node1", "node2"}
    assert all(s["options"]["--jobid"] == "77" and "--overlap" in s["options"] for s in steps)
    # ... and none over the SSH connections: those did the gather only (one exec per node).
    assert by_slurm["hosts"]["node1"]["ssh_execs"] < by_ssh["hosts"]["node1"]["ssh_execs"]
    # The live run's metrics parse with Prometheus' own parser and carry the all-reduce.
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in prometheus_parser.text_string_to_metric_families(prom.read_text())
        for s in family.samples
    }
    assert samples[("ascendprep_allreduce_passed", ())] == 1 and samples[("ascendprep_verify_success", ())] == 1
    assert samples[("ascendprep_allreduce_busbw_bytes_per_second", (("size_bytes", "4096"),))] > 0
    assert (
        samples[("ascendprep_check_passed", (("check", "node.reachable"), ("node", "node2"), ("severity", "error")))]
        == 1
    )


def test_a_real_slurm_runs_the_all_reduce_steps_and_the_node_check_drains_and_resumes(cluster, tmp_path):
    missing = missing_tools()
    if missing:
        skip_or_fail(
            f"Slurm is not installed ({', '.join(missing)}: apt-get install slurmd slurmctld slurm-client munge)"
        )
    with SlurmOnLab(cluster.lab) as slurm:
        job = slurm.allocate()
        env = {"SLURM_CONF": str(slurm.conf), "SLURM_JOB_ID": job, "SLURM_JOB_NODELIST": "node[1-2]"}
        document, run = _verify(cluster, "slurm", env)
        assert document["allreduce"]["passed"] is True, run.stderr + slurm.log("slurmctld")
        assert document["exit_code"] == 0
        assert all(ok for _, ok in gates(document))
        assert document["allreduce"]["verdict"]["world_size"] == 2
        # slurmd on each node launched the steps: preflight, launch (and nothing over SSH).
        for node in ("node1", "node2"):
            steps = slurm.steps_launched(node)
            assert len(steps) >= 2 and all(step.startswith(f"StepId={job}.") for step in steps), steps
        # The node check drains a failing node through the real scontrol, and resumes it once it passes.
        fake = tmp_path / "fake"
        (fake / "bin").mkdir(parents=True)
        (fake / "bin" / "ascendprep").write_text(FAKE_ASCENDPREP)
        (fake / "bin" / "ascendprep").chmod(0o755)
        check_env = {
            **slurm.env,
            "PATH": f"{fake / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "FAKE_DIR": str(fake),
            "SLURMD_NODENAME": "node2",
            "ASCENDPREP_NODECHECK_CONFIG": str(fake / "absent"),
        }
        (fake / "verify.rc").write_text("1")
        (fake / "verify.json").write_text(
            json.dumps({"kind": "verify", "findings": [{"id": "network.link", "severity": "error", "npu": 3}]})
        )
        failed = subprocess.run(["bash", str(NODECHECK)], env=check_env, capture_output=True, text=True, timeout=60)
        assert failed.returncode == 1, failed.stderr
        shown = subprocess.run(
            ["scontrol", "show", "node", "node2"], env=slurm.env, capture_output=True, text=True
        ).stdout
        assert "DRAIN" in shown and "Reason=ascendprep: network.link[npu 3]" in shown, shown
        (fake / "verify.rc").write_text("0")
        passed = subprocess.run(["bash", str(NODECHECK)], env=check_env, capture_output=True, text=True, timeout=60)
        assert passed.returncode == 0, passed.stderr
        shown = subprocess.run(
            ["scontrol", "show", "node", "node2"], env=slurm.env, capture_output=True, text=True
        ).stdout
        assert "DRAIN" not in shown and "Reason=" not in shown, shown
