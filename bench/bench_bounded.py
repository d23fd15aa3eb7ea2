"""plan and verify under a flooding and a hung hccn_tool (issue 19): wall time and peak RSS.

Run as root, by hand: python3 bench/bench_bounded.py [--sizes 3,16] [--flood 30M] [--npus 8]
                                                     [--json results.json]
For each size N a fresh atlas-a2 lab ``bench-bounded-N`` comes up (taken down afterwards, also on
failure). node2 gets ``hccn-flood`` (each hccn_tool call prints --flood bytes on stdout and a
quarter of that on stderr), node3 gets ``hccn-hang``; the other nodes are healthy. Each row is one
``ascendprep`` child process (this checkout's package): wall time, its peak RSS (``ru_maxrss``
from ``os.wait4``), exit code, and what it said about the sick nodes. Rows, as in the issue:
plan under flood + hang, verify under flood only, hang only, flood + hang.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from ascendprep.lab.cli_run import run_cli
from ascendprep.lab.lab import Lab
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.testing import free_test_subnet

SCENARIOS = [
    ("plan", ("flood", "hang")),
    ("verify", ("flood",)),
    ("verify", ("hang",)),
    ("verify", ("flood", "hang")),
]
#: A run is killed after this long (the issue's verify under flood + hang ran past 900 s).
KILL_AFTER_S = 900


def _outcome(command: str, document: Dict[str, Any]) -> str:
    """What the run said about node2 (flood) and node3 (hang), in a few words."""
    if command == "plan":
        hosts = {h["node"]: h for h in document["hosts"]}
        sick = sorted(name for name, h in hosts.items() if h["incomplete"] or not h["reachable"])
        return f"incomplete: {', '.join(sick) or 'none'}"
    failed = sorted(
        {
            c["node"]
            for c in document["checks"]
            if c["node"] and c["status"] == "failed" and "could not check" in c["message"]
        }
    )
    return f"could not check on: {', '.join(failed) or 'none'}; bundle {'written' if document.get('bundle') else 'missing'}"


def bench_size(nodes: int, flood: str, npus: int) -> List[Dict[str, Any]]:
    lab = Lab.up(
        LabSpec(
            name=f"bench-bounded-{nodes}",
            nodes=nodes,
            product="atlas-a2",
            npus=npus,
            subnet=free_test_subnet(offset=nodes),
        )
    )
    rows = []
    try:
        for command, faults in SCENARIOS:
            lab.heal()
            if "flood" in faults:
                lab.fault("node2", "hccn-flood", size=flood)
            if "hang" in faults:
                lab.fault("node3", "hccn-hang")
            workdir = Path(tempfile.mkdtemp(prefix="bench-bounded-"))
            args = [command, str(lab.inventory_path), "--format", "json"]
            if command == "plan":
                args += ["-o", str(workdir / "plan.json")]
            run = run_cli(args, workdir, KILL_AFTER_S)
            try:
                document = json.loads(run.stdout)
                said = _outcome(command, document)
                hits = sorted({hit["limit"] for hit in document.get("limits_hit", [])})
            except (ValueError, KeyError) as exc:
                said, hits = f"no JSON ({exc}); stderr: {run.stderr[-300:]!r}", []
            row = {
                "nodes": nodes,
                "command": command,
                "faults": "+".join(faults),
                "wall_s": round(run.wall_s, 1),
                "max_rss_mb": round(run.max_rss_mb),
                "exit": run.returncode,
                "killed": run.killed,
                "outcome": said,
                "limits_hit": hits,
            }
            print(
                f"{nodes:>5} {command:<7} {row['faults']:<11} {row['wall_s']:>7} {row['max_rss_mb']:>7} "
                f"{run.returncode:>4}  {said}; limits_hit={hits}",
                flush=True,
            )
            rows.append(row)
    finally:
        lab.heal()
        lab.down()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="3,16", help="comma list of node counts (at least 3)")
    parser.add_argument("--flood", default="30M", help="bytes each flooded hccn_tool call prints (e.g. 30M)")
    parser.add_argument("--npus", type=int, default=8, help="NPUs per node")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    if min(sizes) < 3:
        parser.error("--sizes: every lab needs at least 3 nodes (node2 floods, node3 hangs)")
    print(f"{'nodes':>5} {'command':<7} {'faults':<11} {'wall s':>7} {'RSS MB':>7} exit  outcome")
    rows = [row for size in sizes for row in bench_size(size, args.flood, args.npus)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
