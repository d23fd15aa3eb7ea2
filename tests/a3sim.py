"""A simulated A3 lab without root: state dir, identity files, and the tools run as subprocesses
(``python -S -m ascendprep.lab.sim.<tool>``), as tests/lab/conftest.py does for other products,
with each node's ``super_pod`` record as ``lab up --pod-servers`` writes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ascendprep.lab.sim import cann, state
from ascendprep.lab.spec import LabSpec

REPO = Path(__file__).resolve().parents[1]


class A3Lab:
    def __init__(
        self, base: Path, nodes: int = 4, pod_servers: Optional[int] = 2, npus: int = 16, product: str = "atlas-a3"
    ) -> None:
        self.base = base
        self.state_dir = base / "state"
        spec = LabSpec(product=product, nodes=nodes, npus=npus, pod_servers=pod_servers).validated()
        self.names = [node.name for node in spec.node_list()]
        cabling = state.default_cabling(product, self.names, npus)
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
                    **({"super_pod": spec.super_pod_of(i + 1)} if spec.super_pod_of(i + 1) else {}),
                }
                for i, name in enumerate(self.names)
            ],
        }
        state.init_state(self.state_dir, self.lab)
        for name in self.names:
            (base / name / "etc").mkdir(parents=True)
            identity = {
                "lab": "lab",
                "node": name,
                "state_dir": str(self.state_dir),
                "hccn_conf": str(base / name / "etc" / "hccn.conf"),
            }
            (base / name / "node.json").write_text(json.dumps(identity))
            cann.install_cann_tree(base / name / "root", cann.DEFAULT_VERSIONS, "x86_64")

    def env(self, node: str) -> dict:
        return {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ASCENDPREP_LAB_NODE_FILE": str(self.base / node / "node.json"),
            "ASCENDPREP_LAB_ROOT": str(self.base / node / "root"),
        }

    def run(self, tool: str, node: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-S", "-m", f"ascendprep.lab.sim.{tool}", *args],
            capture_output=True,
            text=True,
            env=self.env(node),
            timeout=60,
        )

    def hccn(self, node: str, *args: str) -> subprocess.CompletedProcess:
        return self.run("hccn_tool", node, *args)

    def npu_smi(self, node: str, *args: str) -> subprocess.CompletedProcess:
        return self.run("npu_smi", node, *args)
