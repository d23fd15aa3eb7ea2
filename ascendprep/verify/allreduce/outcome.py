"""The result of ``verify --allreduce``: per-node reports, the verdict, and the findings.

Pure: :func:`build_findings` turns what the launcher learnt into :class:`Finding` objects with
stable ids, so verify's table, JSON and JUnit show them like any other check. Only problems
become findings (verify counts every finding as a failed check); a clean run has none.

Ids: ``allreduce.options`` (bad options), ``allreduce.node_failed`` (a node could not run, or is
the origin of the failure), then one per gate of :mod:`ascendprep.verify.allreduce.gates` that said
no: ``allreduce.connectivity`` (not every rank could join and complete the all-reduce; a rank
that fails during the size sweep counts here), ``allreduce.wrong_elements``, ``allreduce.busbw``
(the floor), ``allreduce.rank_table``, ``allreduce.train``, ``allreduce.straggler`` (warning), and ``allreduce.verdict``
(any other reason the verdict failed, e.g. injected self-test faults).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ascendprep.base.findings import Finding, Severity
from ascendprep.verify.allreduce.bisection import BisectReport
from ascendprep.verify.allreduce.diagnosis import CULPRIT_KINDS, NodeProblem
from ascendprep.verify.allreduce.gates import BUSBW, CONNECTIVITY, RANK_TABLE, WRONG_ELEMENTS
from ascendprep.verify.allreduce.options import RunSettings
from ascendprep.verify.allreduce.results import AllreduceVerdict
from ascendprep.verify.allreduce.sizes import format_size

OUTCOME_SCHEMA_VERSION = 1

FIX_CONNECTIVITY = (
    "see the node findings and log lines: check the management network between nodes, "
    "HCCL_IF_IP / HCCL_SOCKET_IFNAME, and that every node runs the same software"
)
FIX_WRONG = (
    "a data-corruption fault: check NPU health (npu-smi info), device links (hccn_tool -link -g) and "
    "that every node runs the same CANN / driver / torch_npu"
)
FIX_BUSBW = (
    "find the slow link: run again with --bisect, and check link speed, RoCE settings (PFC/ECN) "
    "and the switch ports of the nodes involved"
)
FIX_STRAGGLER = "check that node's load (other jobs, CPU frequency), its NPUs' health and its network link"


@dataclass(frozen=True)
class NodeReport:
    """One node's part of a run."""

    node: str
    host: str
    node_rank: int
    nproc: int
    status: str  # ok | failed | not_started | suspect
    problem: Optional[NodeProblem] = None
    exit_code: Optional[int] = None
    timed_out: bool = False
    killed: int = 0
    ranks_reported: int = 0
    seconds: float = 0.0
    log_tail: str = ""
    #: (inventory address, interface) the node's ranks were bound to, or why they were not.
    bound: Optional[Tuple[str, str]] = None
    unbound_reason: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "node": self.node,
            "host": self.host,
            "node_rank": self.node_rank,
            "nproc": self.nproc,
            "status": self.status,
            "problem": None
            if self.problem is None
            else {"kind": self.problem.kind, "message": self.problem.message, "fix": self.problem.fix},
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "leftover_processes_killed": self.killed,
            "ranks_reported": self.ranks_reported,
            "seconds": round(self.seconds, 3),
            "log_tail": self.log_tail,
            "bound": None if self.bound is None else {"address": self.bound[0], "interface": self.bound[1]},
            "unbound_reason": self.unbound_reason,
        }


@dataclass
class AllreduceOutcome:
    """What ``run_allreduce`` returns; verify reads ``findings`` and ``to_dict()``."""

    run_id: str
    stage: str  # options | preflight | launch | done: how far the run got
    settings: Optional[RunSettings]
    nodes: List[NodeReport] = field(default_factory=list)
    verdict: Optional[AllreduceVerdict] = None
    findings: List[Finding] = field(default_factory=list)
    master: Optional[str] = None
    master_port: Optional[int] = None
    seconds: float = 0.0
    launch_seconds: Optional[float] = None
    bisect: Optional[BisectReport] = None
    problems: List[str] = field(default_factory=list)
    #: Per worker phase, the slowest rank's seconds (setup is mostly the torch import).
    phase_seconds: Dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return (
            self.stage == "done"
            and self.verdict is not None
            and self.verdict.passed
            and not any(f.severity is Severity.ERROR for f in self.findings)
        )

    def to_dict(self) -> Dict[str, Any]:
        return {
            "schema_version": OUTCOME_SCHEMA_VERSION,
            "run_id": self.run_id,
            "passed": self.passed,
            "stage": self.stage,
            "problems": list(self.problems),
            "settings": None if self.settings is None else self.settings.to_dict(),
            "master": self.master,
            "master_port": self.master_port,
            "seconds": round(self.seconds, 3),
            "launch_seconds": None if self.launch_seconds is None else round(self.launch_seconds, 3),
            "phase_seconds": {k: round(v, 3) for k, v in self.phase_seconds.items()},
            "nodes": [n.to_dict() for n in self.nodes],
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "bisect": None if self.bisect is None else self.bisect.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }


def brief(reasons: Sequence[str], count: int = 3, width: int = 200) -> str:
    """The first few reasons, each cut to ``width``: a finding's message is one screen line or so.

    The full list stays in the finding's evidence and in the verdict.
    """
    shown = [r if len(r) <= width else r[: width - 1] + "…" for r in reasons[:count]]
    more = len(reasons) - count
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


FIX_RANK_TABLE = (
    "run 'ascendprep plan' and 'apply' so that the rank table follows the inventory's node order and "
    "devices, and launch with as many processes per node as the table has devices (verify's "
    "job.rank_table and superpod.rank_table check the file itself)"
)


