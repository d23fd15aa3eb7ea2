"""``verify --allreduce --launcher slurm`` without the lab: the allocation read from srun's
environment contract, inventory nodes found in it, and :class:`SrunTransport` running scripts and
writing files through an srun stand-in (tests/contrib/srun_standin.py) that refuses what srun
would refuse."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.run.slurm import (
    STEP_ENV,
    Allocation,
    SlurmError,
    SrunTransport,
    allocation_from_env,
    expand_nodelist,
    prepare_slurm,
    slurm_node_names,
)

STANDIN = Path(__file__).resolve().parent / "srun_standin.py"


@pytest.fixture
def srun(tmp_path, monkeypatch):
    """The stand-in as ``srun`` on PATH, in an allocation of a2n[01-02]; its calls logged."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    (bin_dir / "srun").chmod(0o755)
    log = tmp_path / "srun.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "a2n[01-02]")
    monkeypatch.setenv("SRUN_STANDIN_LOG", str(log))
    monkeypatch.delenv("ASCENDPREP_SRUN", raising=False)
    return log


def calls(log: Path):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_hostlist_expressions_expand_like_slurm():
    assert expand_nodelist("a2n[01-03,07],login1") == ["a2n01", "a2n02", "a2n03", "a2n07", "login1"]
    assert expand_nodelist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    with pytest.raises(SlurmError, match="SLURM_JOB_NODELIST"):
        expand_nodelist("a2n[01-")


def test_outside_an_allocation_is_refused_with_what_to_do():
    with pytest.raises(SlurmError, match="not inside a Slurm allocation.*sbatch"):
        allocation_from_env({})
    with pytest.raises(SlurmError, match="not a job id"):
        allocation_from_env({"SLURM_JOB_ID": "12; rm -rf /", "SLURM_JOB_NODELIST": "a"})
    assert allocation_from_env({"SLURM_JOBID": "7", "SLURM_NODELIST": "n[1-2]"}) == Allocation("7", ("n1", "n2"))


def test_nodes_are_found_by_name_host_or_short_host_and_missing_ones_named():
    allocation = Allocation("1", ("a2n01", "a2n02", "gpu7"))
    assert slurm_node_names([("a2n01", "10.0.0.1"), ("x", "a2n02.cluster.local"), ("y", "gpu7")], allocation) == {
        "a2n01": "a2n01",
        "x": "a2n02",
        "y": "gpu7",
    }
    with pytest.raises(SlurmError, match=r"does not hold inventory nodes b1, b2"):
        slurm_node_names([("a2n01", "h"), ("b1", "h1"), ("b2", "h2")], allocation)


def test_a_missing_srun_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ASCENDPREP_SRUN", raising=False)
    with pytest.raises(SlurmError, match="srun not found"):
        prepare_slurm([("n1", "n1")], {"SLURM_JOB_ID": "3", "SLURM_JOB_NODELIST": "n1"})


def test_scripts_run_as_one_overlapping_step_on_the_node_with_stdin_and_exit_code(srun):
    launcher = prepare_slurm([("a2n02", "10.0.0.2")], os.environ)
    transport = SrunTransport("a2n02", launcher.allocation.job_id, "a2n02", launcher.srun, 30)
    result = transport.run_script('echo "on $SLURMD_NODENAME step task $SLURM_PROCID"; cat /dev/null; exit 3\n')
    assert result.rc == 3 and result.stdout == "on a2n02 step task 0\n"
    (call,) = calls(srun)
    assert call["options"] == {
        "--jobid": "4242",
        "--nodes": "1",
        "--ntasks": "1",
        "--nodelist": "a2n02",
        "--overlap": "",
        "--input": "0",
        "--quiet": "",
        "--kill-on-bad-exit": "1",
        "--export": ",".join(n for n in STEP_ENV if n in os.environ),
    }
    assert call["command"][:2] == ["sh", "-c"]


