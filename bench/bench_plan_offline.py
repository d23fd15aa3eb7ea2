"""Offline plan of a large cluster: wall time split into load / plan / render, and peak memory.

Run: python3 bench/bench_plan_offline.py [--nodes 4096] [--npus 8]
Target (issue 2): 4,096 nodes x 8 NPUs (32,768 device IPs) under 2 s and 300 MB peak on 2 cores.
Peak memory is the process's max RSS (includes the interpreter and imported libraries).
"""

from __future__ import annotations

import argparse
import io
import resource
import tempfile
import time
from pathlib import Path


def inventory_text(nodes: int, npus: int, leaves: int = 0) -> str:
    """One /15 for the cluster, or with ``leaves`` a rule: one /24 per leaf per rail (8 rails)."""
    per_rack = 200 if not leaves else -(-nodes // leaves)
    entries = []
    for rack in range((nodes + per_rack - 1) // per_rack):
        first = rack * per_rack + 1
        last = min(nodes, first + per_rack - 1)
        count = last - first + 1
        entries.append(
            f"  - name: n[{first:04d}-{last:04d}]\n    host: 10.{64 + rack // 200}.{rack % 200}.[1-{count}]\n    labels: {{rack: r{rack:02d}}}\n"
        )
    network = (
        "device_network:\n  subnet: 29.0.0.0/15\n  gateway: 29.0.0.1\n  detect: gateway\n"
        if not leaves
        else f"device_network:\n  detect: gateway\n  rule: {{supernet: 29.0.0.0/12, by: rack, prefix: 24, rails: {npus}}}\n"
    )
    return (
        "name: bench\nproduct: atlas-a2\n"
        f"npus_per_node: {npus}\n"
        + network
        + 'software:\n  cann: "8.0.RC3"\n  driver: "24.1.rc2"\n  torch: "2.1.0"\n  torch_npu: "2.1.0.post17"\n  torchvision: "0.16.0"\n  python: "3.10"\n'
        "nodes:\n" + "".join(entries)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--npus", type=int, default=8)
    parser.add_argument(
        "--leaves", type=int, default=0, help="address groups: one /24 per leaf per rail (0: one flat subnet)"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.load import load_inventory
    from ascendprep.report.addresses import write_address_csv
    from ascendprep.report.plan import render_json

    t_import = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(inventory_text(args.nodes, args.npus, args.leaves))
        t1 = time.perf_counter()
        inventory = load_inventory(path)
        t2 = time.perf_counter()
        desired = build_desired(inventory)
        t3 = time.perf_counter()
        document = render_json(desired)
        t4 = time.perf_counter()
        table = io.StringIO()
        write_address_csv(desired, table)
        t5 = time.perf_counter()
    ips = sum(len(n.hccn) for n in desired.nodes.values())
    errors = [f for f in desired.findings if f.severity.value == "error"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"nodes={args.nodes} npus/node={args.npus} device_ips={ips} errors={len(errors)} json={len(document) / 1e6:.1f} MB"
    )
    print(f"import {t_import - t0:.3f}s  load {t2 - t1:.3f}s  plan {t3 - t2:.3f}s  render(json) {t4 - t3:.3f}s")
    print(f"total (load+plan+render) {t4 - t1:.3f}s  with imports {t4 - t0:.3f}s  peak RSS {peak_mb:.0f} MB")
    print(f"address table (csv, {len(table.getvalue()) / 1e6:.1f} MB) {t5 - t4:.3f}s")


if __name__ == "__main__":
    main()
