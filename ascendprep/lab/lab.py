"""``Lab``: the Python handle on a virtual Ascend cluster (what the CLI and the tests use).

    lab = Lab.up(LabSpec(nodes=4, product="atlas-a2"))
    subprocess.run(lab.ssh_argv("node1", ["hccn_tool", "-i", "0", "-ip", "-g"]))
    lab.fault("node2", "link-down", npu=3)
    lab.heal()
    lab.down()
"""

from __future__ import annotations

import json
import subprocess
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from ascendprep.lab import faults, lifecycle, nodeproc
from ascendprep.lab.hostpython import HostPython, host_python
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec, NodeSpec
from ascendprep.lab.sshd import ssh_argv
from ascendprep.lab.system import LabError, ProcessRef, is_running, stop_processes

STATUS_SCHEMA_VERSION = 1


class LabNotUp(LabError):
    """The named lab does not exist (or never finished coming up)."""


class Lab:
    """A lab that is up. Get one from :meth:`up` or :meth:`open`."""

    def __init__(self, spec: LabSpec, paths: LabPaths, *, created: bool = False):
        self.spec = spec
        self.paths = paths
        #: True when :meth:`up` built it, False when it was already up.
        self.created = created

    # --- life cycle -------------------------------------------------------------------------

    @classmethod
    def up(
        cls, spec: LabSpec = LabSpec(), *, paths: Optional[LabPaths] = None, progress: Callable[[str], None] = lifecycle.quiet
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

    # --- what the lab is --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @cached_property
    def nodes(self) -> list[NodeSpec]:
        return self.spec.node_list()

    def node(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise LabError(f"lab '{self.name}' has no node {name!r} (it has {self.nodes[0].name}..{self.nodes[-1].name})")

    @property
    def inventory_path(self) -> Path:
        return self.paths.inventory

    @property
    def key_path(self) -> Path:
        return self.paths.key

    @property
    def known_hosts_path(self) -> Path:
        return self.paths.known_hosts

    @property
    def state_dir(self) -> Path:
        return self.paths.state_dir

    @property
    def shared_dir(self) -> Path:
        """Seen alike by the host and every node (:attr:`LabPaths.shared_dir`)."""
        return self.paths.shared_dir

    @cached_property
    def python(self) -> HostPython:
        return host_python()

    # --- reaching nodes ---------------------------------------------------------------------

    def ssh_argv(self, node: str, command: Union[str, Sequence[str], None] = None) -> list[str]:
        """``ssh`` argv for ``node`` with the lab key and strict host-key checking."""
        return ssh_argv(self.node(node).mgmt_ip, key=self.key_path, known_hosts=self.known_hosts_path, command=command)

    def ssh(self, node: str, command: Union[str, Sequence[str]], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on ``node`` over real SSH; never raises on a non-zero exit."""
        return subprocess.run(self.ssh_argv(node, command), capture_output=True, text=True, timeout=timeout, check=False)

    def holder(self, node: str) -> ProcessRef:
        ref = nodeproc.load_process(self.paths, self.node(node).name, nodeproc.HOLDER)
        if ref is None:
            raise LabError(f"{node}: no namespace holder recorded; run lab down and up again")
        return ref

    def run_in_node(
        self, node: str, argv: Sequence[str], *, input: Optional[str] = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside ``node`` (its namespaces, as root) without going through SSH."""
        return nodeproc.run_in_node(self.holder(node), argv, input=input, check=check)

    def node_op(self, node: str, request: dict[str, Any]) -> dict[str, Any]:
        """One :mod:`ascendprep.lab.nodeops` operation inside ``node``."""
        bootstrap = "import sys; sys.path.insert(0, sys.argv[1]); from ascendprep.lab.nodeops import main; sys.exit(main())"
        result = self.run_in_node(
            node,
            [self.python.executable, "-c", bootstrap, str(self.python.package_root)],
            input=json.dumps(request),
            check=False,
        )
        try:
            reply = json.loads(result.stdout)
        except ValueError:
            raise LabError(f"{node}: {request['op']} failed: {result.stderr.strip()}") from None
        if result.returncode != 0 or "error" in reply:
            raise LabError(f"{node}: {request['op']} failed: {reply.get('error', result.stderr.strip())}")
        return reply

    # --- sshd -------------------------------------------------------------------------------

    def sshd_process(self, node: str) -> Optional[ProcessRef]:
        ref = nodeproc.load_process(self.paths, self.node(node).name, nodeproc.SSHD)
        return ref if ref is not None and is_running(ref) else None

    def stop_sshd(self, node: str) -> None:
        ref = self.sshd_process(node)
        if ref is not None:
            stop_processes([ref])

    def start_sshd(self, node: str) -> None:
        if self.sshd_process(node) is not None:
            return
        spec = self.node(node)
        ref = nodeproc.start_sshd(self.paths, spec, self.holder(node))
        nodeproc.wait_for_sshd(self.paths, spec, ref)

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
    ) -> dict[str, Any]:
        """Inject fault ``kind`` (see :data:`ascendprep.lab.faults.FAULT_KINDS`) on ``node``."""
        return faults.inject(self, node, kind, npu=npu, rate=rate, version=version, size=size, port=port)

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
