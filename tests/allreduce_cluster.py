"""A 4-node lab of its own for the all-reduce launcher, planned and applied once per module.

Apply writes /etc/ascendprep/set_env.sh on every node, which the launch sources. Tests that
break a node put it right again before they end, so the lab stays shared within the module.

Imported by name (``from allreduce_cluster import Cluster``); the ``cluster`` fixture reaches
the tests of tests/e2e through its conftest.py.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List

import pytest
import yaml
from labsupport import start_test_lab
from rich.console import Console

from ascendprep.inventory.load import load_inventory
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import processes_naming
from ascendprep.run.allreduce import AllreduceOptions, AllreduceOutcome, run_allreduce
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses

RUN_DIR_GLOB = "/tmp/ascendprep-allreduce-*"


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "HOME": str(cwd), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ascendprep", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def inventory_copy(lab: Lab, folder: Path, **software: str) -> Path:
    """The lab's inventory with absolute key paths and ``software`` overrides."""
    data = yaml.safe_load(lab.inventory_path.read_text())
    data["ssh"]["key"] = str(lab.key_path)
    data["ssh"]["known_hosts"] = str(lab.known_hosts_path)
    data["software"].update(software)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass
class Cluster:
    lab: Lab
    inventory: Path
    folder: Path

    def allreduce(self, inventory: Path | None = None, **options: object) -> "Run":
        loaded = load_inventory(inventory or self.inventory)
        text = io.StringIO()
        console = Console(file=text, width=200, highlight=False)
        with Session(host_accesses(loaded), forks=2) as session:  # fewer forks than nodes on purpose
            outcome = run_allreduce(loaded, session, AllreduceOptions(**options), console)
            execs = session.exec_counts()
        return Run(outcome, text.getvalue(), execs)


@dataclass
class Run:
    outcome: AllreduceOutcome
    printed: str
    execs: dict

    def ids(self, node: str | None = None) -> List[str]:
        return [f.id for f in self.outcome.findings if node is None or f.node == node]


def applied_cluster(
    tmp_path_factory: pytest.TempPathFactory, suffix: str, nodes: int, **options: Any
) -> Iterator[Cluster]:
    """A test lab, planned and applied as a user would (CLI), yielded as a Cluster; then down."""
    lab = start_test_lab(nodes=nodes, suffix=suffix, **options)
    try:
        folder = tmp_path_factory.mktemp(suffix)
        inventory = inventory_copy(lab, folder)
        planned = cli("plan", str(inventory), cwd=folder)
        assert planned.returncode == 0, planned.stdout + planned.stderr
        applied = cli("apply", cwd=folder)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        yield Cluster(lab, inventory, folder)
    finally:
        lab.down()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from applied_cluster(tmp_path_factory, "allreduce", nodes=4)


def processes_of(run_id: str) -> List[str]:
    """Live processes (any node: the lab shares one process table) of the run ``run_id``."""
    return processes_naming(f"ascendprep-allreduce-{run_id}")


def run_dirs_left(lab: Lab) -> List[str]:
    """Run directories still in any node's private /tmp."""
    left = []
    for node in lab.nodes:
        done = lab.ssh(node.name, f"ls -d {RUN_DIR_GLOB} 2>/dev/null || true")
        assert done.returncode == 0, done.stderr
        left += [f"{node.name}:{line}" for line in done.stdout.split()]
    return left
