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

    python3 bench/bench_node_parallel.py --scripts                 # no lab, no root

``--scripts`` measures the node scripts alone, where this machine's CPU cannot hide the effect:
the rendered gather (plan and verify phase) and ping scripts run under ``sh`` here, against the
probe tests' shell stand-ins of hccn_tool and npu-smi (tests/fixtures/probes/fake_tools), each
call made to sleep ``--latency-ms`` first. Shapes: an A2 node (8 device ids; the stand-in's
npu-smi lists 2 NPUs) and an A3 node (16 device ids discovered from 8 NPUs of 2 chips); the ping
script sends 16 pings, 2 per NPU. Wall time (best of ``--repeat``) and the CPU of the script
and everything it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, Optional

from ascendprep.base import limits
from ascendprep.facts.gather import render_gather_script
from ascendprep.facts.ping import render_ping_script
from ascendprep.facts.unit import PLAN, VERIFY
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
        lab = Lab.up(
            LabSpec(name=name, nodes=nodes, subnet=free_test_subnet(offset=nodes), tool_latency_ms=latency_ms),
            paths=paths,
        )
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
                argv = [
                    sys.executable,
                    "-m",
                    "ascendprep",
                    *(word.format(inventory=lab.inventory_path) for word in words),
                ]
                log = folder / f"{name}-jobs{setting}-{attempt}.log"
                measured = run_on_lab(lab, argv, folder, run_env, log)
                if measured.rc not in expected:
                    raise SystemExit(f"ascendprep {name} (jobs {setting}) exited {measured.rc}:\n{tail(log)}")
                best = results[name].get(setting)
                if best is None or measured.wall < best.wall:
                    results[name][setting] = measured
                print(
                    f"[{name} jobs={setting} #{attempt + 1}: {measured.wall:.1f} s, load {os.getloadavg()[0]:.1f}]",
                    file=sys.stderr,
                    flush=True,
                )
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


# --- the node scripts alone (--scripts) ---------------------------------------------------------

FAKE_TOOLS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "probes"

_SLOW_TOOL = """#!/bin/sh
# {name} that takes a driver round trip before the stand-in answers.
sleep {seconds}
exec "$0.real" "$@"
"""


def slow_host(folder: Path, latency_ms: int) -> dict[str, str]:
    """PATH with the stand-ins of hccn_tool and npu-smi, each call sleeping ``latency_ms`` first."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("hccn_tool", "npu-smi"):
        shutil.copyfile(FAKE_TOOLS / "fake_tools" / name, bin_dir / f"{name}.real")
        (bin_dir / name).write_text(_SLOW_TOOL.format(name=name, seconds=f"{latency_ms / 1000:.3f}"))
        for path in (bin_dir / name, bin_dir / f"{name}.real"):
            path.chmod(0o755)
    state = folder / "state"
    state.mkdir(exist_ok=True)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_FIXTURES": str(FAKE_TOOLS),
        "FAKE_STATE": str(state),
        "TMPDIR": str(folder),
    }


def run_script(script: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall s and CPU s (the shell and everything it ran) of one ``sh -s`` run."""
    started = time.perf_counter()
    child = subprocess.Popen(
        ["sh", "-s"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    assert child.stdin is not None
    child.stdin.write(script.encode())
    child.stdin.close()
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"a node script exited {os.waitstatus_to_exitcode(status)}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def bench_scripts(latency_ms: int, jobs: list[int], repeat: int) -> list[tuple[str, int, float, float]]:
    """(script, jobs, best wall s, its CPU s) for each node script shape and jobs setting."""
    pings = [(npu, "10.0.0.2") for npu in range(8) for _ in range(2)]
    shapes = (
        (
            "gather plan, A2 (8 ids)",
            lambda n: render_gather_script(8, "python3", 10, ascend_home="/nonexistent", phase=PLAN, parallel=n),
            {},
        ),
        (
            "gather verify, A2 (8 ids)",
            lambda n: render_gather_script(8, "python3", 10, ascend_home="/nonexistent", phase=VERIFY, parallel=n),
            {},
        ),
        (
            "gather verify, A3 (16 ids)",
            lambda n: render_gather_script(None, "python3", 10, ascend_home="/nonexistent", phase=VERIFY, parallel=n),
            {"FAKE_NPU_LIST": "list_a3_8npu.out"},
        ),
        ("ping, 16 pairs", lambda n: render_ping_script(pings, 10, parallel=n), {}),
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-node-scripts-") as tmp:
        env = slow_host(Path(tmp), latency_ms)
        for label, render, extra in shapes:
            for setting in jobs:
                runs = [run_script(render(setting), {**env, **extra}) for _ in range(max(1, repeat))]
                wall, cpu = min(runs)
                rows.append((label, setting, wall, cpu))
                print(
                    f"[{label} jobs={setting}: {wall:.1f} s, load {os.getloadavg()[0]:.1f}]",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


def scripts_report(rows: list[tuple[str, int, float, float]], latency_ms: int) -> str:
    lines = [
        f"node scripts alone, {latency_ms} ms per hccn_tool/npu-smi call, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "",
        "| script | NPU jobs | wall s | CPU s |",
        "|---|---|---|---|",
    ]
    lines += [f"| {label} | {setting} | {wall:.1f} | {cpu:.2f} |" for label, setting, wall, cpu in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=200, help="lab up --tool-latency-ms")
    parser.add_argument("--jobs", default="1,8", help="comma-separated ASCENDPREP_NPU_PROBE_JOBS values")
    parser.add_argument("--repeat", type=int, default=1, help="runs per command and setting (the fastest is shown)")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--keep", type=Path, help="keep the logs in this folder")
    parser.add_argument("--scripts", action="store_true", help="measure the node scripts alone (no lab, no root)")
    args = parser.parse_args()
    jobs = [int(word) for word in args.jobs.split(",")]
    if args.scripts:
        print(scripts_report(bench_scripts(args.latency_ms, jobs, args.repeat), args.latency_ms))
        return 0
    problems = missing_requirements()
    if problems:
        print("cannot run a lab here:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
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
                args.json.write_text(
                    json.dumps({"nodes": args.nodes, "latency_ms": args.latency_ms, "results": raw}, indent=1) + "\n"
                )
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
