"""``run_allreduce`` against a real 4-node lab: torchrun over SSH, gloo over the lab network.

Each launch costs ~10-20 s on two cores (every rank imports torch), so sweeps are tiny and the
gate test runs one rank per node.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from allreduce_cluster import Cluster, inventory_copy, processes_of, run_dirs_left

from ascendprep.base.findings import Severity
from ascendprep.lab.testing import fault_injected

pytestmark = pytest.mark.lab

TINY = {"nproc_per_node": 2, "sizes": "1K:64K", "warmup": 1, "iters": 3}


def test_healthy_cluster_passes_with_zero_wrong_elements_and_a_busbw_figure(cluster: Cluster) -> None:
    run = cluster.allreduce(**TINY, timeout=120, min_busbw=1e-9)
    outcome = run.outcome
    assert outcome.passed, run.printed
    assert outcome.findings == []
    verdict = outcome.verdict
    assert verdict is not None and verdict.world_size == 8 and verdict.backend == "gloo"
    assert verdict.connectivity_passed and verdict.correctness_passed
    assert [row.bytes for row in verdict.sizes] == [1024, 4096, 16384, 65536]
    assert all(row.ranks_reporting == 8 and row.wrong_elements == 0 for row in verdict.sizes)
    assert all(row.busbw_GBps > 0 for row in verdict.sizes)
    assert verdict.busbw_floor is not None and verdict.busbw_floor.passed
    assert {n.node: n.status for n in outcome.nodes} == {f"node{i}": "ok" for i in range(1, 5)}
    assert [n.node_rank for n in outcome.nodes] == [0, 1, 2, 3]
    # What a person sees: the per-size table with the bus bandwidth, and the pass.
    assert "busbw (GB/s)" in run.printed and "64K" in run.printed and "all-reduce passed" in run.printed
    # ... closed by nccl-tests' two lines.
    assert "wrong elements: 0 OK" in run.printed
    assert re.search(
        r"avg busbw: [0-9.e+-]+ GB/s over 4 sizes OK \([0-9.e+-]+ GB/s at 64K, floor 1e-09 GB/s\)", run.printed
    ), run.printed
    document = outcome.to_dict()
    assert document["schema_version"] == 1 and document["passed"] is True
    assert document["verdict"]["correctness"]["wrong_elements"] == 0
    assert [(g["name"], g["ok"]) for g in document["verdict"]["gates"]] == [
        ("connectivity", True),
        ("wrong_elements", True),
        ("busbw", True),
        ("training", True),
        ("stragglers", True),
        ("self_test", True),
        ("rank_table", True),
    ]
    # Preflight and launch: two execs per node, whatever the session's forks.
    assert run.execs == {f"node{i}": 2 for i in range(1, 5)}
    assert processes_of(outcome.run_id) == []
    assert run_dirs_left(cluster.lab) == []


def test_a_node_without_the_interpreter_is_named_and_nothing_starts(cluster: Cluster, tmp_path: Path) -> None:
    lab = cluster.lab
    wrapper = "/usr/local/bin/ascendprep-test-python"
    script = f'#!/bin/sh\nexec {shlex.quote(lab.python.executable)} "$@"\n'
    for node in ("node1", "node2", "node4"):  # /usr/local is each node's own: node3 lacks it
        lab.run_in_node(node, ["sh", "-c", f"cat > {wrapper} && chmod 755 {wrapper}"], input=script)
    try:
        inventory = inventory_copy(lab, tmp_path, python_path=wrapper)
        run = cluster.allreduce(inventory, **TINY, timeout=60)
    finally:
        for node in ("node1", "node2", "node4"):
            lab.run_in_node(node, ["rm", "-f", wrapper])
    outcome = run.outcome
    assert not outcome.passed and outcome.stage == "preflight" and outcome.verdict is None
    failed = [f for f in outcome.findings if f.id == "allreduce.node_failed"]
    assert [(f.node, f.severity) for f in failed] == [("node3", Severity.ERROR)]
    assert f"the interpreter {wrapper} (software.python_path) does not exist" in failed[0].message
    assert "node3" in run.printed and "does not exist" in run.printed
    assert {n.node: n.status for n in outcome.nodes} == {
        "node1": "not_started",
        "node2": "not_started",
        "node3": "not_started",
        "node4": "not_started",
    }
    assert processes_of(outcome.run_id) == []
    assert run_dirs_left(lab) == []


def _kill_node_when_running(node: str, delay: float, killed: list) -> None:
    """Like a node crashing: SIGKILL its torchrun and ranks a little after they appear."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        pids = _pids(f"-{node}/worker.py")
        if len(pids) >= 2:  # the agent and its rank
            time.sleep(delay)
            for pid in _pids(f"-{node}/worker.py"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            return
        time.sleep(0.2)


def _pids(tag: str) -> list:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = open(f"/proc/{entry.name}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "ascendprep-allreduce-" in cmdline and tag in cmdline:
                pids.append(int(entry.name))
    return pids


def test_a_node_killed_mid_run_fails_within_the_timeout_and_is_named(cluster: Cluster) -> None:
    killed: list = []
    killer = threading.Thread(target=_kill_node_when_running, args=("node3", 4.0, killed), daemon=True)
    killer.start()
    started = time.monotonic()
    run = cluster.allreduce(nproc_per_node=1, sizes="1K:4M", warmup=1, iters=50, timeout=30)
    elapsed = time.monotonic() - started
    killer.join(5)
    assert killed, "the run ended before node3 could be killed"
    outcome = run.outcome
    assert not outcome.passed and elapsed < 30 + 20
    node3 = next(n for n in outcome.nodes if n.node == "node3")
    assert node3.status == "failed" and node3.problem is not None and node3.problem.kind == "killed"
    assert "signal 9" in node3.problem.message
    named = [f for f in outcome.findings if f.id == "allreduce.node_failed"]
    assert [f.node for f in named] == ["node3"], [f.message for f in outcome.findings]
    assert "nodes with no result: node3" in " ".join(outcome.verdict.reasons)
    assert "node3:" in run.printed
    assert processes_of(outcome.run_id) == []
    assert run_dirs_left(cluster.lab) == []


def test_min_busbw_above_what_the_lab_can_do_fails_the_verdict(cluster: Cluster) -> None:
    run = cluster.allreduce(nproc_per_node=1, sizes="4K:16K", warmup=1, iters=2, timeout=60, min_busbw=1e6)
    outcome = run.outcome
    verdict = outcome.verdict
    assert not outcome.passed and verdict is not None
    assert verdict.connectivity_passed and verdict.correctness_passed
    assert verdict.busbw_floor is not None and not verdict.busbw_floor.passed and verdict.busbw_floor.at_bytes == 16384
    assert [(f.id, f.severity) for f in outcome.findings] == [("allreduce.busbw", Severity.ERROR)]
    assert "is below --min-busbw 1e+06 GB/s" in outcome.findings[0].message
    assert "wrong elements: 0 OK" in run.printed
    assert "FAIL (bus bandwidth " in run.printed and "at 16K is below --min-busbw 1e+06 GB/s)" in run.printed
    assert run_dirs_left(cluster.lab) == []


def test_a_slow_node_is_named_by_bisect(cluster: Cluster) -> None:
    """A synchronous all-reduce runs at its slowest link's pace: every rank is equally slow,
    so the per-rank straggler rule cannot see a slow node. The gate fails; --bisect names it."""
    with fault_injected(cluster.lab, "node3", "slow", rate="8mbit"):
        run = cluster.allreduce(
            nproc_per_node=1, sizes="64K:256K", warmup=1, iters=3, timeout=90, min_busbw=1e6, bisect=True
        )
    outcome = run.outcome
    verdict = outcome.verdict
    assert verdict is not None and verdict.connectivity_passed and verdict.correctness_passed
    assert verdict.stragglers == ()  # what the verdict alone can say: slow, but not who
    assert verdict.busbw_floor is not None and not verdict.busbw_floor.passed
    assert outcome.bisect is not None and list(outcome.bisect.suspects) == ["node3"], outcome.bisect.to_dict()
    stragglers = [f for f in outcome.findings if f.id == "allreduce.straggler"]
    assert [(f.node, f.severity, f.evidence["source"]) for f in stragglers] == [("node3", Severity.WARNING, "bisect")]
    assert "node3 slows the all-reduce" in stragglers[0].message
    assert run_dirs_left(cluster.lab) == []


def test_ctrl_c_stops_every_process_on_every_node(cluster: Cluster) -> None:
    program = textwrap.dedent(f"""
        from rich.console import Console
        from ascendprep.run.allreduce import AllreduceOptions, run_allreduce
        from ascendprep.run.hosts import host_accesses
        from ascendprep.inventory.load import load_inventory
        from ascendprep.run.fanout import Session
        inventory = load_inventory({str(cluster.inventory)!r})
        with Session(host_accesses(inventory), 8) as session:
            run_allreduce(inventory, session, AllreduceOptions(nproc_per_node=1, sizes="1K", timeout=120,
                          inject_stall=2), Console(stderr=True))
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 90
        while len(_pids("/worker.py")) < 8 and time.monotonic() < deadline:  # 4 agents, 4 ranks
            time.sleep(0.2)
        assert len(_pids("/worker.py")) >= 8, "the run never started"
        time.sleep(2)
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=40)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0
    assert "interrupted: stopping the all-reduce on every node" in output
    assert _pids("/worker.py") == []
    assert run_dirs_left(cluster.lab) == []
