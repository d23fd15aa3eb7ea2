"""The all-reduce launcher in the lab: is its busbw honest, and how long does a launch take?

Run as root, by hand (not part of the test suite):

    python3 bench/bench_allreduce.py                       # 8-node lab; 4M; nodes 1,4,8
    python3 bench/bench_allreduce.py --size 16M --repeat 5 --scaling 1,4 --json out.json

One lab of ``max(--scaling, 4)`` nodes is brought up, planned and applied (set_env.sh), and
taken down at the end, also on failure.

1. **busbw vs a minimal loop.** On 4 nodes x 2 ranks, ``run_allreduce`` with one size and a
   hand-written torch.distributed loop (``BASELINE`` below: init, warm-up, barrier, timed
   all-reduces of the same fp32 buffer, slowest rank's time) launched with plain ``ssh`` and
   torchrun on the same nodes, alternately, ``--repeat`` times each. Both compute busbw the
   nccl-tests way; the medians should agree within 5 %: the harness's checking, watchdog and
   record must not distort what it measures.
2. **Launch time by cluster size** (1 rank per node, one 1K all-reduce): run_allreduce's wall
   time, split into preflight + upload (2 SSH round trips per node) and the launch stage (SSH
   exec to every torchrun done), and the ranks' own view: the slowest rank's setup (torch
   import), init and first collective. With a 1K sweep the launch stage is an upper bound on
   launch-to-first-collective.

The lab's 'network' is veth pairs on one machine, and every rank shares its two cores: the
numbers describe the launcher's overhead, not a fabric.

Recorded (2026-11-22, 2 cores, torch 2.13 CPU, other test suites loading the machine to a load
average of ~18, so single runs scatter by +-25 %)::

    busbw at 4M on 4 nodes x 2 ranks (20 iters, median of 3):
      harness  0.0803 GB/s   runs 0.0672 0.0803 0.1048
      baseline 0.0775 GB/s   runs 0.1136 0.0775 0.0711
      difference +3.7% (target: within 5%)
    launch times (1 rank per node, one 1K all-reduce):
      nodes  wall s  preflight+upload s  launch stage s  rank setup s  rank init s  1st collective s
          1   17.96                2.37           15.60          7.47         0.01              0.01
          4   30.61                4.57           26.05          8.66         0.30              0.03
          8   37.95                8.62           29.33          9.43         0.38              0.02

The launch stage is torchrun's agent and then each rank importing torch (the ranks' setup
column), CPU-bound on two cores; the control side's own share is the preflight + upload column
(two SSH round trips and one SFTP write per node, all nodes at once).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, Dict, List

import yaml
from rich.console import Console

from ascendprep.inventory.load import load_inventory
from ascendprep.lab.lab import Lab
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.testing import free_test_subnet
from ascendprep.run.allreduce import AllreduceOptions, AllreduceOutcome, run_allreduce
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.allreduce.sizes import format_size, parse_size
from ascendprep.verify.allreduce.worker import bus_bandwidth_factor

BASELINE = """\
import sys, time
import torch
import torch.distributed as dist
nbytes, warmup, iters = (int(a) for a in sys.argv[1:4])
dist.init_process_group("gloo")
buf = torch.zeros(nbytes // 4, dtype=torch.float32)
for _ in range(warmup):
    dist.all_reduce(buf)
dist.barrier()
start = time.perf_counter()
for _ in range(iters):
    dist.all_reduce(buf)
elapsed = time.perf_counter() - start
times = [None] * dist.get_world_size()
dist.all_gather_object(times, elapsed)
if dist.get_rank() == 0:
    print("BASELINE_US", max(times) / iters * 1e6, flush=True)
dist.destroy_process_group()
"""
BASELINE_PATH = "/tmp/ascendprep-bench-baseline.py"


def cli(args: List[str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ascendprep", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"HOME": str(cwd), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "COLUMNS": "200"},
    )
    if done.returncode != 0:
        raise SystemExit(f"ascendprep {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def inventory_for(lab: Lab, folder: Path, nodes: int) -> Path:
    """The lab's inventory limited to its first ``nodes`` nodes, with absolute key paths."""
    data = yaml.safe_load(lab.inventory_path.read_text())
    data["ssh"]["key"] = str(lab.key_path)
    data["ssh"]["known_hosts"] = str(lab.known_hosts_path)
    data["nodes"] = [{"name": n.name, "host": n.mgmt_ip} for n in lab.nodes[:nodes]]
    path = folder / f"inventory-{nodes}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def harness(inventory: Path, **options: Any) -> AllreduceOutcome:
    loaded = load_inventory(inventory)
    with Session(host_accesses(loaded), forks=64) as session:
        outcome = run_allreduce(loaded, session, AllreduceOptions(**options), Console(file=io.StringIO()))
    if not outcome.passed or outcome.verdict is None:
        raise SystemExit(f"the harness run failed: {[f.message for f in outcome.findings]}")
    return outcome


def baseline(lab: Lab, nodes: int, nproc: int, nbytes: int, warmup: int, iters: int) -> float:
    """The minimal loop on the first ``nodes`` nodes: slowest rank's microseconds per all-reduce."""
    python = lab.python.executable
    chosen = lab.nodes[:nodes]
    for node in chosen:
        put = subprocess.run(
            lab.ssh_argv(node.name, f"cat > {BASELINE_PATH}"),
            input=BASELINE,
            text=True,
            capture_output=True,
            timeout=30,
        )
        if put.returncode != 0:
            raise SystemExit(f"{node.name}: cannot upload the baseline: {put.stderr}")
    port = random.randint(30000, 32000)
    procs = []
    for rank, node in enumerate(chosen):
        command = (
            f". /etc/ascendprep/set_env.sh && cd /tmp && {shlex.quote(python)} -m torch.distributed.run "
            f"--nnodes={nodes} --node_rank={rank} --nproc_per_node={nproc} --master_addr={chosen[0].mgmt_ip} "
            f"--master_port={port} {BASELINE_PATH} {nbytes} {warmup} {iters}"
        )
        procs.append(
            subprocess.Popen(
                lab.ssh_argv(node.name, command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for line in outputs[0].splitlines():
        if line.startswith("BASELINE_US"):
            return float(line.split()[1])
    raise SystemExit("the baseline printed no time:\n" + outputs[0][-3000:])


def compare_busbw(lab: Lab, inventory: Path, size: str, repeat: int, iters: int, warmup: int) -> Dict[str, Any]:
    nbytes = parse_size(size)
    world = 4 * 2
    factor = bus_bandwidth_factor(world)
    ours, theirs = [], []
    for _ in range(repeat):
        outcome = harness(inventory, nproc_per_node=2, sizes=size, warmup=warmup, iters=iters, timeout=300)
        assert outcome.verdict is not None
        ours.append(outcome.verdict.sizes[0].busbw_GBps)
        time_us = baseline(lab, 4, 2, nbytes, warmup, iters)
        theirs.append(nbytes / time_us / 1e3 * factor)
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    return {
        "size": size,
        "world_size": world,
        "iters": iters,
        "warmup": warmup,
        "harness_busbw_GBps": ours,
        "baseline_busbw_GBps": theirs,
        "harness_median": ours_median,
        "baseline_median": theirs_median,
        "difference_pct": (ours_median - theirs_median) / theirs_median * 100,
    }


def launch_times(lab: Lab, folder: Path, sizes: List[int]) -> List[Dict[str, Any]]:
    rows = []
    for nodes in sizes:
        inventory = inventory_for(lab, folder, nodes)
        started = time.monotonic()
        outcome = harness(inventory, nproc_per_node=1, sizes="1K", warmup=0, iters=1, timeout=300)
        wall = time.monotonic() - started
        slowest = outcome.phase_seconds
        rows.append(
            {
                "nodes": nodes,
                "ranks": sum(n.nproc for n in outcome.nodes),
                "wall_s": wall,
                "preflight_upload_s": wall - (outcome.launch_seconds or 0.0),
                "launch_stage_s": outcome.launch_seconds or 0.0,
                "rank_setup_s": slowest.get("setup", 0.0),
                "rank_init_s": slowest.get("init", 0.0),
                "rank_first_collective_s": slowest.get("connectivity", 0.0),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="4M", help="message size for the busbw comparison (default 4M)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scaling", default="1,4,8", help="node counts for the launch times (default 1,4,8)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    args.size = format_size(parse_size(args.size))  # refuse a bad size before the lab comes up
    scaling = [int(x) for x in args.scaling.split(",")]
    spec = LabSpec(name="bench-allreduce", nodes=max(scaling + [4]), subnet=free_test_subnet(offset=77))
    lab = Lab.up(spec)
    try:
        with TemporaryDirectory() as tmp:
            folder = Path(tmp)
            full = inventory_for(lab, folder, len(lab.nodes))
            cli(["plan", str(full)], folder)
            cli(["apply"], folder)
            four = inventory_for(lab, folder, 4)
            comparison = compare_busbw(lab, four, args.size, args.repeat, args.iters, args.warmup)
            scaling_rows = launch_times(lab, folder, scaling)
    finally:
        lab.down()
    print(f"busbw at {comparison['size']} on 4 nodes x 2 ranks ({comparison['iters']} iters, median of {args.repeat}):")
    print(
        f"  harness  {comparison['harness_median']:.4f} GB/s   runs {['%.4f' % v for v in comparison['harness_busbw_GBps']]}"
    )
    print(
        f"  baseline {comparison['baseline_median']:.4f} GB/s   runs {['%.4f' % v for v in comparison['baseline_busbw_GBps']]}"
    )
    print(f"  difference {comparison['difference_pct']:+.1f}% (target: within 5%)")
    print("launch times (1 rank per node, one 1K all-reduce):")
    print(
        f"  {'nodes':>5} {'wall s':>7} {'preflight+upload s':>19} {'launch stage s':>15} "
        f"{'rank setup s':>13} {'rank init s':>12} {'1st collective s':>17}"
    )
    for row in scaling_rows:
        print(
            f"  {row['nodes']:>5} {row['wall_s']:>7.2f} {row['preflight_upload_s']:>19.2f} {row['launch_stage_s']:>15.2f} "
            f"{row['rank_setup_s']:>13.2f} {row['rank_init_s']:>12.2f} {row['rank_first_collective_s']:>17.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"busbw": comparison, "launch": scaling_rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
