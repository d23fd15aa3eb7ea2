"""``cluster.reachability``: the NPU-plane reachability matrix, one result per pinged pair.

A pair passes when its ping got every reply. Lost packets, or a port that refuses to send (link
down), break the pair; a ping that could not be run (its node's ping script failed, hccn_tool
hung or stayed busy) fails as "could not check", naming the pair.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from ascendprep.base.findings import Severity
from ascendprep.facts.model import PingResult
from ascendprep.verify.checks.context import ClusterContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.verify.mesh import Endpoint, PingPair

_FIX = "check both ports (network.link, network.lldp) and the switch path between them; ping by hand: hccn_tool -i {npu} -ping -g address {ip}"
#: Error texts of a ping that never ran to a verdict on the fabric.
_NOT_RUN_MARKS = ("timed out", "still busy", "not run:", "not installed")


def _index(results: Tuple[PingResult, ...]) -> Dict[Tuple[int, str], PingResult]:
    return {(result.npu, result.target): result for result in results}


#: Per endpoint of the run: its evidence dict (shared by every pair naming it: "a" and "from"
#: are the same end; in a ring each end is in two pairs, ~16 pairs per host) and its text.
_Ends = Dict[Endpoint, Tuple[Dict[str, object], str]]


def _end(end: Endpoint, ends: _Ends) -> Tuple[Dict[str, object], str]:
    shown = ends.get(end)
    if shown is None:
        shown = ends[end] = (end.to_dict(), str(end))
    return shown


def _judge(
    pair: PingPair, ctx: ClusterContext, indexes: Dict[str, Dict[Tuple[int, str], PingResult]], ends: _Ends
) -> Verdict:
    subject = pair.subject
    shown_a, shown_b = _end(pair.a, ends), _end(pair.b, ends)
    evidence: Dict[str, object] = {"a": shown_a[0], "b": shown_b[0]}
    source = pair.source
    if source is None:
        return could_not_check(f"no end of {pair.a} ↔ {pair.b} can ping: {pair.blocked}", evidence, subject=subject)
    # The planner's source is one of the pair's own ends: no second look-up (nor the
    # dataclass's __eq__ of PingPair.target) for what is already shown. A source that is only
    # equal to an end (a plan read back from a bundle) is looked up as before.
    if source is pair.a:
        target, shown_source, shown_target = pair.b, shown_a, shown_b
    elif source is pair.b:
        target, shown_source, shown_target = pair.a, shown_b, shown_a
    else:
        target = pair.target
        shown_source, shown_target = _end(source, ends), _end(target, ends)
    (evidence["from"], source_text), (evidence["to"], target_text) = shown_source, shown_target
    arrow = f"{source_text} → {target_text}"
    host = ctx.hosts.get(source.node)
    if host is None or host.pings is None:
        reason = (host.ping_error if host is not None else None) or "the ping phase did not run there"
        return could_not_check(f"{arrow}: {reason}", evidence, subject=subject)
    result = indexes[source.node].get((source.npu, target.ip))
    if result is None:
        return could_not_check(f"{arrow}: the ping script did not report this ping", evidence, subject=subject)
    evidence.update(
        {"sent": result.sent, "received": result.received, "loss_percent": result.loss_percent, "error": result.error}
    )
    if result.ok:
        return passed(f"{arrow}: {result.received}/{result.sent} replies", evidence, subject=subject)
    error = result.error or "failed"
    fix = _FIX.format(npu=source.npu, ip=target.ip)
    if result.sent is None and any(mark in error for mark in _NOT_RUN_MARKS):
        return could_not_check(f"{arrow}: {error}", evidence, subject=subject, fix=fix)
    return failed(f"{arrow}: {error}", evidence, fix=fix, subject=subject)


def reachability(ctx: ClusterContext) -> List[Verdict]:
    plan = ctx.pings
    if plan is None:
        return [skipped("no ping phase ran")]
    if not plan.pairs:
        return [skipped(f"the {plan.mesh} mesh has no NPU pairs to ping (a single node talks over HCCS)")]
    indexes = {name: _index(host.pings) for name, host in ctx.hosts.items() if host.pings is not None}
    ends: _Ends = {}
    return [_judge(pair, ctx, indexes, ends) for pair in plan.pairs]


CHECKS: List[Check] = [
    Check(
        "cluster.reachability",
        ("cluster", "network"),
        "cluster",
        Severity.ERROR,
        "every NPU pair of the mesh reaches each other",
        "",
        reachability,
    ),
]
