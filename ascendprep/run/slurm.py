"""``verify --allreduce --launcher slurm``: the all-reduce's steps started with ``srun`` inside
the current Slurm allocation instead of over SSH.

On a Slurm cluster the nodes of a job are the allocation's, and users may not SSH into them at
all (``pam_slurm_adopt``) or only into nodes of their own job. ``srun`` is then the way onto a
node. The all-reduce launcher (:mod:`ascendprep.run.allreduce`) only needs, per node, "run this
script with this stdin and give me its output" and "write this file": :class:`SrunTransport`
provides exactly the :class:`~ascendprep.remote.transport.Transport` interface, so the preflight,
the worker upload, torchrun, the cleanup and the verdicts are the ones the SSH launcher uses.

What is used of srun, as Slurm documents it (``man srun``):

- inside an allocation (``sbatch``/``salloc``) ``SLURM_JOB_ID`` names the job and
  ``SLURM_JOB_NODELIST`` (older: ``SLURM_NODELIST``) its nodes as a hostlist expression
  (``a2n[01-04,07],login1``); we refuse to run outside one rather than let srun make a new
  allocation;
- ``srun --jobid=ID --nodes=1 --ntasks=1 --nodelist=NODE --overlap --input=0 --quiet
  --kill-on-bad-exit=1 --export=PATH,HOME,... CMD...`` runs one task of CMD on NODE as a step of
  that job, with our stdin forwarded to it (task 0) and its exit code returned; ``--overlap``
  lets a step share the node's resources with the job's other steps (our preflight, launch and
  cleanup steps overlap each other, and the batch script itself holds the node);
- ``--export=NAME,...`` hands the step Slurm's ``SLURM_*`` variables and the named ones of
  srun's environment, nothing else (``ALL``, srun's default, would hand it everything ascendprep
  was started with). The names are :data:`STEP_ENV`, what an SSH login gives a script: so the
  step runs as the SSH launcher's script does (the node's ``set_env.sh`` chooses the HCCL and
  socket settings, not the caller's shell), and no secret reaches a node. srun itself is started
  without ascendprep's secrets (:data:`~ascendprep.remote.sudo.SECRET_ENV`), as every local child;
- on SIGTERM srun forwards the signal to the step's tasks; the step's processes are also killed
  by the cleanup script the launcher runs anyway.

An inventory node is found in the allocation by its name, then its host, then the host's short
name (``a2n01.cluster`` is Slurm's ``a2n01``); nodes not in the allocation are named before
anything is started. ``ASCENDPREP_SRUN`` names the srun to call (one word: a path, e.g. a site's
wrapper); by default ``srun`` on PATH.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ascendprep.base.hostrange import HostRangeError, expand
from ascendprep.base.limits import HOST_OUTPUT_CAP, SLURM_NODELIST_MAX_CHARS
from ascendprep.remote import shell
from ascendprep.remote.access import HostAccess
from ascendprep.remote.deadline import Deadline
from ascendprep.remote.errors import RemoteError
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.transport import FileChannelUnavailable
from ascendprep.run.fanout import Session

#: Launchers ``verify --allreduce --launcher`` knows.
LAUNCHERS = ("ssh", "slurm")
#: Environment variable with the srun command to use (one word: a path), default ``srun``.
SRUN_ENV = "ASCENDPREP_SRUN"
#: srun onto the node, SIGTERM, a grace and SIGKILL for a timed-out script's group.
KILL_TIMEOUT_S = 30.0
#: What a step gets of this process's environment (``srun --export``), where set: where programs
#: are, who the user is, the locale and time zone; Slurm adds its ``SLURM_*``. Never a secret.
STEP_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ")

log = logging.getLogger(__name__)


class SlurmError(ValueError):
    """Not inside an allocation, or the inventory's nodes are not the allocation's."""


@dataclass(frozen=True)
class Allocation:
    """The Slurm job verify runs in: its id and its nodes, in the order Slurm lists them."""

    job_id: str
    nodes: Tuple[str, ...]


def expand_nodelist(text: str) -> List[str]:
    """A Slurm hostlist expression (``a2n[01-04,07],login1``) as node names.

    Raises SlurmError for a malformed or oversized one.
    """
    if len(text) > SLURM_NODELIST_MAX_CHARS:
        raise SlurmError(f"SLURM_JOB_NODELIST is over {SLURM_NODELIST_MAX_CHARS} characters")
    pieces, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
    pieces.append(text[start:])
    names: List[str] = []
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        try:
            names += expand(piece)
        except HostRangeError as exc:
            raise SlurmError(f"SLURM_JOB_NODELIST {text!r}: {exc}") from None
    return names


def allocation_from_env(environ: Mapping[str, str]) -> Allocation:
    """The allocation the environment describes (srun's own contract); SlurmError outside one."""
    job_id = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")
    if not job_id:
        raise SlurmError(
            "not inside a Slurm allocation (no SLURM_JOB_ID): run verify from "
            "an sbatch script or an salloc shell that holds every inventory node"
        )
    if not job_id.isdigit():
        raise SlurmError(f"SLURM_JOB_ID {job_id!r} is not a job id")
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not nodelist:
        raise SlurmError("the allocation names no nodes (no SLURM_JOB_NODELIST)")
    return Allocation(job_id, tuple(expand_nodelist(nodelist)))


def slurm_node_names(nodes: Sequence[Tuple[str, str]], allocation: Allocation) -> Dict[str, str]:
    """{inventory node: Slurm node} for ``nodes`` as (name, host) pairs.

    A node is matched by its name, then its host, then the host's first label. Raises
    SlurmError naming every node the allocation does not hold.
    """
    held = set(allocation.nodes)
    found: Dict[str, str] = {}
    missing: List[str] = []
    for name, host in nodes:
        candidates = (name, host, host.split(".", 1)[0])
        match = next((c for c in candidates if c in held), None)
        if match is None:
            missing.append(name)
        else:
            found[name] = match
    if missing:
        raise SlurmError(
            f"job {allocation.job_id} does not hold inventory nodes {', '.join(missing)} "
            f"(its nodes: {', '.join(allocation.nodes[:8])}{' ...' if len(allocation.nodes) > 8 else ''}); "
            "allocate them all, e.g. sbatch --nodelist"
        )
    return found


def srun_prefix(job_id: str, node: str, srun: str = "srun", environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The srun words that run one task on ``node`` as an overlapping step of job ``job_id``.

    The step gets the :data:`STEP_ENV` variables ``environ`` (default: ours) has, by name only:
    their values are not on the command line either.
    """
    present = [name for name in STEP_ENV if name in (os.environ if environ is None else environ)]
    return [
        srun,
        f"--jobid={job_id}",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={node}",
        "--overlap",
        "--input=0",
        "--quiet",
        "--kill-on-bad-exit=1",
        f"--export={','.join(present) or 'NONE'}",
    ]


def srun_command() -> str:
    """The srun to call: ``ASCENDPREP_SRUN`` (a path) or ``srun`` on PATH; SlurmError when absent."""
    given = os.environ.get(SRUN_ENV, "srun")
    if not given or any(ch.isspace() for ch in given):
        raise SlurmError(f"{SRUN_ENV} must be one word (the srun to call), not {given!r}")
    found = shutil.which(given)
    if found is None:
        raise SlurmError(f"{given} not found (is Slurm's client installed on this node?)")
    return found


class SrunTransport(LocalTransport):
    """The Transport interface over ``srun`` onto one node of the allocation.

    Scripts run behind the same launcher as over SSH (``sh -s``, the script on stdin); srun
    itself runs here, in a process group of its own that a timeout kills (srun passes SIGTERM on
    to the step). Files travel inside a script, as over SSH to a host without SFTP.
    """

    def __init__(
        self,
        name: str,
        job_id: str,
        node: str,
        srun: str,
        command_timeout: Optional[float] = 120.0,
        output_cap: int = HOST_OUTPUT_CAP,
    ) -> None:
        super().__init__(name, command_timeout, output_cap)
        self.prefix = srun_prefix(job_id, node, srun)

    def __repr__(self) -> str:
        return f"SrunTransport({self.name!r}, {self.prefix[4]!r}, execs={self.exec_count})"

    def _exec(self, command: str, stdin: bytes, timeout: Optional[float], cap: int):  # type: ignore[no-untyped-def]
        wrapped = "exec " + " ".join(shlex.quote(word) for word in self.prefix) + " sh -c " + shlex.quote(command)
        return super()._exec(wrapped, stdin, timeout, cap)

    def _stop_group(self, pgid: int) -> None:
        """The timed-out step's srun was killed here; kill the script's group on the node too."""
        try:
            result = self._run_helper(shell.kill_group_script(pgid), KILL_TIMEOUT_S)
        except RemoteError as exc:
            log.warning("%s: could not kill timed-out process group %d: %s", self.name, pgid, exc)
            return
        if result.rc != 0 or result.timed_out:
            log.warning("%s: killing timed-out process group %d failed (rc %s)", self.name, pgid, result.rc)

    def _write_file(self, data: bytes, remote_path: str, mode: int) -> None:
        raise FileChannelUnavailable("srun has no file channel")

    def _upload_temp(self, data: bytes) -> str:
        raise FileChannelUnavailable("srun has no file channel")


@dataclass(frozen=True)
class SlurmLauncher:
    """Everything checked before the run: the allocation, where each node is in it, the srun."""

    allocation: Allocation
    node_names: Mapping[str, str]
    srun: str

    def session(self, hosts: Sequence[HostAccess], deadline: Optional[Deadline] = None) -> Session:
        """A Session whose transports are srun steps (one per node, all at once)."""

        def connect(access: HostAccess) -> SrunTransport:
            return SrunTransport(
                access.name, self.allocation.job_id, self.node_names[access.name], self.srun, access.command_timeout
            )

        return Session(hosts, forks=max(1, len(hosts)), transport_factory=connect, deadline=deadline)


def prepare_slurm(nodes: Sequence[Tuple[str, str]], environ: Mapping[str, str]) -> SlurmLauncher:
    """Check that we are in an allocation holding every node and that srun is there; SlurmError if not."""
    allocation = allocation_from_env(environ)
    names = slurm_node_names(nodes, allocation)
    return SlurmLauncher(allocation, names, srun_command())
