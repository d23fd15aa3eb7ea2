"""The launcher's pure parts and its shell scripts, without a lab (no root, a second or two).

The scripts run for real here, under this machine's ``sh``: preflight against the real and a
missing interpreter, cleanup against live processes that do and do not belong to the run.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from nodescript import run_node_script
from rich.console import Console

from ascendprep.base.findings import Severity
from ascendprep.report.allreduce import print_allreduce
from ascendprep.verify.allreduce.bisection import GroupResult, judge, plan_rounds, slow_threshold
from ascendprep.verify.allreduce.diagnosis import LaunchResult, launch_problem, log_tail, primary_problems, suspects
from ascendprep.verify.allreduce.options import AllreduceOptions, resolve_settings
from ascendprep.verify.allreduce.outcome import AllreduceOutcome, build_findings
from ascendprep.verify.allreduce.results import build_verdict, parse_worker_output
from ascendprep.verify.allreduce.scripts import (
    LaunchOutput,
    parse_preflight,
    parse_script_output,
    process_pattern,
    render_cleanup_script,
    render_launch_script,
    render_preflight_script,
    run_dir,
    torchrun_arguments,
)
from ascendprep.verify.allreduce.worker import PHASES, RankReport

NODES = [("node1", 8), ("node2", 8)]


# --- options ----------------------------------------------------------------------------------


def test_defaults_take_the_nodes_npus_and_shares_of_the_overall_timeout() -> None:
    settings, problems = resolve_settings(AllreduceOptions(), NODES, None)
    assert problems == [] and settings is not None
    assert settings.nproc_by_node == {"node1": 8, "node2": 8} and settings.world_size == 16
    assert settings.backend == "auto" and settings.min_busbw is None and settings.min_busbw_source is None
    t = settings.timeouts
    assert (t.overall, t.init, t.op, t.rendezvous) == (600, 300, 120, 300)
    args = settings.worker_arguments("node2")
    assert args[:4] == ["--node-name", "node2", "--backend", "auto"] and "--sizes" not in args


def test_a_product_floor_is_the_gate_unless_the_user_gives_one() -> None:
    settings, _ = resolve_settings(AllreduceOptions(), NODES, 20.0)
    assert (settings.min_busbw, settings.min_busbw_source) == (20.0, "product")
    settings, _ = resolve_settings(AllreduceOptions(min_busbw=5.0), NODES, 20.0)
    assert (settings.min_busbw, settings.min_busbw_source) == (5.0, "--min-busbw")


def test_bad_options_are_named_before_anything_runs() -> None:
    options = AllreduceOptions(sizes="1K:banana", timeout=1, backend="mpi", nproc_per_node=0)
    settings, problems = resolve_settings(options, NODES, None)
    assert settings is None
    text = "\n".join(problems)
    assert "--sizes" in text and "banana" in text
    assert "--timeout 1: give at least 5 seconds" in text
    assert "--backend 'mpi'" in text and "--nproc-per-node 0" in text
    _, problems = resolve_settings(AllreduceOptions(inject_stall=16), NODES, None)
    assert problems == ["inject_stall 16: not a rank of this run (0-15)"]


def test_the_verify_commands_own_options_object_is_read_by_attribute() -> None:
    theirs = SimpleNamespace(
        sizes="1K:4K", min_busbw=None, backend="gloo", nproc_per_node=2, train=True, bisect=False, timeout=40.0
    )
    options = AllreduceOptions.coerce(theirs)
    assert (options.sizes, options.backend, options.nproc_per_node, options.train, options.timeout) == (
        "1K:4K",
        "gloo",
        2,
        True,
        40.0,
    )
    settings, _ = resolve_settings(options, NODES, None)
    assert settings.timeouts.op == 10 and settings.timeouts.init == 20
    assert "--train" in settings.worker_arguments("node1")


# --- scripts ----------------------------------------------------------------------------------


def test_run_dirs_and_patterns_refuse_anything_a_shell_could_misread() -> None:
    assert run_dir("20260101T000000-abc123", "node-1.a") == "/tmp/ascendprep-allreduce-20260101T000000-abc123-node-1.a"
    for run_id, node in (("x;rm", "n"), ("ok", "a b"), ("ok", "../x"), ("", "n")):
        with pytest.raises(ValueError):
            run_dir(run_id, node)
    pattern = process_pattern("/tmp/ascendprep-allreduce-r1-node1.x")
    assert pattern == "/tmp/ascendprep-allreduce-r1-node1[.]x[/]worker[.]py"
    with pytest.raises(ValueError):
        torchrun_arguments(nnodes=2, node_rank=2, nproc=1, master_addr="h", master_port=1, rendezvous_timeout=1)


@pytest.fixture
def directory() -> str:
    path = run_dir(f"t{os.getpid()}-{secrets.token_hex(3)}", "node1")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sh(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_node_script(["sh", "-s"], input=script, capture_output=True, text=True, timeout=timeout)


def test_every_script_is_valid_posix_sh(directory: str) -> None:
    launch = render_launch_script(
        directory,
        "/usr/bin/python3",
        torchrun_arguments(
            nnodes=2, node_rank=1, nproc=8, master_addr="10.0.0.1", master_port=29500, rendezvous_timeout=300
        ),
        ["--node-name", "node1", "--sizes", "1K:256M"],
    )
    for script in (
        launch,
        render_cleanup_script(directory),
        render_preflight_script(directory, "/usr/bin/python3", True),
    ):
        checked = subprocess.run(["sh", "-n"], input=script, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
    assert ' "$d"/worker.py --node-name node1 --sizes 1K:256M ' in launch
    assert f"{directory}/worker.py" not in launch  # see test_a_launch_run_through_exec_via_does_not_kill_itself


def test_preflight_reports_a_missing_interpreter(directory: str) -> None:
    done = sh(render_preflight_script(directory, "/nonexistent/python3", True))
    pre = parse_preflight(done.stdout)
    assert pre.mkdir_ok and pre.python == "missing" and pre.port is None


def test_preflight_finds_torch_without_importing_it_and_picks_a_port(directory: str) -> None:
    started = time.monotonic()
    done = sh(render_preflight_script(directory, sys.executable, True))
    pre = parse_preflight(done.stdout)
    assert pre.python == "ok" and pre.probe_rc == 0, done.stdout + done.stderr
    assert pre.torch_found and pre.torchrun_found and pre.torch
    assert pre.port is not None and 0 < pre.port < 65536
    assert time.monotonic() - started < 5  # no torch import
    assert os.path.isdir(directory) and oct(os.stat(directory).st_mode & 0o777) == "0o700"


def test_cleanup_kills_this_nodes_processes_only_and_removes_the_directory(directory: str) -> None:
    other = directory.replace("-node1", "-node10")
    os.makedirs(directory, exist_ok=True)
    with open(f"{directory}/torchrun.log", "w") as log:
        log.write("ASCENDPREP_RESULT {}\nlast words\n")
    sleeper = "import time; time.sleep(120)"
    mine = subprocess.Popen([sys.executable, "-c", sleeper, f"{directory}/worker.py"])
    theirs = subprocess.Popen([sys.executable, "-c", sleeper, f"{other}/worker.py"])
    try:
        time.sleep(0.3)
        out = parse_script_output(sh(render_cleanup_script(directory)).stdout)
        assert mine.wait(5) is not None
        assert theirs.poll() is None, "a process of another node's run was killed"
    finally:
        for process in (mine, theirs):
            process.kill()
            process.wait()
    assert out.killed == 1
    assert out.log is not None and "last words" in out.log
    assert not os.path.exists(directory)


def test_a_launch_run_through_exec_via_does_not_kill_itself(directory: str, tmp_path, monkeypatch) -> None:
    """Through a wrapper the launch script is on a command line: the end-of-run kill of this node's
    processes must not find the script itself, so its exit, kill count and log still come back."""
    from ascendprep.run.execvia import parse_exec_via, wrap_step
    from ascendprep.verify.allreduce import scripts

    set_env = tmp_path / "set_env.sh"
    set_env.write_text("export ASCENDPREP_TEST=1\n")
    monkeypatch.setattr(scripts, "SET_ENV_SH", str(set_env))
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'ASCENDPREP_RESULT {}'\n")  # torchrun's stand-in: a rank's record, exit 0
    python.chmod(0o755)
    wrapper = tmp_path / "container"
    wrapper.write_text('#!/bin/sh\nexec "$@"\n')
    wrapper.chmod(0o755)
    os.makedirs(directory, mode=0o700)
    launch = render_launch_script(
        directory,
        str(python),
        torchrun_arguments(
            nnodes=1, node_rank=0, nproc=1, master_addr="127.0.0.1", master_port=29500, rendezvous_timeout=30
        ),
        ["--node-name", "node1"],
    )
    done = sh(wrap_step(launch, parse_exec_via(str(wrapper)), "node1", "all-reduce launch"))
    out = parse_script_output(done.stdout)
    assert (out.exit_code, out.killed) == (0, 0), done.stdout + done.stderr
    assert out.log is not None and "ASCENDPREP_RESULT" in out.log
    assert not os.path.exists(directory)


def test_script_output_markers_and_the_log_section_are_read() -> None:
    text = (
        "noise\n@ascendprep-allreduce started 1700000000\n@ascendprep-allreduce exit 1\n"
        "@ascendprep-allreduce killed 2\n@ascendprep-allreduce log-begin\nline 1\n"
        "@ascendprep-allreduce exit 9\n@ascendprep-allreduce log-end\n"
    )
    out = parse_script_output(text)
    assert (out.exit_code, out.killed, out.started_at) == (1, 2, 1700000000)
    assert out.log == "line 1\n@ascendprep-allreduce exit 9"


# --- diagnosis ----------------------------------------------------------------------------------


def record(rank: int, node: str, world: int = 4, failed: tuple | None = None, times: dict | None = None) -> dict:
    report = RankReport(rank, rank % 2, world, 2, node)
    report.data["backend"] = "gloo"
    for phase in PHASES:
        report.finish(phase, 0.01)
    for nbytes, time_us in (times or {65536: 100.0}).items():
        report.data["sizes"].append(
            {
                "bytes": nbytes,
                "elements": nbytes // 4,
                "time_us": time_us,
                "algbw_GBps": 0.0,
                "busbw_GBps": 0.0,
                "wrong_elements": 0,
            }
        )
    if failed:
        report.fail(*failed)
    return report.data


def collected(*records: dict):
    return parse_worker_output("\n".join("ASCENDPREP_RESULT " + json.dumps(r) for r in records))


def problem(node: str, log: str = "", exit_code: int | None = 1, records=(), **launch):
    out = LaunchOutput(exit_code=exit_code, log=log)
    return launch_problem(LaunchResult(node, out, **launch), 2, collected(*records), "10.0.0.1", 29500, 60)


def test_a_node_that_never_joined_is_told_from_the_master_log() -> None:
    found = problem(
        "node1", "torch.distributed.DistStoreError: Timed out after 11 seconds waiting for clients. 3/4 clients joined."
    )
    assert found.kind == "rendezvous_failed"
    assert found.message == "rendezvous failed: only 3 of 4 nodes reached torchrun's rendezvous on 10.0.0.1:29500"
    assert problem("node2", "ModuleNotFoundError: No module named 'torch'\n").kind == "torch_missing"


def test_killed_by_someone_else_differs_from_stopped_by_us() -> None:
    assert problem("node3", "Killed", exit_code=137).kind == "killed"
    assert problem("node3", "", exit_code=143, cleaned_up=True).kind == "no_result"
    stopped = [record(r, "node3", failed=("init", "stopped by SIGTERM during init_process_group")) for r in (2, 3)]
    assert problem("node3", "", exit_code=143, cleaned_up=True, records=stopped) is None


def test_the_rank_not_inside_a_collective_is_the_suspect() -> None:
    waiting = [
        record(
            r,
            f"node{r // 2 + 1}",
            failed=(
                "performance",
                "timed out after 10s in the checked all_reduce of 1K bytes (a peer rank is dead, hung or unreachable)",
            ),
        )
        for r in (0, 1, 3)
    ]
    idle = record(2, "node2", failed=("performance", "stopped by SIGTERM (torchrun stops every rank when one fails)"))
    found = suspects(collected(*waiting, idle), ["node1", "node2"])
    assert list(found) == ["node2"] and "rank 2 was not inside a collective" in found["node2"]
    assert suspects(collected(*waiting), ["node1", "node2"]) == {}


def test_a_node_level_fault_hides_its_consequences_elsewhere() -> None:
    crash = problem("node3", "Killed", exit_code=137)
    consequence = problem(
        "node2", "", records=[record(r, "node2", failed=("performance", "RuntimeError: boom")) for r in (2, 3)]
    )
    assert consequence.kind == "rank_failed"
    assert primary_problems({"node2": consequence, "node3": crash}) == {"node3": crash}
    assert primary_problems({"node2": consequence}) == {"node2": consequence}


def test_log_tails_leave_out_torchruns_summary_and_traceback_frames() -> None:
    log = (
        'Traceback (most recent call last):\n  File "x.py", line 1\n    boom()\nRuntimeError: boom\n'
        "============================================================\n  host      : node1\n"
        "ASCENDPREP_RESULT {}\nASCENDPREP_ERROR phase=init rank=0 node=node1 reason=boom\n"
    )
    assert log_tail(log) == "RuntimeError: boom\nASCENDPREP_ERROR phase=init rank=0 node=node1 reason=boom"


# --- bisect -------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [3, 4, 5, 8])
def test_bisect_rounds_give_every_node_new_partners_and_never_two_jobs(count: int) -> None:
    names = [f"n{i}" for i in range(count)]
    rounds = plan_rounds(names)
    assert len(rounds) >= 2
    for groups in rounds:
        members = [n for g in groups for n in g]
        assert len(members) == len(set(members))  # one job per node at a time
    for node in names:
        partners = [frozenset(g) - {node} for groups in rounds for g in groups if node in g]
        assert len(partners) >= 2 and len(set(partners)) == len(partners)
    assert plan_rounds(["a", "b"]) == []


def test_bisect_names_the_node_in_every_slow_group_despite_noise() -> None:
    rounds = [
        [GroupResult(("n1", "n2"), True, 0.049, 262144), GroupResult(("n3", "n4"), True, 0.0009, 262144)],
        [GroupResult(("n2", "n3"), True, 0.00089, 262144), GroupResult(("n4", "n1"), True, 0.111, 262144)],
    ]
    report = judge(rounds)
    assert list(report.suspects) == ["n3"] and report.broken == ()
    assert slow_threshold([0.05, 0.06, 0.1]) is None  # spread without a step is not slowness
    failed = judge(
        [
            [GroupResult(("n1", "n2"), True, 1.0, 1), GroupResult(("n3", "n4"), False, None, None, "x")],
            [GroupResult(("n2", "n3"), False, None, None, "x"), GroupResult(("n4", "n1"), True, 1.0, 1)],
        ]
    )
    assert failed.broken == ("n3",)


# --- findings and printing ----------------------------------------------------------------------


def test_findings_name_the_gate_and_nothing_else_for_a_slow_but_correct_run() -> None:
    records = [record(r, f"node{r // 2 + 1}") for r in range(4)]
    verdict = build_verdict(
        collected(*records), expected_world_size=4, expected_nodes=["node1", "node2"], min_busbw_GBps=1e6
    )
    findings = build_findings(verdict=verdict, problems={}, nodes=["node1", "node2"])
    assert [(f.id, f.severity) for f in findings] == [("allreduce.busbw", Severity.ERROR)]
    passed = build_verdict(collected(*records), expected_world_size=4, expected_nodes=["node1", "node2"])
    assert build_findings(verdict=passed, problems={}, nodes=["node1", "node2"]) == []


def test_a_node_that_cannot_launch_is_an_error_and_the_run_did_not_happen() -> None:
    crash = problem("node2", "Killed", exit_code=137)
    findings = build_findings(verdict=None, problems={"node2": crash}, nodes=["node1", "node2"])
    assert [(f.id, f.node) for f in findings] == [("allreduce.node_failed", "node2"), ("allreduce.connectivity", None)]
    assert findings[0].message.startswith("node2: torchrun was killed by signal 9")


def test_printing_survives_text_that_looks_like_markup() -> None:
    records = [
        record(r, f"node{r // 2 + 1}", failed=("performance", "RuntimeError: [/__w/gloo/pair.cc:553] closed"))
        for r in range(4)
    ]
    verdict = build_verdict(collected(*records), expected_world_size=4)
    settings, _ = resolve_settings(AllreduceOptions(nproc_per_node=2), NODES, None)
    outcome = AllreduceOutcome("r1", "done", settings, verdict=verdict)
    text = io.StringIO()
    print_allreduce(Console(file=text, width=200), outcome)
    assert "[/__w/gloo/pair.cc:553]" in text.getvalue() and "all-reduce failed" in text.getvalue()
    assert json.loads(json.dumps(outcome.to_dict()))["schema_version"] == 1