def test_a_step_gets_only_the_named_variables_and_never_a_secret(srun, monkeypatch):
    """What srun hands a step is an explicit list (what an SSH login gives a script), so the sudo
    password, a token or the caller's job settings (``HCCL_IF_IP``) never reach a node: not in the
    step's environment, not on srun's command line, not even in srun's own environment."""
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "s3cret-sudo-pw")
    monkeypatch.setenv("HCCL_IF_IP", "10.9.9.9")
    transport = SrunTransport("a2n01", "4242", "a2n01", "srun", 30)
    result = transport.run_script("env\n")
    assert result.rc == 0, result.stderr
    step_env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert "s3cret-sudo-pw" not in result.stdout + result.stderr
    assert not {"ASCENDPREP_SUDO_PASSWORD", "HCCL_IF_IP"} & set(step_env)
    assert step_env["PATH"] == os.environ["PATH"] and step_env["SLURMD_NODENAME"] == "a2n01"
    (call,) = calls(srun)
    assert call["options"]["--export"] == ",".join(
        n for n in ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ") if n in os.environ
    )
    assert "s3cret-sudo-pw" not in json.dumps(call["options"]) + json.dumps(call["command"])
    assert "ASCENDPREP_SUDO_PASSWORD" not in call["environ"] and "HCCL_IF_IP" in call["environ"]


def test_files_travel_inside_a_script_and_land_atomically(srun, tmp_path):
    transport = SrunTransport("a2n01", "4242", "a2n01", "srun", 30)
    target = tmp_path / "worker.py"
    payload = bytes(range(256)) * 300  # every byte value, 75 KB: the size of the all-reduce worker
    transport.put(payload, str(target), 0o644)
    assert target.read_bytes() == payload and oct(target.stat().st_mode & 0o777) == "0o644"
    assert len(calls(srun)) == 1  # one srun step, no second channel


def test_a_node_outside_the_allocation_is_refused_by_srun_and_said(srun):
    transport = SrunTransport("a2n09", "4242", "a2n09", "srun", 30)
    with pytest.raises(Exception) as raised:
        transport.run_script("echo hi\n")
    assert "a2n09" in str(raised.value) and "not available" in str(raised.value)


def test_a_hanging_step_is_killed_at_its_timeout(srun, tmp_path):
    pid_file = tmp_path / "pid"
    transport = SrunTransport("a2n01", "4242", "a2n01", "srun", 30)
    result = transport.run_script(f"sleep 30 & echo $! > {pid_file}; wait\n", timeout=1.5)
    assert result.timed_out
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # the step's child is gone, not left behind
        os.kill(pid, 0)


# --- the command --------------------------------------------------------------------------------

INVENTORY = """\
name: slurm
product: atlas-a2
npus_per_node: 8
device_network: {subnet: 10.20.0.0/24, detect: peer}
nodes:
  - name: a2n[01-03]
    host: 192.0.2.[1-3]
"""


def test_launcher_without_allreduce_is_a_usage_error(tmp_path):
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    outcome = CliRunner().invoke(verify_command, [str(tmp_path / "inventory.yaml"), "--launcher", "slurm"])
    assert outcome.exit_code == 2 and "--launcher only applies with --allreduce" in outcome.output


def test_outside_an_allocation_verify_stops_before_reading_any_host(tmp_path, monkeypatch):
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(name, raising=False)
    outcome = CliRunner().invoke(
        verify_command, [str(tmp_path / "inventory.yaml"), "--allreduce", "--launcher", "slurm", "--timeout", "5"]
    )
    assert outcome.exit_code == 2, outcome.output
    assert "--launcher slurm: not inside a Slurm allocation" in outcome.stderr
    assert "Traceback" not in outcome.output


def test_nodes_missing_from_the_allocation_are_named_before_any_host_is_read(tmp_path, srun):
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    outcome = CliRunner().invoke(
        verify_command, [str(tmp_path / "inventory.yaml"), "--allreduce", "--launcher", "slurm", "--timeout", "5"]
    )
    assert outcome.exit_code == 2, outcome.output
    assert "job 4242 does not hold inventory nodes a2n03" in outcome.stderr
    assert calls(srun) == []
