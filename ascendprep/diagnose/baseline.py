"""Was it already there? The root rank's node and NPU against a verify run made before the job.

With ``--baseline RUN`` (a saved verify run: its bundle folder, or its ``--format json``
output), each culprit is looked up there: the findings verify had on that node and NPU then (the
fault was visible before the job, and the check that saw it is named), and, where both the
baseline and the collected state (``state.json`` of a collect bundle) hold the NPU's facts, what
changed since (its link, its health, its TLS switch, its IP, its link-down count): the NPU
drifted after verify passed.

Pure: findings and facts in, notes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Mapping, Optional, Tuple

from ascendprep.base.findings import Finding
from ascendprep.diagnose.model import Culprit
from ascendprep.facts.model import HostFacts, NpuFacts


@dataclass(frozen=True)
class BaselineNote:
    """What the baseline says about one culprit's node and NPU."""

    node: str
    npu: Optional[int]
    #: The baseline had this node at all (a node it did not read says nothing either way).
    known: bool
    findings: Tuple[Finding, ...] = ()
    #: What changed between the baseline's facts and the collected state ("link UP -> DOWN").
    drift: Tuple[str, ...] = ()
    #: Whether drift could be judged (both sides hold facts of the NPU).
    compared: bool = False

    def sentence(self) -> str:
        where = f"{self.node}" + (f" NPU {self.npu}" if self.npu is not None else "")
        if not self.known:
            return f"{where}: not in the baseline"
        parts = []
        if self.findings:
            parts.append("already had findings then: " + "; ".join(f"{f.id}: {f.message}" for f in self.findings[:4]))
        else:
            parts.append("no finding then")
        if self.drift:
            parts.append("drifted since: " + "; ".join(self.drift))
        elif self.compared:
            parts.append("no drift in its NPU state since")
        return f"{where}: " + ", ".join(parts)


def _link_downs(npu: Optional[NpuFacts]) -> Optional[int]:
    return npu.link_stat.down_count if npu is not None and npu.link_stat is not None else None


def _tls(npu: Optional[NpuFacts]) -> Optional[bool]:
    return npu.tls.enabled if npu is not None and npu.tls is not None else None


def npu_drift(then: Optional[NpuFacts], now: Optional[NpuFacts]) -> List[str]:
    """The NPU port values that differ between ``then`` and ``now`` (a value not read on one side
    is not called a change)."""
    if then is None or now is None:
        return []
    changes = []
    for name, old, new in (
        ("link", then.link, now.link),
        ("net_health", then.net_health, now.net_health),
        ("ip", then.ip, now.ip),
        ("tls enabled", _tls(then), _tls(now)),
        ("link down count", _link_downs(then), _link_downs(now)),
        ("optics present", then.optical_present, now.optical_present),
    ):
        if old is not None and new is not None and old != new:
            changes.append(f"{name} {old} -> {new}")
    return changes


def _health(facts: Optional[HostFacts], npu: Optional[int]) -> Optional[str]:
    """``npu-smi``'s health of the NPU and its error code, as one word (``Warning/80E01801``)."""
    if facts is None or npu is None:
        return None
    for health in facts.npu_health:
        if health.npu_id == npu:
            return health.health + (f"/{health.error_code}" if health.error_code else "")
    return None


def note_for(
    culprit: Culprit,
    findings: Iterable[Finding],
    baseline_nodes: Iterable[str],
    then: Mapping[str, Optional[HostFacts]],
    now: Mapping[str, HostFacts],
) -> Optional[BaselineNote]:
    """The baseline's word on ``culprit`` (None when the culprit has no node to look up)."""
    node = culprit.inventory_node or culprit.node
    if node is None:
        return None
    known = node in set(baseline_nodes)
    npu = culprit.device
    here = tuple(f for f in findings if f.node == node and (f.npu is None or npu is None or f.npu == npu))
    before, after = then.get(node), now.get(node)
    compared = before is not None and after is not None and npu is not None
    drift: List[str] = []
    if compared and npu is not None and before is not None and after is not None:
        drift = npu_drift(before.npus.get(npu), after.npus.get(npu))
        health_then, health_now = _health(before, npu), _health(after, npu)
        if health_then is not None and health_now is not None and health_then != health_now:
            drift.append(f"health {health_then} -> {health_now}")
    return BaselineNote(node, npu, known, here, tuple(drift), compared)
