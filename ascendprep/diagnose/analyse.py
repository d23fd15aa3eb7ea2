"""A job's diagnosis: the root rank (rules.py), the faults the knowledge base matched, and which of
those faults nothing else in the job explains.

A fault is explained when another fault found in the same job "can cause" it (the knowledge
base's edges, as MindCluster's knowledge graph draws them: a link down causes error CQEs, which
cause notify-wait timeouts, which make torch_npu's HCCL call fail) and the two meet in place: a
fault seen on one node only is explained by a fault on that node, a fault seen on several nodes
(every rank waiting in the same collective) by one anywhere in the job. The faults nothing explains
are the root causes (in-degree 0); a catch-all entry (any CANN code, any torch_npu ERR code) is
one only when nothing specific was found. When no HCCL rule names the root rank, a root cause
that names its own place (an OOM kill of a rank's pid, an NPU's hardware event, a kernel event of
a node) decides it (rule ``fault-event``).

Pure: events in, a diagnosis out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ascendprep.diagnose.baseline import BaselineNote
from ascendprep.diagnose.job import Job, split_jobs
from ascendprep.diagnose.model import Cause, Culprit, Event, FileStats, LogFile, Skipped, Verdict
from ascendprep.diagnose.rules import Context, decide, erroring
from ascendprep.verify.checks.health_codes import decode
from ascendprep.verify.knowledge import KnowledgeBase


@dataclass
class JobDiagnosis:
    job: Job
    verdict: Optional[Verdict]
    verdicts: List[Verdict]
    suspects: List[Culprit]
    causes: List[Cause]
    #: The root cause at the root rank (or the first root cause when no rank was named).
    fault: Optional[Cause] = None
    #: What the ``--baseline`` verify run said about each culprit's node and NPU.
    baseline: List[BaselineNote] = field(default_factory=list)

    @property
    def root_causes(self) -> List[Cause]:
        return [cause for cause in self.causes if cause.root]


@dataclass
class Diagnosis:
    jobs: List[JobDiagnosis]
    files: List[LogFile]
    skipped: List[Skipped] = field(default_factory=list)
    stats: Dict[str, FileStats] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        """A root was named for every job with errors (and there was at least one)."""
        failed = [job for job in self.jobs if job.causes]
        return bool(failed) and all(job.verdict is not None for job in failed)


def causes_of(events: Sequence[Event], kb: KnowledgeBase) -> List[Cause]:
    """The knowledge-base faults among ``events``, each marked root or explained, ordered root
    first, then by layer (hardware before network before host OS before CANN before framework)."""
    by_key = kb.by_key
    grouped: Dict[str, Cause] = {}
    for event in events:
        if event.key is None or event.key not in by_key:
            continue
        entry = by_key[event.key]
        cause = grouped.get(entry.key)
        if cause is None:
            cause = grouped[entry.key] = Cause(
                key=entry.key,
                title=entry.title,
                cause=entry.cause,
                fix=entry.fix,
                severity=entry.severity,
                component=entry.component,
                layer=entry.layer,
                checks=entry.checks,
                source=entry.source,
            )
        cause.events.append(event)
        cause.count += 1
        if cause.vendor_level is None:
            _vendor(cause, entry.health_code or event.attr("event"), event.device)
    specific = [key for key in grouped if not by_key[key].generic]
    for key, cause in grouped.items():
        cause.explained_by = sorted(
            other
            for other in grouped
            if other != key and key in by_key[other].can_cause and _reaches(grouped[other], cause)
        )
        cause.root = not cause.explained_by and not (by_key[key].generic and specific)
    order = {layer: i for i, layer in enumerate(kb.layers)}
    return sorted(grouped.values(), key=lambda c: (not c.root, order.get(c.layer, 99), by_key[c.key].generic, c.key))


def _vendor(cause: Cause, code: Optional[str], npu: Optional[int]) -> None:
    """The vendor's level and action for an NPU event code (the npu.health check's table), and the
    code's own meaning in the title of a catch-all hardware event."""
    meaning = next(iter(decode(code, npu if npu is not None else "<npu>", 0)), None) if code else None
    if meaning is None:
        return
    cause.vendor_level = f"{meaning.level}: {meaning.action}"
    if cause.key == "npu.hardware_event":
        cause.title = f"NPU hardware event 0x{meaning.code or code}" + (f": {meaning.cause}" if meaning.cause else "")


