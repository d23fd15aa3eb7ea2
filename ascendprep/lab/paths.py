"""Where a lab keeps its files on the host (the layout is part of the lab contract).

``/var/lib/ascendprep/lab/NAME/`` holds what users read (inventory, key, known_hosts) and the
record of what ``up`` created; ``/run/ascendprep-lab/NAME/`` is a tmpfs with the shared simulator
state, the folder host and nodes share, and each node's overlay layers, gone with the lab (or a
reboot).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LAB_ROOT = Path("/var/lib/ascendprep/lab")
RUN_ROOT = Path("/run/ascendprep-lab")


@dataclass(frozen=True)
class LabPaths:
    """Every host path of one lab, derived from its name."""

    name: str
    lab_root: Path = LAB_ROOT
    run_root: Path = RUN_ROOT

    # --- persistent, user-visible ---------------------------------------------------------
    @property
    def lab_dir(self) -> Path:
        return self.lab_root / self.name

    @property
    def inventory(self) -> Path:
        return self.lab_dir / "inventory.yaml"

    @property
    def key(self) -> Path:
        return self.lab_dir / "id_ed25519"

    @property
    def public_key(self) -> Path:
        return self.lab_dir / "id_ed25519.pub"

    @property
    def known_hosts(self) -> Path:
        return self.lab_dir / "known_hosts"

    @property
    def lab_json(self) -> Path:
        return self.lab_dir / "lab.json"

    @property
    def faults_json(self) -> Path:
        return self.lab_dir / "faults.json"

    @property
    def journal(self) -> Path:
        """The record of everything ``up`` created, written before each step (see journal.py)."""
        return self.lab_dir / "created.jsonl"

    # --- runtime, on the lab's tmpfs ------------------------------------------------------
    @property
    def run_dir(self) -> Path:
        return self.run_root / self.name

    @property
    def state_dir(self) -> Path:
        """Simulator state shared by all nodes (outside their overlays)."""
        return self.run_dir / "state"

    @property
    def shared_dir(self) -> Path:
        """The one folder the host and every node see alike (all else of a node's ``/tmp`` and
        ``/root`` is its own): the lab's stand-in for a cluster file system, where node-local
        runs find the plan and inventory and leave their bundles."""
        return self.run_dir / "shared"

    @property
    def authorized_keys(self) -> Path:
        return self.run_dir / "authorized_keys"

    @property
    def up_marker(self) -> Path:
        """Written last by ``up``: the spec of a lab that finished coming up."""
        return self.run_dir / "up.json"

    def node_dir(self, node: str) -> Path:
        return self.run_dir / "nodes" / node

    def upper_root(self, node: str) -> Path:
        """Mirror of ``/`` holding the node's overlay upper layers (``etc``, ``usr/local``, ...)."""
        return self.node_dir(node) / "upper"

    def work_dir(self, node: str, index: int) -> Path:
        return self.node_dir(node) / "work" / str(index)

    def sshd_config(self, node: str) -> Path:
        return self.node_dir(node) / "sshd_config"

    def host_key(self, node: str) -> Path:
        return self.node_dir(node) / "ssh_host_ed25519_key"

    def process_file(self, node: str, role: str) -> Path:
        """``{"pid": ..., "start": ...}`` of the node's ``holder`` or ``sshd`` process."""
        return self.node_dir(node) / f"{role}.json"

    def log(self, node: str, role: str) -> Path:
        return self.node_dir(node) / f"{role}.log"
