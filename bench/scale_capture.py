"""Record the transcripts the scale benchmark replays: one lab node's gather output, fresh and
converged, and its ping output (run as root, by hand; bench/bench_scale.py reads the result).

    ascendprep lab up --name s3bench --nodes 2
    python3 bench/scale_capture.py /var/lib/ascendprep/lab/s3bench/inventory.yaml

The lab inventory is copied with the device subnet widened to a /16 (the shape the benchmark's
4,096-node inventories use, so the recorded netmask is theirs), then: verify (records node1's fresh
gather), plan, apply, verify (records node1's converged gather and its ping script's output). The
transcripts are written to bench/scale_data/ with the lab's node name, host address and device
addresses in them; bench_scale.py substitutes each simulated host's own values.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Dict, List

import yaml

from ascendprep.remote.result import ExecResult
from ascendprep.run import fanout

DATA = Path(__file__).resolve().parent / "scale_data"
#: The recorded node and the device subnet the benchmark inventories use.
NODE = "node1"
DEVICE_SUBNET = "10.20.0.0/16"


class _Recorder:
    """Wraps a real transport; keeps every script output of NODE, tagged with its kind."""

    def __init__(self, inner, log: List[Dict[str, str]]) -> None:
        self._inner, self._log, self.name = inner, log, inner.name

    def __getattr__(self, attr):
        return getattr(self._inner, attr)

    def run_script(self, script: str, timeout=None) -> ExecResult:
        result = self._inner.run_script(script, timeout)
        if self.name == NODE:
            kind = (
                "ping"
                if "@@ascendprep ping" in result.stdout
                else "gather"
                if "@@ascendprep gather" in result.stdout
                else "other"
            )
            self._log.append({"kind": kind, "stdout": result.stdout})
        return result


def main() -> None:
    lab_inventory = Path(sys.argv[1]).resolve()
    doc = yaml.safe_load(lab_inventory.read_text())
    doc["device_network"]["subnet"] = DEVICE_SUBNET
    inventory = lab_inventory.with_name("scale-capture.yaml")
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    log: List[Dict[str, str]] = []
    connect = fanout.Session._connect_ssh
    fanout.Session._connect_ssh = lambda self, access: _Recorder(connect(self, access), log)  # type: ignore[method-assign]

    from ascendprep.run.apply import run_apply
    from ascendprep.run.plan import run_plan
    from ascendprep.run.verify import run_verify
    from ascendprep.run.verify_run import VerifyOptions

    work = inventory.parent / "scale-capture"
    work.mkdir(exist_ok=True)
    os.chdir(work)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        # the fresh node's full gather (every probe, as verify reads it); plan reads only a subset
        print(
            "verify (fresh)",
            run_verify(VerifyOptions(inventory=inventory, output_format="json", runs_dir=work / "runs")),
            file=sys.stderr,
        )
        fresh = [e for e in log if e["kind"] == "gather"][-1]
        print("plan", run_plan(inventory, work / "plan.json", "text", True, False, None), file=sys.stderr)
        print("apply", run_apply(work / "plan.json", False, None), file=sys.stderr)
        log.clear()
        print(
            "verify",
            run_verify(VerifyOptions(inventory=inventory, output_format="json", runs_dir=work / "runs")),
            file=sys.stderr,
        )
    converged = [e for e in log if e["kind"] == "gather"][-1]
    ping = [e for e in log if e["kind"] == "ping"][-1]
    DATA.mkdir(exist_ok=True)
    (DATA / "a2-fresh.gather.txt").write_text(fresh["stdout"])
    (DATA / "a2-converged.gather.txt").write_text(converged["stdout"])
    (DATA / "a2-converged.ping.txt").write_text(ping["stdout"])
    (DATA / "capture.json").write_text(json.dumps({"node": NODE, "inventory": doc}, indent=1) + "\n")
    print(f"written to {DATA}", file=sys.stderr)


if __name__ == "__main__":
    main()
