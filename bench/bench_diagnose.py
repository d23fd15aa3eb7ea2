"""Benchmark ``ascendprep diagnose`` on the logs of a 64-node x 16-rank job (no root, no lab).

Generates one plog per rank and one console log per rank in CANN's formats (the lines of
tests/diagnose/joblogs.py: HCCL's communicator-init, per-op ``Entry-HcclAllReduce`` INFO lines as
``HCCL_ENTRY_LOG_ENABLE`` prints them, and at the end every rank's notify-wait timeout; one rank's
plog shows ``cqe error status[12]`` first), padded to ``--size-mb`` in total, then runs
``python -m ascendprep diagnose --format json`` on the tree in a child process and reports:

* MB/s per core: the tree's bytes over the child's CPU time (user + system, its worker processes
  included), and the same without the fixed cost (start, imports, report) measured on a 2-rank tree;
* peak memory: the largest resident set of the child and its worker processes (one per core);
* the target, "disk speed": the same bytes read by a plain 4 MiB-chunk loop in this process
  (page cache warm, as for diagnose: the figure is the read path's speed, not the disk's);
* whether the planted rank was named.

    python3 bench/bench_diagnose.py --size-mb 300            # here: ~300 MB
    python3 bench/bench_diagnose.py --size-mb 3000 --keep DIR  # full size: a few GB
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "diagnose"))

from joblogs import GROUP, Rank, console_lines, cqe_line, init_lines, t, timeout_lines  # noqa: E402

CULPRIT = 517


def entry_line(r: Rank, op: int) -> str:
    """One ``Entry-HcclAllReduce`` INFO line (HCCL troubleshooting guide, HCCL_ENTRY_LOG_ENABLE)."""
    return (
        f"[INFO] HCCL({r.pid},python):2025-10-24-11:17:{op % 60:02d}.305.623 [hccl_opbase_atrace_info.cc:56][{r.pid}]"
        f"Entry-HcclAllReduce: tag[AllReduce_{GROUP}], sendBuf[0x1241d3dcdc00], recvBuf[0x124702f40200], "
        f"count[10746295], dataType[float32], op[sum], localRank[{r.rank % 16}], streamId[7],comm[0xfffe380078d0], "
        f"deviceLogicId[{r.device}]\n"
    )


def generate(root: Path, nodes: int, per_node: int, size_mb: int) -> int:
    job = [
        Rank(n * per_node + d, f"node{n:03d}", d, 100000 + n * per_node + d, f"10.0.{n // 250}.{n % 250 + 1}")
        for n in range(nodes)
        for d in range(per_node)
    ]
    size = len(job)
    per_rank = size_mb * 1024 * 1024 // size
    total = 0
    for r in job:
        folder = root / r.node / "plog"
        folder.mkdir(parents=True, exist_ok=True)
        head = "\n".join(init_lines(r, size)) + "\n"
        tail = timeout_lines(r, size, t(40, 30 + r.rank % 20))
        if r.rank == CULPRIT:
            tail = [cqe_line(r, job[CULPRIT + per_node], t(40, 12))] + tail
        block = "".join(entry_line(r, op) for op in range(200)).encode()
        with (folder / f"plog-{r.pid}_20251024111652406.log").open("wb") as handle:
            handle.write(head.encode())
            written = len(head)
            while written < per_rank:
                handle.write(block)
                written += len(block)
            end = ("\n".join(tail) + "\n").encode()
            handle.write(end)
            total += written + len(end)
        console = ("\n".join(console_lines(r, t(40, 31))) + "\n").encode()
        (root / r.node / f"rank-{r.rank}.txt").write_bytes(console)
        total += len(console)
    return total


def read_speed(root: Path) -> float:
    """Seconds to read every file of the tree in 4 MiB chunks."""
    start = time.perf_counter()
    for folder, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                while handle.read(4 * 1024 * 1024):
                    pass
    return time.perf_counter() - start


def run_child(root: Path) -> "tuple[subprocess.CompletedProcess, float, float, float]":
    """``diagnose --format json root`` in a child: (result, wall s, CPU s, peak RSS MB of the
    largest of its processes)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-m", "ascendprep", "diagnose", "--format", "json", str(root)],
        env=env,
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return child, wall, cpu, after.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--ranks-per-node", type=int, default=16)
    parser.add_argument("--size-mb", type=int, default=300, help="total size of the logs (default 300)")
    parser.add_argument("--keep", type=Path, default=None, help="write the logs here and keep them")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-diagnose-"))
    try:
        total = generate(root, args.nodes, args.ranks_per_node, args.size_mb)
        read_s = min(read_speed(root) for _ in range(2))
        tiny = root / "_fixed"
        generate(tiny, 1, 2, 0)
        _c, _w, fixed, _r = run_child(tiny)
        shutil.rmtree(tiny)
        child, wall, cpu, rss = run_child(root)
        doc = json.loads(child.stdout)
        culprits = doc["jobs"][0]["root"]["culprits"] if doc["jobs"][0]["root"] else []
        mb = total / 1e6
        print(
            json.dumps(
                {
                    "ranks": args.nodes * args.ranks_per_node,
                    "bytes": total,
                    "exit": child.returncode,
                    "named": [c["rank"] for c in culprits],
                    "right": [c["rank"] for c in culprits] == [CULPRIT],
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "mb_per_s_per_core": round(mb / cpu, 1),
                    "fixed_cpu_s": round(fixed, 2),
                    "scan_mb_per_s_per_core": round(mb / max(cpu - fixed, 1e-3), 1),
                    "workers": min(os.cpu_count() or 1, 16),
                    "peak_rss_mb": round(rss, 1),
                    "plain_read_mb_per_s": round(mb / read_s, 1),
                },
                indent=1,
            )
        )
        return 0 if child.returncode == 0 else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
