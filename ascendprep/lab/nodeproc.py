"""A node's processes: the namespace holder, its sshd, and commands run inside the node.

The *holder* (``ip netns exec NS unshare --mount --uts ... sh -c <script>``, ending as
``sleep infinity``) owns the node's private mount and UTS namespaces; sshd and every later
in-node command join them with ``nsenter -t <holder>``. Because the holder outlives sshd, the
``sshd-down`` fault can stop sshd and ``heal`` can start it again in the very same node.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional, Sequence

from ascendprep.lab import sshd
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import NodeSpec
from ascendprep.lab.system import LabError, ProcessRef, command_name, is_running, run, start_daemon, tool

HOLDER = "holder"
SSHD = "sshd"


def holder_argv(node: NodeSpec, script: str) -> list[str]:
    return [
        tool("ip"), "netns", "exec", node.netns,
        tool("unshare"), "--mount", "--uts", "--propagation", "private",
        "/bin/sh", "-c", script,
    ]  # fmt: skip


def sleep_path() -> str:
    path = shutil.which("sleep")
    if path is None:
        raise LabError("'sleep' not found (apt-get install coreutils)")
    return path


def start_holder(paths: LabPaths, node: NodeSpec, script: str, timeout: float = 20) -> ProcessRef:
    """Start the holder and wait until its script has mounted everything (it became ``sleep``)."""
    log = paths.log(node.name, HOLDER)
    ref = start_daemon(holder_argv(node, script), log)
    save_process(paths, node.name, HOLDER, ref)
    deadline = time.monotonic() + timeout
    while command_name(ref.pid) != "sleep":
        if not is_running(ref):
            raise LabError(f"{node.name}: setting up the node failed: {_tail(log)}")
        if time.monotonic() > deadline:
            raise LabError(f"{node.name}: node setup did not finish within {timeout:g}s: {_tail(log)}")
        time.sleep(0.005)
    return ref


def start_sshd(paths: LabPaths, node: NodeSpec, holder: ProcessRef) -> ProcessRef:
    """Start the node's sshd inside the holder's namespaces."""
    if not is_running(holder):
        raise LabError(f"{node.name}: the node's namespace holder (pid {holder.pid}) is gone")
    argv = in_node_argv(holder, sshd.sshd_argv(paths.sshd_config(node.name)))
    ref = start_daemon(argv, paths.log(node.name, SSHD))
    save_process(paths, node.name, SSHD, ref)
    return ref


def wait_for_sshd(paths: LabPaths, node: NodeSpec, ref: ProcessRef, timeout: float = 20) -> None:
    """Wait until sshd accepts connections on the node's management address."""
    deadline = time.monotonic() + timeout
    while True:
        if not is_running(ref):
            raise LabError(f"{node.name}: sshd exited: {_tail(paths.log(node.name, SSHD))}")
        if port_open(node.mgmt_ip, 22):
            return
        if time.monotonic() > deadline:
            raise LabError(f"{node.name}: sshd is not listening on {node.mgmt_ip}:22 after {timeout:g}s")
        time.sleep(0.01)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def in_node_argv(holder: ProcessRef, argv: Sequence[str]) -> list[str]:
    """``argv`` run inside the node: its network, mount (overlays) and UTS namespaces."""
    return [tool("nsenter"), "-t", str(holder.pid), "-m", "-u", "-n", "--", *argv]


def run_in_node(
    holder: ProcessRef, argv: Sequence[str], *, input: Optional[str] = None, timeout: float = 60, check: bool = True
) -> subprocess.CompletedProcess[str]:
    if not is_running(holder):
        raise LabError(f"the node's namespace holder (pid {holder.pid}) is gone; run lab down and up again")
    return run(in_node_argv(holder, argv), input=input, timeout=timeout, check=check)


def save_process(paths: LabPaths, node: str, role: str, ref: ProcessRef) -> None:
    paths.process_file(node, role).write_text(json.dumps(ref.to_dict()) + "\n")


def load_process(paths: LabPaths, node: str, role: str) -> Optional[ProcessRef]:
    try:
        data = json.loads(paths.process_file(node, role).read_text())
    except (OSError, ValueError):
        return None
    return ProcessRef(int(data["pid"]), int(data["start"]))


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"
