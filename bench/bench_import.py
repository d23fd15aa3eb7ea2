"""``inventory import`` of a large fleet: the facts of 4,096 simulated hosts read, compacted into an
inventory and proven by planning it, in seconds.

Run: python3 bench/bench_import.py [--hosts 4096] [--moved 0]

No root, no lab: every host's gather transcript is the recorded lab node's (bench/scale_sim.py),
answered for the import's own read-only gather script with that host's values. Timed apart:
parsing the transcripts (what the controller does with each host's answer as it arrives), then
the import proper (facts -> what is there -> the compact inventory, loaded and planned back).
``--moved N``: that many pairs of hosts, spread over the fleet, swap their device IPs, as two
re-cabled servers would; one of each pair must come back explicit (the other then holds the
next free addresses, so it is on the pattern) and everything else as the rule.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scale_sim  # noqa: E402

from ascendprep.adopt.compact import compact  # noqa: E402
from ascendprep.adopt.hostfacts import seen_from_facts  # noqa: E402
from ascendprep.desired.state import build_desired  # noqa: E402
from ascendprep.facts.gather import parse_gather_output  # noqa: E402
from ascendprep.facts.sections import new_nonce  # noqa: E402
from ascendprep.inventory.load import load_inventory  # noqa: E402
from ascendprep.run.inventory_import import import_gather_script  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4096)
    parser.add_argument("--moved", type=int, default=0, help="pairs of hosts whose addresses are swapped")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        inventory = load_inventory(scale_sim.write_scale_inventory(Path(folder), args.hosts))
        fleet = scale_sim.SimulatedFleet(build_desired(inventory), scale_sim.CONVERGED)
        started, cpu = time.perf_counter(), time.process_time()
        facts = {}
        for node in inventory.nodes:
            nonce = new_nonce()
            script = import_gather_script(nonce)
            facts[node.name] = parse_gather_output(fleet.transcript(node.name, script))
        parsed, parsed_cpu = time.perf_counter() - started, time.process_time() - cpu

        started, cpu = time.perf_counter(), time.process_time()
        seen = seen_from_facts({n.name: n.host for n in inventory.nodes}, facts, {})
        step = max(2, len(seen.nodes) // max(1, args.moved)) if args.moved else 0
        moved = set()
        if step:
            # a re-cabled pair: two servers that swapped their cables (and so their addresses)
            for index in range(step // 2, len(seen.nodes) - 1, step):
                first, second = seen.nodes[index], seen.nodes[index + 1]
                seen.nodes[index] = replace(first, npus=second.npus)
                seen.nodes[index + 1] = replace(second, npus=first.npus)
                moved |= {first.name, second.name}
        result = compact(seen, inventory.product.id)
        imported, imported_cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result.complete, result.conflicts[:3]
    # one server of each pair is off the pattern: the other then holds the next free addresses
    assert set(result.off_pattern) <= moved and len(result.off_pattern) == len(moved) // 2, result.off_pattern[:5]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    npus = sum(len(n.npus) for n in seen.nodes)
    print(f"hosts: {args.hosts}, NPUs: {npus}, swapped: {len(moved)}, off the pattern: {len(result.off_pattern)}")
    print(
        f"parse the hosts' transcripts: {parsed:.2f} s wall, {parsed_cpu:.2f} s CPU "
        f"({parsed_cpu / args.hosts * 1000:.2f} ms CPU per host)"
    )
    print(f"import (facts -> inventory, loaded and planned back): {imported:.2f} s wall, {imported_cpu:.2f} s CPU")
    print(f"inventory: {len(result.text.splitlines())} lines, {result.form} device network; peak RSS {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
