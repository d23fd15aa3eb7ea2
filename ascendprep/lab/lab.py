"""``Lab``: the Python handle on a virtual Ascend cluster (what the CLI and the tests use).

lab = Lab.up(LabSpec(nodes=4, product="atlas-a2"))
subprocess.run(lab.ssh_argv("node1", ["hccn_tool", "-i", "0", "-ip", "-g"]))
lab.fault("node2", "link-down", npu=3)
lab.heal()
lab.down()
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ascendprep.lab import faults, lifecycle, nodeproc
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.running import RunningLab
from ascendprep.lab.spec import LabSpec, NodeSpec
from ascendprep.lab.system import LabError

STATUS_SCHEMA_VERSION = 1


class LabNotUp(LabError):
    """The named lab does not exist (or never finished coming up)."""


class Lab(RunningLab):
    """A lab that is up. Get one from :meth:`up` or :meth:`open`."""

    # --- life cycle -------------------------------------------------------------------------

    @classmethod
    def up(
        cls,
        spec: LabSpec = LabSpec(),
        *,
        paths: Optional[LabPaths] = None,
        progress: Callable[[str], None] = lifecycle.quiet,
    ) -> "Lab":
        """Bring the lab up (idempotent: an identical lab that is already up is reused)."""
        spec = spec.validated()
        paths = paths or LabPaths(spec.name)
        created = lifecycle.bring_up(spec, paths, progress)
        return cls(spec, paths, created=created)

    @classmethod
    def open(cls, name: str = "lab", *, paths: Optional[LabPaths] = None) -> "Lab":
        paths = paths or LabPaths(name)
        spec = lifecycle.read_up_marker(paths)
        if spec is None:
            raise LabNotUp(f"lab '{name}' is not up (start it with: sudo ascendprep lab up --name {name})")
        return cls(spec, paths)

    def down(self, progress: Callable[[str], None] = lifecycle.quiet) -> None:
        lifecycle.tear_down(self.paths, progress)

    # --- faults -----------------------------------------------------------------------------

    def fault(
        self,
        node: str,
        kind: str,
        *,
        npu: Optional[int] = None,
        rate: Optional[str] = None,
        version: Optional[str] = None,
        size: Optional[str] = None,
        port: Optional[int] = None,
        recover_s: Optional[float] = None,
    ) -> dict[str, Any]:
        """Inject fault ``kind`` (see :data:`ascendprep.lab.faults.FAULT_KINDS`) on ``node``."""
        return faults.inject(
            self, node, kind, npu=npu, rate=rate, version=version, size=size, port=port, recover_s=recover_s
        )

    def heal(self, node: Optional[str] = None, kind: Optional[str] = None) -> list[dict[str, Any]]:
        """Undo faults: all, or those of one node and/or one kind. Returns what was healed."""
        return faults.heal(self, node, kind)

    def faults(self) -> list[dict[str, Any]]:
        return faults.active_faults(self)

    # --- status -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What ``lab status --format json`` prints (``schema_version`` 1)."""
        return {
            "schema_version": STATUS_SCHEMA_VERSION,
            "name": self.name,
            "up": True,
            "product": self.spec.product,
            "npus_per_node": self.nodes[0].npus,
            "subnet": self.spec.subnet,
            "inventory": str(self.inventory_path),
            "key": str(self.key_path),
            "known_hosts": str(self.known_hosts_path),
            "state_dir": str(self.state_dir),
            "shared_dir": str(self.shared_dir),
            "versions": self.spec.to_dict()["versions"],
            "nodes": [
                {
                    "name": node.name,
                    "mgmt_ip": node.mgmt_ip,
                    "netns": node.netns,
                    "npus": node.npus,
                    "sshd_running": self._sshd_serving(node),
                }
                for node in self.nodes
            ],
            "faults": self.faults(),
        }

    def _sshd_serving(self, node: NodeSpec) -> bool:
        return self.sshd_process(node.name) is not None and nodeproc.port_open(node.mgmt_ip, 22)


def not_up_status(name: str) -> dict[str, Any]:
    return {"schema_version": STATUS_SCHEMA_VERSION, "name": name, "up": False, "nodes": [], "faults": []}
