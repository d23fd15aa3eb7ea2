"""``--bisect``: when the whole-cluster run fails or is slow, find the node(s) to blame with pairs.

Pure planning and judging; the launcher runs the groups. A synchronous all-reduce runs at the
pace of its slowest link, so one slow node makes every rank slow and the run alone cannot say
which node it is. Small groups can: each round splits the nodes into disjoint pairs (a triple
when the count is odd) that run at the same time, and the next round pairs every node with a
different partner. A node is suspected when *every* group it was in failed or was slow; a node
that was in one good group is cleared. Two rounds suffice for four or more nodes; three nodes
need three pairs; two nodes cannot be told apart this way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

#: Groups are slow when their bus bandwidth sits below a gap of at least this factor between the
#: sorted speeds of all groups (the largest such gap). A gap, not a share of the best, because
#: healthy groups scatter (a loaded host, a shared switch) while a slow link is a step apart.
SLOW_GAP = 2.0

Group = Tuple[str, ...]


def plan_rounds(nodes: Sequence[str]) -> List[List[Group]]:
    """Rounds of disjoint groups; within a round every node is in exactly one group.

    Disjoint, because two jobs on one node at once would fight over its NPUs.
    """
    names = list(nodes)
    if len(names) < 3:
        return []
    if len(names) == 3:
        a, b, c = names
        return [[(a, b)], [(b, c)], [(a, c)]]
    return [_pairs(names), _pairs(names[1:] + names[:1])]


def _pairs(names: List[str]) -> List[Group]:
    groups = [tuple(names[i : i + 2]) for i in range(0, len(names) - len(names) % 2, 2)]
    if len(names) % 2:
        groups[-1] = groups[-1] + (names[-1],)
    return groups


@dataclass(frozen=True)
class GroupResult:
    """One group's run: did it work, and how fast."""

    nodes: Group
    worked: bool
    busbw_GBps: Optional[float]
    at_bytes: Optional[int]
    reason: str = ""

    def to_dict(self) -> Dict[str, object]:
        return {
            "nodes": list(self.nodes),
            "worked": self.worked,
            "busbw_GBps": self.busbw_GBps,
            "at_bytes": self.at_bytes,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class BisectReport:
    rounds: Tuple[Tuple[GroupResult, ...], ...]
    suspects: Dict[str, str]  # node -> why
    note: str
    #: Suspects whose every group failed outright (the others' groups were slow).
    broken: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        return {
            "rounds": [[g.to_dict() for g in groups] for groups in self.rounds],
            "suspects": dict(self.suspects),
            "broken": list(self.broken),
            "note": self.note,
        }


def slow_threshold(speeds: Sequence[float]) -> Optional[float]:
    """The speed at or below which groups are slow: the bottom of the largest gap >= SLOW_GAP."""
    ordered = sorted(s for s in speeds if s > 0)
    gaps = [(ordered[i + 1] / ordered[i], ordered[i]) for i in range(len(ordered) - 1)]
    if not gaps:
        return None
    ratio, below = max(gaps)
    return below if ratio >= SLOW_GAP else None


def judge(rounds: Sequence[Sequence[GroupResult]]) -> BisectReport:
    """Name the nodes whose every group failed or was slow."""
    groups = [g for groups_ in rounds for g in groups_]
    threshold = slow_threshold([g.busbw_GBps for g in groups if g.worked and g.busbw_GBps])
    best = max((g.busbw_GBps for g in groups if g.worked and g.busbw_GBps), default=None)
    verdicts: Dict[Group, str] = {}
    for group in groups:
        if not group.worked:
            verdicts[group.nodes] = f"failed ({group.reason})" if group.reason else "failed"
        elif threshold is not None and group.busbw_GBps is not None and group.busbw_GBps <= threshold:
            verdicts[group.nodes] = f"slow ({group.busbw_GBps:.3g} GB/s, best group {best:.3g} GB/s)"
    nodes = list(dict.fromkeys(n for g in groups for n in g.nodes))
    suspects: Dict[str, str] = {}
    for node in nodes:
        mine = [g for g in groups if node in g.nodes]
        if mine and all(g.nodes in verdicts for g in mine):
            suspects[node] = "; ".join(
                f"with {'+'.join(n for n in g.nodes if n != node)}: {verdicts[g.nodes]}" for g in mine
            )
    if suspects:
        note = f"every group with {', '.join(suspects)} failed or was slow; groups without {'it' if len(suspects) == 1 else 'them'} were fine"
    elif verdicts:
        note = "bad groups share no node: the fault is not one node's (switch, fabric-wide setting, or intermittent)"
    else:
        note = "every group was fine on its own: the fault needs the whole cluster (scale, a shared link) or is intermittent"
    broken = tuple(node for node in suspects if all(not g.worked for g in groups if node in g.nodes))
    return BisectReport(tuple(tuple(r) for r in rounds), suspects, note, broken)