def option_findings(problems: Sequence[str]) -> List[Finding]:
    return [
        Finding("allreduce.options", Severity.ERROR, problem, "correct the option and run again")
        for problem in problems
    ]


def build_findings(
    *,
    verdict: Optional[AllreduceVerdict],
    problems: Mapping[str, NodeProblem],
    nodes: Sequence[str],
    bisect: Optional[BisectReport] = None,
) -> List[Finding]:
    """Every problem of a run as findings, node-specific ones first."""
    findings: List[Finding] = []
    for node in nodes:
        problem = problems.get(node)
        if problem is None:
            continue
        culprit = problem.kind in CULPRIT_KINDS
        message = problem.text if culprit else f"{node} is the likely origin: {problem.message}"
        findings.append(
            Finding(
                "allreduce.node_failed",
                Severity.ERROR,
                message,
                problem.fix,
                node=node,
                evidence={"kind": problem.kind, "log_tail": problem.log_tail},
            )
        )
    if verdict is None:
        if findings:
            findings.append(
                Finding(
                    "allreduce.connectivity",
                    Severity.ERROR,
                    f"the all-reduce did not run: {len(findings)} node(s) cannot launch it",
                    "fix the node findings above, then run verify --allreduce again",
                )
            )
        return findings + _bisect_findings(bisect)
    reasons = list(verdict.reasons)
    connectivity = verdict.gate_named(CONNECTIVITY)
    if not connectivity.ok:
        findings.append(
            Finding(
                "allreduce.connectivity",
                Severity.ERROR,
                "not every rank could join and complete the all-reduce: " + brief(connectivity.reasons),
                FIX_CONNECTIVITY,
                evidence={
                    "reasons": list(connectivity.reasons),
                    "missing_ranks": list(verdict.missing_ranks),
                    "missing_nodes": list(verdict.missing_nodes),
                },
            )
        )
    wrong = [row for row in verdict.sizes if row.wrong_elements]
    correctness = verdict.gate_named(WRONG_ELEMENTS)
    if wrong:
        total = sum(row.wrong_elements for row in wrong)
        findings.append(
            Finding(
                "allreduce.wrong_elements",
                Severity.ERROR,
                f"{total} wrong elements in all-reduce results at sizes "
                + ", ".join(format_size(row.bytes) for row in wrong),
                FIX_WRONG,
                evidence={"sizes": {format_size(r.bytes): r.wrong_elements for r in wrong}},
            )
        )
    elif not correctness.ok and connectivity.ok:
        findings.append(
            Finding(
                "allreduce.wrong_elements",
                Severity.ERROR,
                brief(correctness.reasons),
                FIX_WRONG,
                evidence={"reasons": list(correctness.reasons)},
            )
        )
    if not verdict.gate_named(BUSBW).ok and verdict.busbw_floor is not None:
        findings.append(
            Finding(
                "allreduce.busbw",
                Severity.ERROR,
                verdict.busbw_floor.reason,
                FIX_BUSBW,
                evidence=dict(vars(verdict.busbw_floor)),
            )
        )
    table = verdict.gate_named(RANK_TABLE)
    if not table.ok:
        findings.append(
            Finding(
                "allreduce.rank_table",
                Severity.ERROR,
                "the ranks did not all find themselves in the rank table (torch_npu would drop it "
                "silently or build the wrong ring): " + brief(table.reasons),
                FIX_RANK_TABLE,
                evidence={"reasons": list(table.reasons), "figure": table.figure},
            )
        )
    for train in verdict.train:
        if train.status == "fail":
            findings.append(
                Finding(
                    "allreduce.train",
                    Severity.ERROR,
                    f"{train.mode} training failed: {train.reason}",
                    "see the ranks' reasons; DDP/FSDP failures with a working all-reduce point "
                    "at torch / torch_npu versions",
                    evidence={"mode": train.mode},
                )
            )
        elif train.status == "skipped":
            findings.append(
                Finding(
                    "allreduce.train",
                    Severity.WARNING,
                    f"{train.mode} training was skipped: {train.reason}",
                    "",
                    evidence={"mode": train.mode},
                )
            )
    for straggler in verdict.stragglers:
        findings.append(
            Finding(
                "allreduce.straggler",
                Severity.WARNING,
                f"{straggler.node}: rank {straggler.rank} takes up to {straggler.worst_ratio:.1f}x "
                f"the median time at {', '.join(format_size(b) for b in straggler.sizes)}",
                FIX_STRAGGLER,
                node=straggler.node,
                evidence={
                    "rank": straggler.rank,
                    "sizes": list(straggler.sizes),
                    "worst_ratio": straggler.worst_ratio,
                    "source": "timing",
                },
            )
        )
    findings += _bisect_findings(bisect)
    if not verdict.passed and not any(f.severity is Severity.ERROR for f in findings):
        findings.append(
            Finding(
                "allreduce.verdict",
                Severity.ERROR,
                brief(reasons) or "the all-reduce failed",
                "see the reasons",
                evidence={"reasons": reasons},
            )
        )
    return findings


def _bisect_findings(bisect: Optional[BisectReport]) -> List[Finding]:
    if bisect is None:
        return []
    findings = []
    for node, why in bisect.suspects.items():
        failed = node in bisect.broken
        findings.append(
            Finding(
                "allreduce.node_failed" if failed else "allreduce.straggler",
                Severity.ERROR if failed else Severity.WARNING,
                f"{node} {'breaks' if failed else 'slows'} the all-reduce: {why}",
                FIX_CONNECTIVITY if failed else FIX_STRAGGLER,
                node=node,
                evidence={"source": "bisect", "note": bisect.note},
            )
        )
    return findings
