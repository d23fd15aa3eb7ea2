"""A node's private filesystem: the lab node is the host's guest and never writes its files.

- Overlays over ``/etc``, ``/usr/local``, ``/opt`` and the Python purelib: every node sees the
  host's files as its lower layer and writes into its own upper layer on the lab tmpfs, so
  ``/etc/hccn.conf`` or ``/usr/local/Ascend`` on node1 is node1's alone. The upper layers are
  filled *before* the overlays are mounted (writing under a mounted overlay is undefined
  behaviour); later changes go through the node's mount namespace instead.
- Fresh, empty tmpfs over ``/root``, ``/home``, ``/tmp``, ``/var/tmp`` and ``/run/lock``, as on a
  server of its own: a node's ``/root/.ssh/authorized_keys`` is not the host's, and what a node
  leaves in ``/tmp`` (an all-reduce's run directory, an upload) no other node and not the host
  sees, so a test cannot pass on a shared ``/tmp`` that real servers never have.
- What the nodes need of the host to run ascendprep's interpreter (a venv or pyenv prefix, a
  checkout holding the package, also where they lie under ``/tmp``) is bound back *read-only*
  where it lay under a private root. Nothing else of the host's ``/tmp`` is: the nodes talk to
  each other over the network only (torchrun's rendezvous and gloo are TCP, sshd's sockets live
  in each node), and the simulator's shared state lies under ``/run/ascendprep-lab``.

Still shared with the host: ``/usr`` outside ``/usr/local``, ``/var`` outside ``/var/tmp``,
``/srv``, ``/mnt`` and the lab's own directories under ``/run/ascendprep-lab`` and
``/var/lib/ascendprep/lab``; among them the lab's shared folder (:attr:`LabPaths.shared_dir`),
the stand-in for a cluster file system that node-local runs read plans from and write bundles to.
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
from ascendprep.lab.hostsfile import render_node_hosts
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
#: Host directories a node gets empty and its own (tmpfs), with their mode and size cap.
PRIVATE_DIRS = (
    (Path("/root"), "0700", "256m"),
    (Path("/home"), "0755", "64m"),
    (Path("/tmp"), "1777", "1g"),
    (Path("/var/tmp"), "1777", "256m"),
    (Path("/run/lock"), "1777", "8m"),
)


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
    """``/etc``, ``/usr/local``, ``/opt`` (where it exists) and purelib, unless it lies under one."""
    targets = [Path("/etc"), Path("/usr/local")]
    if Path("/opt").is_dir() and not Path("/opt").is_symlink():
        targets.append(Path("/opt"))
    if not any(_within(purelib, t) for t in targets):
        targets.append(purelib)
    return targets


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def private_dirs() -> list[tuple[Path, str, str]]:
    """The :data:`PRIVATE_DIRS` this host has (a missing one has nothing to hide)."""
    return [(path, mode, size) for path, mode, size in PRIVATE_DIRS if path.is_dir() and not path.is_symlink()]


def kept_dirs(runtime_dirs: Iterable[Path], private: Iterable[Path]) -> list[Path]:
    """Of the interpreter's directories, the outermost ones hidden by a private dir: bound back."""
    private = list(private)
    hidden = sorted({d for d in runtime_dirs if any(_within(d, root) and d != root for root in private)})
    return [d for d in hidden if not any(_within(d, other) and d != other for other in hidden)]