def _reaches(src: Cause, dst: Cause) -> bool:
    """Whether ``src`` can be the cause of ``dst`` by place: a fault seen on one node only is
    explained only by a fault on that node; a fault seen on several nodes (the symptom of a
    collective that every rank waits in) by a fault anywhere in the job."""
    nodes = {event.node for event in dst.events}
    return len(nodes) > 1 or bool(nodes & {event.node for event in src.events})


def _located(cause: Cause, ctx: Context) -> List[Culprit]:
    """Where a root cause happened, as culprits: the rank whose pid the kernel killed, the NPU an
    event names, the process whose log holds it, or the node."""
    found: Dict[str, Culprit] = {}
    for event in cause.events:
        culprit: Optional[Culprit] = None
        killed = event.attr("killed_pid")
        if killed and killed.isdigit():
            process = ctx.job.process_of(event.node, pid=int(killed))
            culprit = ctx.culprit(process) if process else None
        if culprit is None:
            process = ctx.process_of(event)
            if process is not None:
                culprit = ctx.culprit(process)
                if event.device is not None and culprit.device is None:
                    culprit = Culprit(
                        culprit.node, culprit.rank, event.device, culprit.device_ip, culprit.inventory_node
                    )
        if culprit is None and (event.device is not None or event.node):
            process = next(
                (
                    p
                    for p in ctx.job.processes.values()
                    if p.node == event.node and p.device == event.device and event.device is not None
                ),
                None,
            )
            culprit = ctx.culprit(process) if process else Culprit(node=event.node, device=event.device)
        if culprit is not None:
            found.setdefault(culprit.label, culprit)
    return list(found.values())


def _fault_at(causes: Sequence[Cause], culprits: Sequence[Culprit]) -> Optional[Cause]:
    """The root cause at one of ``culprits`` (same node, and same NPU or rank where both are
    known), else the first root cause of the job."""
    roots = [cause for cause in causes if cause.root]
    for cause in roots:
        for event in cause.events:
            for culprit in culprits:
                if culprit.node is not None and event.node != culprit.node:
                    continue
                if culprit.node is None and culprit.device_ip and event.device_ip != culprit.device_ip:
                    continue
                same_rank = event.rank is None or culprit.rank is None or event.rank == culprit.rank
                same_npu = event.device is None or culprit.device is None or event.device == culprit.device
                if same_rank and same_npu:
                    return cause
    return roots[0] if roots else None


def diagnose_job(
    job: Job, kb: KnowledgeBase, inventory_ips: Mapping[str, Tuple[str, int]], tls: Mapping[Tuple[str, int], int]
) -> JobDiagnosis:
    ctx = Context(job, inventory_ips, tls)
    causes = causes_of(job.events, kb)
    verdict, verdicts = decide(ctx)
    if verdict is None:
        for cause in causes:
            if not cause.root or kb.by_key[cause.key].generic:
                continue
            located = _located(cause, ctx)
            if located and all(c.node == located[0].node for c in located):
                reason = f"{cause.title} on this node: nothing else in the job explains it, and it explains the rest"
                verdict = Verdict("fault-event", tuple(located), reason, tuple(cause.events[:4]))
                verdicts.append(verdict)
                break
    suspects: List[Culprit] = []
    if verdict is None:
        for given in verdicts:
            suspects.extend(given.suspects)
        if not suspects:
            suspects = erroring(ctx)
    fault = _fault_at(causes, verdict.culprits if verdict else suspects)
    return JobDiagnosis(job, verdict, verdicts, suspects, causes, fault)


def diagnose(
    events: Sequence[Event],
    files: Sequence[LogFile],
    kb: KnowledgeBase,
    inventory_ips: Optional[Mapping[str, Tuple[str, int]]] = None,
    tls: Optional[Mapping[Tuple[str, int], int]] = None,
    stats: Optional[Mapping[str, FileStats]] = None,
) -> List[JobDiagnosis]:
    """Every job of the tree, diagnosed on its own. ``stats``: each file's match counts, so that
    a fault's count is every line that matched, not only the lines kept as evidence."""
    jobs = [diagnose_job(job, kb, inventory_ips or {}, tls or {}) for job in split_jobs(events, files)]
    if stats:
        for result in jobs:
            for cause in result.causes:
                seen = {event.file for event in cause.events}
                cause.count = sum(stats[f].matches.get(cause.key, 0) for f in seen if f in stats) or cause.count
    return jobs
