"""verify (no all-reduce) on labs of 1, 8, 16 and 32 nodes: wall time and SSH execs per host.

Run as root, by hand: python3 bench/bench_verify.py [--sizes 1,8,16,32] [--mesh ring] [--sample-intervals 5]
Each size gets its own lab (brought up, configured with plan + apply, verified, taken down).
Wall time is one `ascendprep verify` run (gather + ping phase + checks + report + bundle);
the gather and ping columns are the slowest host's. The budget is 2 SSH execs per host.
``--sample-intervals 0,5`` verifies the same lab once per ``--sample-interval`` (issue 20: what
sampling the port counters adds to verify's wall time).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict

from ascendprep.lab.lab import Lab
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.testing import free_test_subnet
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan
from ascendprep.run.verify import run_verify
from ascendprep.run.verify_run import VerifyOptions


def verify_once(lab: Lab, workdir: Path, mesh: str, sample_interval: int = 5) -> Dict[str, Any]:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out):
            code = run_verify(
                VerifyOptions(
                    inventory=lab.inventory_path, output_format="json", mesh=mesh, sample_interval=sample_interval
                )
            )
    finally:
        os.chdir(cwd)
    wall = time.monotonic() - started
    doc = json.loads(out.getvalue())
    hosts = doc["hosts"].values()
    return {
        "exit": code,
        "wall": wall,
        "gather": max(h["gather_seconds"] for h in hosts),
        "ping": max(h["ping_seconds"] for h in hosts),
        "pings": sum(h["pings"] or 0 for h in hosts),
        "execs_max": max(h["ssh_execs"] or 0 for h in hosts),
        "execs_total": sum(h["ssh_execs"] or 0 for h in hosts),
        "errors": doc["summary"]["errors"],
        "checks": len(doc["checks"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,8,16,32", help="comma list of node counts")
    parser.add_argument("--mesh", default="ring", choices=["ring", "full"])
    parser.add_argument(
        "--sample-intervals",
        default="5",
        help="comma list of verify --sample-interval values, each run on the same lab",
    )
    args = parser.parse_args()
    intervals = [int(s) for s in args.sample_intervals.split(",")]
    print(
        f"{'nodes':>5} {'sample':>6} {'wall s':>7} {'gather s':>8} {'ping s':>7} {'pings':>6} {'execs/host':>10} {'checks':>7} {'errors':>6} exit"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        spec = LabSpec(name=f"bench-verify-{size}", nodes=size, subnet=free_test_subnet(offset=size))
        lab = Lab.up(spec)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                workdir = Path(tmp)
                with contextlib.redirect_stdout(io.StringIO()):
                    run_plan(lab.inventory_path, workdir / "plan.json", "text", False, False, None)
                    run_apply(workdir / "plan.json", False, None)
                for interval in intervals:
                    row = verify_once(lab, workdir, args.mesh, interval)
                    print(
                        f"{size:>5} {interval:>6} {row['wall']:>7.1f} {row['gather']:>8.1f} {row['ping']:>7.1f} {row['pings']:>6}"
                        f" {row['execs_max']:>10} {row['checks']:>7} {row['errors']:>6} {row['exit']:>4}",
                        flush=True,
                    )
        finally:
            lab.down()


if __name__ == "__main__":
    main()
