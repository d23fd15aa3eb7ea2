"""The node side of plan and verify with a slow driver: per-NPU jobs at once against NPUs in turn.

    sudo python3 bench/bench_node_parallel.py                      # 2 nodes x 8 NPUs, 200 ms per call
    sudo python3 bench/bench_node_parallel.py --nodes 4 --latency-ms 200 --jobs 1,8 --json out.json

Run by hand as root (not part of the test suite). It brings one atlas-a2 lab up with
``--tool-latency-ms`` (every simulated hccn_tool/npu-smi call sleeps that long first: a driver
round trip that costs no CPU, so the timings show tool calls rather than this machine's CPU),
applies the plan once, and then, for each value of ``--jobs`` (``ASCENDPREP_NPU_PROBE_JOBS``:
1 is the NPUs in turn, as before issue 12's node-side change; 8 the default), runs the CLI as a
user does, each command a child process:

- ``plan --detailed-exitcode`` on the converged lab (exit 0): the plan-phase gather, 4 hccn_tool
  queries per NPU;
- ``verify --sample-interval 0`` (exit 0 or 1): the full gather (12 queries and a counter read
  per NPU, npu-smi per chip) and then the ring ping matrix (each NPU pings its peers).

Reported per command and setting: wall time (best of ``--repeat``), the ascendprep process's CPU,
and the CPU the command caused on the lab nodes (sshd sessions and everything they ran). The lab
is taken down at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, Optional
from contextlib import contextmanager

from ascendprep import limits
from ascendprep.lab import lifecycle
from ascendprep.lab.lab import Lab
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.system import missing_requirements
from ascendprep.lab.testing import free_test_subnet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plan_apply import Measured, run_on_lab, tail  # noqa: E402  (bench/ is not a package)

#: The commands measured, with the exit statuses that mean "ran as intended".
STEPS = (
    ("plan", ("plan", "{inventory}", "--detailed-exitcode"), (0,)),
    ("verify", ("verify", "{inventory}", "--sample-interval", "0"), (0, 1)),
)


@contextmanager
def latency_lab(nodes: int, latency_ms: int) -> Iterator[Lab]:
    """A new lab ``benchnp-N`` with slow simulated tools, taken down afterwards whatever happens."""
    name = f"benchnp-{nodes}"
    paths = LabPaths(name)
    lifecycle.tear_down(paths)  # left by an earlier bench that was killed
    try:
        lab = Lab.up(LabSpec(name=name, nodes=nodes, subnet=free_test_subnet(offset=nodes), tool_latency_ms=latency_ms), paths=paths)
    except BaseException:
        lifecycle.tear_down(paths)
        raise
    try:
        yield lab
    finally:
        lab.down()


def converge(lab: Lab, folder: Path, env: dict[str, str]) -> None:
    """plan then apply once, so that plan finds nothing to do and verify has addresses to ping."""
    base = [sys.executable, "-m", "ascendprep"]
    for phase, argv, expected in (
        ("setup-plan", [*base, "plan", str(lab.inventory_path), "--detailed-exitcode"], (3,)),
        ("setup-apply", [*base, "apply"], (0,)),
    ):
        log = folder / f"{phase}.log"
        measured = run_on_lab(lab, argv, folder, env, log)
        if measured.rc not in expected:
            raise SystemExit(f"ascendprep {phase} exited {measured.rc}:\n{tail(log)}")


def bench(lab: Lab, folder: Path, jobs: list[int], repeat: int) -> dict[str, dict[int, Measured]]:
    """{command: {jobs: fastest run}}; the settings alternate so that load drifts hit both."""
    env = {**os.environ, "HOME": str(folder), "COLUMNS": "200"}
    converge(lab, folder, env)
    results: dict[str, dict[int, Measured]] = {name: {} for name, _, _ in STEPS}
    for attempt in range(repeat):
        for setting in jobs:
            run_env = {**env, limits.NPU_PROBE_JOBS_ENV: str(setting)}
            for name, words, expected in STEPS:
                argv = [sys.executable, "-m", "ascendprep", *(word.format(inventory=lab.inventory_path) for word in words)]
                log = folder / f"{name}-jobs{setting}-{attempt}.log"
                measured = run_on_lab(lab, argv, folder, run_env, log)
                if measured.rc not in expected:
                    raise SystemExit(f"ascendprep {name} (jobs {setting}) exited {measured.rc}:\n{tail(log)}")
                best = results[name].get(setting)
                if best is None or measured.wall < best.wall:
                    results[name][setting] = measured
                print(f"[{name} jobs={setting} #{attempt + 1}: {measured.wall:.1f} s, load {os.getloadavg()[0]:.1f}]", file=sys.stderr, flush=True)
    return results


def report(results: dict[str, dict[int, Measured]], nodes: int, latency_ms: int) -> str:
    lines = [
        f"{nodes} nodes x 8 NPUs, --tool-latency-ms {latency_ms}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "",
        "| command | NPU jobs | wall s | ascendprep CPU s | node CPU s |",
        "|---|---|---|---|---|",
    ]
    for name, by_jobs in results.items():
        for setting, measured in sorted(by_jobs.items()):
            lines.append(f"| {name} | {setting} | {measured.wall:.1f} | {measured.cpu:.1f} | {measured.node_cpu:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=200, help="lab up --tool-latency-ms")
    parser.add_argument("--jobs", default="1,8", help="comma-separated ASCENDPREP_NPU_PROBE_JOBS values")
    parser.add_argument("--repeat", type=int, default=1, help="runs per command and setting (the fastest is shown)")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--keep", type=Path, help="keep the logs in this folder")
    args = parser.parse_args()
    problems = missing_requirements()
    if problems:
        print("cannot run a lab here:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    jobs = [int(word) for word in args.jobs.split(",")]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-node-parallel-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: Optional[dict[str, dict[int, Measured]]] = None
    try:
        with latency_lab(args.nodes, args.latency_ms) as lab:
            results = bench(lab, folder, jobs, max(1, args.repeat))
    finally:
        if results is not None:
            print(report(results, args.nodes, args.latency_ms), flush=True)
            print(f"[done in {time.perf_counter() - started:.0f} s]", file=sys.stderr)
            if args.json is not None:
                raw = {name: {str(k): asdict(v) for k, v in by_jobs.items()} for name, by_jobs in results.items()}
                args.json.write_text(json.dumps({"nodes": args.nodes, "latency_ms": args.latency_ms, "results": raw}, indent=1) + "\n")
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