def private_dir_commands(*, runtime_dirs: Sequence[Path], stash: Path, mount: str) -> list[str]:
    """POSIX sh lines that give the node its private dirs and bind back what it needs read-only.

    A kept directory is first bound to ``stash/N`` (on the lab tmpfs, outside every private dir),
    then the tmpfs goes over its private root, then the stash is bound back at the original path
    and made read-only: the node runs the host's interpreter but cannot write into it.
    """
    q = shlex.quote
    private = private_dirs()
    kept = kept_dirs(runtime_dirs, [path for path, _, _ in private])
    lines: list[str] = []
    for index, path in enumerate(kept):
        lines += [
            f"mkdir -p {q(str(stash / str(index)))}",
            f"{q(mount)} --bind {q(str(path))} {q(str(stash / str(index)))}",
        ]
    for path, mode, size in private:
        lines.append(f"{q(mount)} -t tmpfs -o mode={mode},size={size} ascendprep-lab {q(str(path))}")
    for index, path in enumerate(kept):
        held = q(str(stash / str(index)))
        lines += [
            f"mkdir -p {q(str(path))}",
            f"{q(mount)} --bind {held} {q(str(path))}",
            f"{q(mount)} -o remount,bind,ro {q(str(path))}",
            f"umount {held}",
        ]
    return lines


def node_overlays(paths: LabPaths, node: str, purelib: Path) -> list[Overlay]:
    upper_root = paths.upper_root(node)
    return [
        Overlay(target, upper_root / target.relative_to("/"), paths.work_dir(node, index))
        for index, target in enumerate(overlay_targets(purelib))
    ]


def holder_script(
    *,
    spec: LabSpec,
    node: NodeSpec,
    overlays: Sequence[Overlay],
    ip: str,
    mount: str,
    sleep: str,
    runtime_dirs: Sequence[Path] = (),
    stash: Path = Path("/nonexistent"),
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
    # Private dirs first: an overlay lower dir may lie inside a kept (bound back) directory.
    lines += private_dir_commands(runtime_dirs=runtime_dirs, stash=stash, mount=mount)
    for overlay in overlays:
        lines.append(f"{q(mount)} -t overlay ascendprep-lab -o {q(overlay.mount_options())} {q(str(overlay.target))}")
    # apply's lock folder (root's, 0700): a tmpfs of the node's own, as on any real server (a
    # shared one would serialise applies across the whole lab). The empty mount point in the
    # shared /run is all the host sees.
    lines.append(
        f"mkdir -p -m 0700 /run/ascendprep && {q(mount)} -t tmpfs -o mode=0700,size=1m ascendprep-lab /run/ascendprep"
    )
    lines += [
        f"echo {q(node.name)} > /proc/sys/kernel/hostname",
        f"exec {q(sleep)} infinity",
    ]
    return "\n".join(lines) + "\n"


def node_identity(lab: str, node: str, state_dir: Path) -> dict[str, str]:
    """``/etc/ascendprep-lab/node.json`` (lab contract)."""
    return {"lab": lab, "node": node, "state_dir": str(state_dir), "hccn_conf": str(HCCN_CONF)}


def populate_upper(
    *,
    paths: LabPaths,
    spec: LabSpec,
    node: NodeSpec,
    python: HostPython,
    versions: Versions,
) -> None:
    """Write a fresh node's own files into its upper layers (before they are mounted)."""
    from ascendprep.lab.sim import cann, jobenv, tools, topo950  # the simulator half of the lab

    upper_root = paths.upper_root(node.name)
    for overlay in node_overlays(paths, node.name, python.purelib):
        _mkdir_like(overlay.upper, overlay.target)
        overlay.work.mkdir(parents=True, exist_ok=True)
    _write(upper_root, NODE_FILE, json.dumps(node_identity(spec.name, node.name, paths.state_dir), indent=2) + "\n")
    _write(upper_root, Path("/etc/hostname"), node.name + "\n")

    _write(upper_root, Path("/etc/hosts"), render_node_hosts(spec.node_list(), node.name, spec.hostnames))
    cann.install_cann_tree(upper_root, versions.cann_tree(), platform.machine())
    topo950.install_topology_files(upper_root, spec.product)  # Ascend 950 only: the driver's factory files
    purelib_upper = upper_root / python.purelib.relative_to("/")
    cann.install_torch_npu_metadata(purelib_upper, versions.torch_npu, python.torch or versions.torch_npu)
    jobenv.install_torch_npu_standin(upper_root)
    tools.install_node_tools(upper_root, python.executable, str(python.package_root), spec.tool_latency_ms)
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
