"""``verify --allreduce --exec-via PREFIX``: every step on a node runs through the wrapper.

No lab: this machine is the one node, reached through the local transport, and the wrapper is a
"container" that notes each step it is asked to run (the name the step's shell gets) and then
runs it. The all-reduce is real (torchrun, one gloo rank), so a step that went around the
wrapper, or a launch that killed itself, shows up as a failed run or a missing step.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import List

import yaml
from rich.console import Console

from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.run.allreduce import AllreduceOptions, run_allreduce
from ascendprep.run.execvia import parse_exec_via
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.allreduce import scripts


class NoPut(LocalTransport):
    """This machine, refusing file writes from the control side: through --exec-via the worker
    must be written from inside the container (whose /tmp is not the host's)."""

    puts: List[str] = []

    def put(self, data: bytes, remote_path: str, mode: int) -> None:
        NoPut.puts.append(remote_path)
        super().put(data, remote_path, mode)


def test_every_all_reduce_step_runs_through_the_wrapper(tmp_path: Path, monkeypatch) -> None:
    set_env = tmp_path / "set_env.sh"
    set_env.write_text("export ASCENDPREP_TEST=1\n")
    monkeypatch.setattr(scripts, "SET_ENV_SH", str(set_env))
    log = tmp_path / "steps.log"
    wrapper = tmp_path / "container"
    wrapper.write_text(f'#!/bin/sh\n[ "$1 $2" = "sh -c" ] && echo "$4" >> {log}\nexec "$@"\n')
    wrapper.chmod(0o755)
    inventory = inventory_from_text(
        yaml.safe_dump(
            {
                "name": "one",
                "product": "atlas-a2",
                "npus_per_node": 1,
                "device_network": {"subnet": "10.20.0.0/24", "tls": False},
                "software": {"python_path": sys.executable},
                "nodes": [{"name": "n1", "host": "127.0.0.1"}],
            }
        )
    )
    NoPut.puts = []
    text = io.StringIO()
    with Session(host_accesses(inventory), forks=1, transport_factory=lambda access: NoPut(access.name)) as session:
        outcome = run_allreduce(
            inventory,
            session,
            AllreduceOptions(nproc_per_node=1, sizes="1K:4K", backend="gloo", warmup=1, iters=2, timeout=180),
            Console(file=text, width=200, highlight=False),
            exec_via=parse_exec_via(str(wrapper)),
        )
    assert outcome.passed, text.getvalue()
    assert log.read_text().split() == [
        "ascendprep-all-reduce-preflight",
        "ascendprep-worker-upload",
        "ascendprep-all-reduce-launch",
    ]
    assert NoPut.puts == []
