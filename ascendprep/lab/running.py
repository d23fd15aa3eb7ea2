"""A running lab's nodes: what fault injection needs of a lab (its nodes, their namespaces, sshd).

:class:`~ascendprep.lab.lab.Lab` adds the life cycle, faults and status on top; the fault modules
take a :class:`RunningLab`, so they need not import the class that imports them.
"""

from __future__ import annotations

import json
import subprocess
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ascendprep.lab import nodeproc
from ascendprep.lab.hostpython import HostPython, host_python
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec, NodeSpec
from ascendprep.lab.sshd import ssh_argv
from ascendprep.lab.system import LabError, ProcessRef, is_running, stop_processes


class RunningLab:
    """A lab that is up: its spec, its paths, and the ways into its nodes."""

    def __init__(self, spec: LabSpec, paths: LabPaths, *, created: bool = False):
        self.spec = spec
        self.paths = paths
        #: True when :meth:`Lab.up` built it, False when it was already up.
        self.created = created

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

    def ssh(
        self, node: str, command: Union[str, Sequence[str]], timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on ``node`` over real SSH; never raises on a non-zero exit."""
        return subprocess.run(
            self.ssh_argv(node, command), capture_output=True, text=True, timeout=timeout, check=False
        )

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
        bootstrap = (
            "import sys; sys.path.insert(0, sys.argv[1]); from ascendprep.lab.nodeops import main; sys.exit(main())"
        )
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
