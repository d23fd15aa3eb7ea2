"""A node's private filesystem: overlays over ``/etc``, ``/usr/local`` and the Python purelib.

Every node sees the host's files as its lower layer and writes into its own upper layer on the
lab tmpfs, so ``/etc/hccn.conf`` or ``/usr/local/Ascend`` on node1 is node1's alone. The upper
layers are filled *before* the overlays are mounted (writing under a mounted overlay is
undefined behaviour); later changes go through the node's mount namespace instead.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ascendprep.lab.hostpython import HostPython
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec, NodeSpec, Versions
from ascendprep.lab.system import LabError

#: Where the simulated tools look for "who am I" inside a node (lab contract).
NODE_FILE = Path("/etc/ascendprep-lab/node.json")
HCCN_CONF = Path("/etc/hccn.conf")
#: Host paths a fresh node must *not* inherit from the host: Ascend state, versions, tools.
HOST_ASCEND_PATHS = (
    Path("/etc/hccn.conf"),
    Path("/etc/Ascend"),
    Path("/etc/ascend_install.info"),
    Path("/etc/ascendprep-lab"),
    Path("/usr/local/Ascend"),
)
_UNSAFE_IN_MOUNT_OPTIONS = set(",:\\\n\t ")


@dataclass(frozen=True)
class Overlay:
    """One overlay mount: ``target`` seen through the node's ``upper`` layer."""

    target: Path
    upper: Path
    work: Path

    def mount_options(self) -> str:
        for path in (self.target, self.upper, self.work):
            if _UNSAFE_IN_MOUNT_OPTIONS & set(str(path)):
                raise LabError(f"cannot overlay {path}: the path holds a character mount options reserve")
        return f"lowerdir={self.target},upperdir={self.upper},workdir={self.work}"


def overlay_targets(purelib: Path) -> list[Path]:
    """``/etc``, ``/usr/local`` and purelib, unless purelib already lies under one of them."""
    targets = [Path("/etc"), Path("/usr/local")]
    if not any(purelib == t or t in purelib.parents for t in targets):
        targets.append(purelib)
    return targets


def node_overlays(paths: LabPaths, node: str, purelib: Path) -> list[Overlay]:
    upper_root = paths.upper_root(node)
    return [
        Overlay(target, upper_root / target.relative_to("/"), paths.work_dir(node, index))
        for index, target in enumerate(overlay_targets(purelib))
    ]


def holder_script(
    *, spec: LabSpec, node: NodeSpec, overlays: Sequence[Overlay], ip: str, mount: str, sleep: str
) -> str:
    """The POSIX sh run in a node's fresh namespaces: links up, overlays, hostname, then wait.

    The process ends as ``sleep infinity``: it holds the node's mount and UTS namespaces for
    sshd and for anything later started in the node (``nsenter -t <its pid>``).
    """
    q = shlex.quote
    lines = [
        "set -eu",
        f"{q(ip)} link set lo up",
        f"{q(ip)} addr add {q(f'{node.mgmt_ip}/{spec.network.prefixlen}')} dev eth0",
        f"{q(ip)} link set eth0 up",
    ]
    for overlay in overlays:
        lines.append(
            f"{q(mount)} -t overlay ascendprep-lab -o {q(overlay.mount_options())} {q(str(overlay.target))}"
        )
    # Like any real server, a node has its own /run/lock (apply's host lock lives there; a shared
    # one would serialise applies across the whole lab). /tmp stays shared: the ascendprep package
    # the simulated tools import may live there (a checkout under /tmp).
    lines += [
        f"if [ -d /run/lock ]; then {q(mount)} -t tmpfs -o mode=1777,size=8m ascendprep-lab /run/lock; fi",
    ]
    lines += [
        f"echo {q(node.name)} > /proc/sys/kernel/hostname",
        f"exec {q(sleep)} infinity",
    ]
    return "\n".join(lines) + "\n"


def node_identity(lab: str, node: str, state_dir: Path) -> dict[str, str]:
    """``/etc/ascendprep-lab/node.json`` (lab contract)."""
    return {"lab": lab, "node": node, "state_dir": str(state_dir), "hccn_conf": str(HCCN_CONF)}


def render_hosts(nodes: Iterable[NodeSpec]) -> str:
    """The node's /etc/hosts: every node's name resolves (gloo looks up its own hostname)."""
    lines = [
        "# managed by ascendprep lab",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
    ]
    lines += [f"{n.mgmt_ip}\t{n.name}" for n in nodes]
    return "\n".join(lines) + "\n"


def populate_upper(
    *,
    paths: LabPaths,
    spec: LabSpec,
    node: NodeSpec,
    python: HostPython,
    versions: Versions,
) -> None:
    """Write a fresh node's own files into its upper layers (before they are mounted)."""
    from ascendprep.lab.sim import cann, tools  # the simulator half of the lab

    upper_root = paths.upper_root(node.name)
    for overlay in node_overlays(paths, node.name, python.purelib):
        _mkdir_like(overlay.upper, overlay.target)
        overlay.work.mkdir(parents=True, exist_ok=True)
    _write(upper_root, NODE_FILE, json.dumps(node_identity(spec.name, node.name, paths.state_dir), indent=2) + "\n")
    _write(upper_root, Path("/etc/hostname"), node.name + "\n")
    from ascendprep.lab.hostsfile import render_node_hosts  # imports this module

    _write(upper_root, Path("/etc/hosts"), render_node_hosts(spec.node_list(), node.name, spec.hostnames))
    cann.install_cann_tree(upper_root, versions.cann_tree(), platform.machine())
    purelib_upper = upper_root / python.purelib.relative_to("/")
    cann.install_torch_npu_metadata(purelib_upper, versions.torch_npu, python.torch or versions.torch_npu)
    tools.install_node_tools(upper_root, python.executable, str(python.package_root))
    host_torch_npu = sorted(python.purelib.glob("torch_npu*"))
    mask_host_paths(upper_root, [*HOST_ASCEND_PATHS, *host_torch_npu])


def mask_host_paths(upper_root: Path, host_paths: Iterable[Path]) -> None:
    """Hide host files the node must not inherit: whiteouts and opaque dirs in the upper layer.

    A path the node has its own version of stays (a directory becomes opaque, so none of the
    host's entries show through); a path the node lacks gets an overlayfs whiteout.
    """
    for host_path in host_paths:
        if not os.path.lexists(host_path):
            continue
        mine = upper_root / host_path.relative_to("/")
        if os.path.lexists(mine):
            if mine.is_dir() and not mine.is_symlink():
                os.setxattr(mine, "trusted.overlay.opaque", b"y")
            continue
        mine.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(mine, stat.S_IFCHR, os.makedev(0, 0))


def _mkdir_like(upper: Path, target: Path) -> None:
    """Create an overlay's upper root with the target's mode and owner (the merged dir's look)."""
    upper.mkdir(parents=True, exist_ok=True)
    info = target.stat()
    os.chmod(upper, stat.S_IMODE(info.st_mode))
    os.chown(upper, info.st_uid, info.st_gid)


def _write(upper_root: Path, path: Path, text: str) -> None:
    target = upper_root / path.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
