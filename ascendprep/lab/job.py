"""``ascendprep lab job``: a training-like job on the lab's nodes that fails as real jobs fail.

The job is the simulator's (:mod:`ascendprep.lab.sim.joblogs`): one rank per NPU, whose CANN and
HCCL layer leaves plogs and device logs under each node's CANN log root (``/root/ascend/log``,
CANN's default ``~/ascend/log`` for root) and its console lines in ``/root/jobs/<job>/rank-<N>.txt``,
in the documented formats. No process trains: the logs are what a run of that length would have
left, written at once.

A fault that shows in the node's state as well is put in force with the lab's own faults, so
that the NPU state ``collect`` reads agrees with the logs (``lab heal`` undoes it):

* ``port-down``: ``link-down`` on that NPU (the port's link history records the drop);
* ``tls-mismatch``: ``tls-mismatch`` on that NPU;
* ``hbm-ecc``: ``npu-critical`` on that NPU (npu-smi's health: Critical);
* ``port-taken``: ``port-listener`` on HCCL's port of that NPU (60000 + NPU) on that node.

``rank-killed``, ``wrong-if-ip``, ``stale-ranktable`` and ``npu-oom`` leave no trace in the NPU
state, as on a real node: only the logs tell.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ascendprep.lab import faults as lab_faults
from ascendprep.lab.sim import state as sim_state
from ascendprep.lab.sim.joblogs import BASE_PORT, JobSpecError, Rank, parse_fault, render_job
from ascendprep.lab.system import LabError

if TYPE_CHECKING:
    from ascendprep.lab.running import RunningLab

#: Where the job's files go inside each node.
LOG_ROOT = "/root/ascend/log"
CONSOLE_ROOT = "/root/jobs"
#: The lab fault that puts a job fault in the node's state, when there is one.
STATE_FAULTS = {
    "port-down": "link-down",
    "tls-mismatch": "tls-mismatch",
    "hbm-ecc": "npu-critical",
    "port-taken": "port-listener",
}
_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
#: How long before now the job started (its faults strike 20 minutes in, its timeouts 10 later).
STARTED_AGO_S = 3600


def ranks_of(lab: "RunningLab") -> list[Rank]:
    """One rank per NPU, in node order; each NPU's device IP as its port has it now (or, on a
    lab not yet applied, ``192.168.<100+npu>.<10+node index>``)."""
    devices = sim_state.read_all_nodes(lab.state_dir)
    ranks = []
    for node in lab.nodes:
        doc = devices.get(node.name, {})
        for npu in range(node.npus):
            known = doc.get("devices", [])[npu].get("ip") if npu < len(doc.get("devices", [])) else None
            ip = known or f"192.168.{100 + npu}.{10 + node.index}"
            rank = len(ranks)
            ranks.append(Rank(rank, node.name, node.mgmt_ip, npu, ip, 31000 + rank * 7))
    return ranks


def run_job(lab: "RunningLab", job: str, fault_texts: Sequence[str], now: Optional[float] = None) -> dict[str, Any]:
    """Write the job's logs on every node, put its faults in force; what was done (for ``--format json``)."""
    if not _JOB_NAME.match(job):
        raise LabError(f"--job {job!r}: letters, digits, '-' and '_', at most 64")
    try:
        faults = [parse_fault(text, [(n.name, n.npus) for n in lab.nodes]) for text in fault_texts]
    except JobSpecError as exc:
        raise LabError(str(exc)) from None
    ranks = ranks_of(lab)
    by_place = {(r.node, r.npu): r for r in ranks}
    start = (now if now is not None else time.time()) - STARTED_AGO_S
    tls_on = {by_place[(f.node, f.npu)].rank: 1 for f in faults if f.kind == "tls-mismatch"}
    files = render_job(job, ranks, faults, start, tls_on)
    for fault in faults:
        kind = STATE_FAULTS.get(fault.kind)
        if kind == "port-listener":
            lab_faults.inject(lab, fault.node, kind, port=BASE_PORT + fault.npu)
        elif kind is not None:
            lab_faults.inject(lab, fault.node, kind, npu=fault.npu)
    written = 0
    for node, tree in files.items():
        paths = {}
        for relative, text in tree.items():
            folder, _, rest = relative.partition("/")
            base = LOG_ROOT if folder == "log" else f"{CONSOLE_ROOT}/{job}"
            paths[f"{base}/{rest}"] = text
        written += lab.node_op(node, {"op": "write-tree", "files": paths})["written"]
    return {
        "job": job,
        "ranks": len(ranks),
        "log_root": LOG_ROOT,
        "console_glob": f"{CONSOLE_ROOT}/{job}/rank-*.txt",
        "files": written,
        "faults": [
            {
                "kind": f.kind,
                "node": f.node,
                "npu": f.npu,
                "rank": by_place[(f.node, f.npu)].rank,
                "device_ip": by_place[(f.node, f.npu)].device_ip,
                "pid": by_place[(f.node, f.npu)].pid,
                "node_state": STATE_FAULTS.get(f.kind),
            }
            for f in faults
        ],
    }
