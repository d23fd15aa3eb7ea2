"""A temporary simulated lab (state dir + per-node identity files), no root or namespaces needed.

The tools run as subprocesses exactly as the node wrappers start them: ``python -S -c
<tools.entry_program(ascendprep.lab.sim.<tool>)>`` with the repository on ``PYTHONPATH``, the node chosen by
``ASCENDPREP_LAB_NODE_FILE`` and the version files by ``ASCENDPREP_LAB_ROOT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascendprep.lab.sim import cann, state, tools

REPO = Path(__file__).resolve().parents[2]


class SimLab:
    """One lab: ``hccn(node, *args)`` / ``npu_smi(node, *args)`` run the simulated tools."""

    def __init__(
        self, base: Path, product: str, nodes: tuple[str, ...], npus: int, driver_profiles: dict[str, str] | None = None
    ) -> None:
        self.base = base
        self.state_dir = base / "state"
        self.product = product
        cabling = state.default_cabling(product, list(nodes), npus)
        self.lab = {
            "name": "lab",
            "product": product,
            "state_dir": str(self.state_dir),
            "nodes": [
                {
                    "name": name,
                    "mgmt_ip": f"10.231.0.{11 + i}",
                    "npus": npus,
                    "cabling": cabling[name],
                    **({"driver_profile": driver_profiles[name]} if name in (driver_profiles or {}) else {}),
                }
                for i, name in enumerate(nodes)
            ],
        }
        state.init_state(self.state_dir, self.lab)
        for name in nodes:
            (base / name / "etc").mkdir(parents=True)
            identity = {
                "lab": "lab",
                "node": name,
                "state_dir": str(self.state_dir),
                "hccn_conf": str(self.conf_path(name)),
            }
            (base / name / "node.json").write_text(json.dumps(identity))
            cann.install_cann_tree(self.root(name), cann.DEFAULT_VERSIONS, "x86_64")

    def conf_path(self, node: str) -> Path:
        return self.base / node / "etc" / "hccn.conf"

    def root(self, node: str) -> Path:
        return self.base / node / "root"

    def conf(self, node: str) -> str:
        return self.conf_path(node).read_text()

    def doc(self, node: str) -> dict:
        return state.read_node(self.state_dir, node)

    def env(self, node: str) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ASCENDPREP_LAB_NODE_FILE": str(self.base / node / "node.json"),
            "ASCENDPREP_LAB_ROOT": str(self.root(node)),
        }

    def _run(self, module: str, node: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-S", "-c", tools.entry_program(module), *args],
            capture_output=True,
            text=True,
            env=self.env(node),
            timeout=timeout,
        )

    def hccn(self, node: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return self._run("ascendprep.lab.sim.hccn_tool", node, args, timeout)

    def npu_smi(self, node: str, *args: str) -> subprocess.CompletedProcess:
        return self._run("ascendprep.lab.sim.npu_smi", node, args, 30)

    def ok(self, node: str, *args: str) -> str:
        """Run a command that must succeed; return its stdout."""
        result = self.hccn(node, *args)
        assert result.returncode == 0, (args, result.returncode, result.stdout, result.stderr)
        return result.stdout

    def set_ip(self, node: str, devid: int, address: str, netmask: str = "255.255.255.0") -> None:
        self.ok(node, "-i", str(devid), "-ip", "-s", "address", address, "netmask", netmask)


@pytest.fixture
def make_lab(tmp_path: Path):
    """Factory: ``make_lab(product="atlas-a2", nodes=("node1", "node2"), npus=8, driver_profiles={"node2": "legacy"})``."""
    count = 0

    def factory(
        product: str = "atlas-a2",
        nodes: tuple[str, ...] = ("node1", "node2"),
        npus: int = 8,
        driver_profiles: dict[str, str] | None = None,
    ) -> SimLab:
        nonlocal count
        count += 1
        return SimLab(tmp_path / f"lab{count}", product, nodes, npus, driver_profiles)

    return factory


@pytest.fixture
def lab(make_lab) -> SimLab:
    """A two-node Atlas A2 lab with 8 NPUs per node."""
    return make_lab()
