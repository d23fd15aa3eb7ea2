"""Offline plan of an A3 super-pod cluster: 8 pods x 48 servers x 16 dies (6,144 ranks) by default.

Run: python3 bench/bench_a3_plan.py [--pods 8] [--servers 48] [--repeat 3]

What it does, as ``ascendprep plan --offline --format json`` does: load the inventory (super-pod
membership, the located A3 rules), build the desired state (device IPs on two die planes, the
rank table 1.2 with every die's SDID and the super-pod list, the HCCL parser rules run over the
table), render the JSON plan. Then it checks the result: rank table 1.2, ``server_count`` and
``super_pod_list`` as expected, rank ids 0..N-1 in pod and local-rank order, no rule broken.

Times are CPU seconds of this process (time.process_time), best of ``--repeat``, because the
machine is shared; the wall time of the best run is printed next to it. Peak memory is the
process's max RSS (includes the interpreter and imported libraries).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def inventory_text(pods: int, servers: int) -> str:
    """``pods`` super-pods of ``servers`` A3 servers each; management 10.<64+pod>.0.x, the two die
    planes in 29.0.0.0/16 and 29.1.0.0/16 behind a gateway each; op-retry on (backup die IPs)."""
    entries = "".join(
        f"  - name: p{pod}s[01-{servers:02d}]\n    host: 10.{64 + pod}.0.[11-{10 + servers}]\n    super_pod: {pod}\n"
        for pod in range(pods)
    )
    return (
        "name: a3-bench\nproduct: atlas-a3\nnpus_per_node: 16\n"
        "device_network:\n  subnets: [29.0.0.0/16, 29.1.0.0/16]\n  gateways: [29.0.0.1, 29.1.0.1]\n  detect: gateway\n"
        'env:\n  HCCL_OP_RETRY_ENABLE: "L1:1,L2:1"\n  HCCL_OP_EXPANSION_MODE: AI_CPU\n'
        "training:\n  rank_table: true\n"
        'software:\n  cann: "8.1.RC1"\n'
        "nodes:\n" + entries
    )


def check_table(table: dict, pods: int, servers: int) -> None:
    """The properties the plan promises, checked on the benchmark's own output."""
    assert table["version"] == "1.2", table["version"]
    assert table["server_count"] == str(pods * servers)
    assert [p["super_pod_id"] for p in table["super_pod_list"]] == [str(p) for p in range(pods)]
    assert all(len(p["server_list"]) == servers for p in table["super_pod_list"])
    ranks = [int(d["rank_id"]) for s in table["server_list"] for d in s["device"]]
    assert ranks == list(range(pods * servers * 16))
    assert all(
        len(s["device"]) == 16 and all("backup_device_ip" in d for d in s["device"]) for s in table["server_list"]
    )


def run_once(path: Path) -> dict:
    from ascendprep.base.paths import RANK_TABLE
    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.load import load_inventory
    from ascendprep.report.plan import render_json

    timings = {}
    c0, w0 = time.process_time(), time.perf_counter()
    inventory = load_inventory(path)
    c1 = time.process_time()
    desired = build_desired(inventory)
    c2 = time.process_time()
    document = render_json(desired)
    c3, w3 = time.process_time(), time.perf_counter()
    timings.update(load=c1 - c0, plan=c2 - c1, render=c3 - c2, total=c3 - c0, wall=w3 - w0)
    first = next(iter(desired.nodes.values()))
    table_text = next(f.content for f in first.files if f.path == RANK_TABLE)
    return {"timings": timings, "desired": desired, "json_bytes": len(document), "table_text": table_text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=8)
    parser.add_argument("--servers", type=int, default=48, help="servers per super-pod (at most 48)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    t0 = time.process_time()
    import ascendprep.desired.state  # noqa: F401  (import cost reported apart)
    import ascendprep.report.plan  # noqa: F401

    imports = time.process_time() - t0
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a3-bench.yaml"
        path.write_text(inventory_text(args.pods, args.servers))
        for _ in range(max(1, args.repeat)):
            result = run_once(path)
            if best is None or result["timings"]["total"] < best["timings"]["total"]:
                best = result
    assert best is not None
    desired = best["desired"]
    errors = [f for f in desired.findings if f.severity.value == "error"]
    assert not errors, errors[:5]
    table = json.loads(best["table_text"])
    check_table(table, args.pods, args.servers)
    dies = sum(len(n.hccn) for n in desired.nodes.values())
    compact = len(json.dumps(table, separators=(",", ":")))
    t = best["timings"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"pods={args.pods} servers/pod={args.servers} dies={dies} errors={len(errors)} rank table 1.2: {len(best['table_text']) / 1e6:.2f} MB indented, {compact / 1e6:.2f} MB compact; plan JSON {best['json_bytes'] / 1e6:.1f} MB"
    )
    print(
        f"CPU best of {args.repeat}: load {t['load']:.3f}s  plan {t['plan']:.3f}s  render(json) {t['render']:.3f}s  total {t['total']:.3f}s (wall {t['wall']:.3f}s)  imports {imports:.3f}s"
    )
    print(f"peak RSS {peak_mb:.0f} MB  load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
