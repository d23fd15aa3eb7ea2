"""How long ``lab up`` / ``lab down`` take by lab size and node parallelism (run by hand, as root).

    sudo python3 bench/bench_lab_up.py                      # sizes 1 4 16 32 64, workers 1 and 8
    sudo python3 bench/bench_lab_up.py --sizes 32 --workers 8 --repeat 3

Prints one row per (size, workers): the best of ``--repeat`` runs for up (until every sshd
accepts connections) and for down, plus the first ssh round trip to the last node. It also
times ssh-keygen, the per-node cost that decided whether host keys could be made per node.
The goal it checks: 32 nodes up in under 30 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ascendprep.lab import lifecycle
from ascendprep.lab.lab import Lab
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.sshd import generate_key
from ascendprep.lab.system import missing_requirements

BENCH_LAB = "bench"
BENCH_SUBNET = "10.231.250.0/24"
GOAL_NODES, GOAL_SECONDS = 32, 30.0


def time_keygen(count: int = 32) -> float:
    """Seconds per ed25519 key pair made with ssh-keygen."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        for index in range(count):
            generate_key(Path(folder) / f"key{index}", "bench")
        return (time.perf_counter() - started) / count


def one_run(nodes: int) -> tuple[float, float, float]:
    """(up seconds, first ssh to the last node seconds, down seconds)."""
    spec = LabSpec(name=BENCH_LAB, nodes=nodes, subnet=BENCH_SUBNET)
    started = time.perf_counter()
    lab = Lab.up(spec)
    up = time.perf_counter() - started
    started = time.perf_counter()
    result = subprocess.run(lab.ssh_argv(lab.nodes[-1].name, "hostname"), capture_output=True, text=True)
    first_ssh = time.perf_counter() - started
    if result.stdout.strip() != lab.nodes[-1].name:
        raise SystemExit(f"ssh to {lab.nodes[-1].name} failed: {result.stderr.strip()}")
    started = time.perf_counter()
    lab.down()
    return up, first_ssh, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,16,32,64", help="comma-separated node counts")
    parser.add_argument("--workers", default="1,8", help="comma-separated node-parallelism values")
    parser.add_argument("--repeat", type=int, default=2, help="runs per row (the best is shown)")
    args = parser.parse_args()
    problems = missing_requirements()
    if problems:
        print("cannot run a lab here:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    lifecycle.tear_down(LabPaths(BENCH_LAB))  # a bench killed earlier leaves its lab

    print(f"machine: {os.cpu_count()} CPUs; ssh-keygen ed25519: {time_keygen() * 1000:.1f} ms per key")
    print(f"{'nodes':>5} {'workers':>7} {'up s':>7} {'ssh s':>7} {'down s':>7}")
    goal_met = None
    for workers in (int(w) for w in args.workers.split(",")):
        lifecycle.PARALLEL_NODES = workers
        for nodes in (int(n) for n in args.sizes.split(",")):
            runs = [one_run(nodes) for _ in range(args.repeat)]
            up, first_ssh, down = (min(column) for column in zip(*runs))
            print(f"{nodes:>5} {workers:>7} {up:>7.2f} {first_ssh:>7.2f} {down:>7.2f}")
            if nodes == GOAL_NODES:
                goal_met = up < GOAL_SECONDS if goal_met is None else goal_met and up < GOAL_SECONDS
    if goal_met is not None:
        print(f"goal: {GOAL_NODES} nodes up in < {GOAL_SECONDS:.0f}s: {'met' if goal_met else 'MISSED'}")
    return 0 if goal_met in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
