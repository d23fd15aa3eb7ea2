"""A real Slurm (Debian's slurmctld, slurmd, munge) on a lab: slurmctld and munged on this machine,
one slurmd inside each lab node's namespaces, all private to one test session.

Everything lives under /run/ascendprep-test-slurm-<pid>: its own munge key and socket (slurm.conf
``AuthInfo=socket=``), ports picked free, state and logs. slurmd needs a cgroup filesystem at
/sys/fs/cgroup; a lab node's /sys is its own, so each node gets a tmpfs there with an empty named
cgroup hierarchy (no controllers: nothing of the machine's cgroups is touched) and Slurm runs
without cgroup plugins (proctrack/linuxproc, task/none). Nothing is left behind: the daemons are
stopped and the folder removed on exit.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List

from ascendprep.lab.lab import Lab

TOOLS = ("slurmctld", "slurmd", "srun", "salloc", "sinfo", "scancel", "munged")
SLURMD_LOG = "/var/tmp/ascendprep-test-slurmd.log"
SLURMD_PID = "/var/tmp/ascendprep-test-slurmd.pid"


def missing_tools() -> List[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


class SlurmOnLab:
    """``with SlurmOnLab(lab) as slurm: job = slurm.allocate()`` then srun into ``job``."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.folder = Path(f"/run/ascendprep-test-slurm-{os.getpid()}")
        self.conf = self.folder / "slurm.conf"
        self.env: Dict[str, str] = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._pids: List[int] = []

    # -- up ----------------------------------------------------------------------------------------

    def __enter__(self) -> "SlurmOnLab":
        try:
            self._up()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _up(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        (self.folder / "state").mkdir(parents=True, mode=0o700)
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        munge_socket = self.folder / "munge.socket"
        subprocess.run(
            [
                "munged",
                "--force",
                f"--key-file={key}",
                f"--socket={munge_socket}",
                f"--pid-file={self.folder / 'munged.pid'}",
                f"--log-file={self.folder / 'munged.log'}",
                f"--seed-file={self.folder / 'munged.seed'}",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        self._pids.append(int((self.folder / "munged.pid").read_text()))
        nodes = "\n".join(
            f"NodeName={n.name} NodeAddr={n.mgmt_ip} CPUs={os.cpu_count() or 1} RealMemory=1000 State=UNKNOWN"
            for n in self.lab.nodes
        )
        self.conf.write_text(f"""\
ClusterName=ascendpreptest
SlurmctldHost={socket.gethostname().split(".")[0]}({self.lab.spec.bridge_ip})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={self.folder / "state"}
SlurmctldPidFile={self.folder / "slurmctld.pid"}
SlurmctldLogFile={self.folder / "slurmctld.log"}
SlurmdSpoolDir=/var/tmp/ascendprep-test-slurmd
SlurmdPidFile={SLURMD_PID}
SlurmdLogFile={SLURMD_LOG}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
{nodes}
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        subprocess.run(["slurmctld", "-f", str(self.conf)], check=True, capture_output=True, timeout=30, env=self.env)
        self._pids.append(self._read_pid(self.folder / "slurmctld.pid"))
        for node in self.lab.nodes:
            script = (
                "mount -t tmpfs ascendprep-test-nocgroup /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/systemd && "
                "mount -t cgroup -o none,name=ascendpreptest ascendpreptest /sys/fs/cgroup/systemd && "
                f"SLURM_CONF={self.conf} slurmd -f {self.conf} -N {node.name}"
            )
            self.lab.run_in_node(node.name, ["sh", "-c", script])
        self._wait_idle()

    @staticmethod
    def _read_pid(path: Path, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists() and path.read_text().strip().isdigit():
                return int(path.read_text())
            time.sleep(0.1)
        raise RuntimeError(f"{path} was not written")

    def _wait_idle(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        states = ""
        while time.monotonic() < deadline:
            states = subprocess.run(
                ["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, env=self.env
            ).stdout
            if states.count("idle") == len(self.lab.nodes):
                return
            time.sleep(0.5)
        raise RuntimeError(f"slurmd did not come up on every lab node: {states!r}; {self.log('slurmctld')}")

    def allocate(self) -> str:
        """An allocation of every lab node (``salloc --no-shell``); its job id."""
        done = subprocess.run(
            ["salloc", f"--nodes={len(self.lab.nodes)}", "--no-shell"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )
        match = re.search(r"Granted job allocation (\d+)", done.stderr + done.stdout)
        if match is None:
            raise RuntimeError(f"salloc: {done.stderr}")
        return match.group(1)

    def steps_launched(self, node: str) -> List[str]:
        """``StepId=J.S`` of every step this node's slurmd launched a task of."""
        log = self.lab.run_in_node(node, ["cat", SLURMD_LOG], check=False).stdout
        return re.findall(r"launch task (StepId=\S+)", log)

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text()[-2000:] if path.exists() else ""

    # -- down --------------------------------------------------------------------------------------

    def __exit__(self, *exc_info: object) -> None:
        for node in self.lab.nodes:
            pid = self.lab.run_in_node(
                node.name, ["sh", "-c", f"cat {SLURMD_PID} 2>/dev/null"], check=False
            ).stdout.strip()
            if pid.isdigit():
                _stop(int(pid))
        for pid in reversed(self._pids):
            _stop(pid)
        shutil.rmtree(self.folder, ignore_errors=True)


def _stop(pid: int, grace: float = 5.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return  # exited; its parent (not us: it daemonized) reaps it
        except FileNotFoundError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
