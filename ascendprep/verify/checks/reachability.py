"""``cluster.reachability``: the NPU-plane reachability matrix, one result per pinged pair.

A pair passes when its ping got every reply. Lost packets, or a port that refuses to send (link
down), break the pair; a ping that could not be run (its node's ping script failed, hccn_tool
hung or stayed busy) fails as "could not check", naming the pair.

Each answered pair also keeps its replies' round trip (``rtt_avg_ms``, ``rtt_max_ms``: hccn_tool
prints one ``time=`` per reply). A pair that lost nothing but whose replies average more than
``ping_latency_ratio`` times the mesh's typical round trip, and at least ``ping_latency_margin_ms``
above it (data/grey_thresholds.yaml, overridable in the inventory),
is a warning: a slow rail, leaf or node lets a job start and then drags every collective. The
typical round trip is the lower quartile of the answered pairs, not their median: in the ring mesh
the master is in about half of all pairs, so a slow master would move the median with it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import PingResult
from ascendprep.inventory import thresholds as grey_thresholds
from ascendprep.verify.checks.context import ClusterContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.verify.mesh import Endpoint, PingPair

_FIX = "check both ports (network.link, network.lldp) and the switch path between them; ping by hand: hccn_tool -i {npu} -ping -g address {ip}"
#: Error texts of a ping that never ran to a verdict on the fabric.
_NOT_RUN_MARKS = ("timed out", "still busy", "not run:", "not installed")


def _index(results: Tuple[PingResult, ...]) -> Dict[Tuple[int, str], PingResult]:
    return {(result.npu, result.target): result for result in results}


#: Answered pairs needed before their typical round trip is a baseline to judge a pair against.
LATENCY_PAIRS_MIN = 4
_SLOW_FIX = (
    "compare the slow pairs: one node in all of them is that node's ports or host (tc/qdisc, a renegotiated"
    " speed: ports.speed); one plane is its switch path; ping by hand: hccn_tool -i {npu} -ping -g address {ip}"
)


@dataclass(frozen=True)
class Baseline:
    """The mesh's typical round trip (lower quartile) and the thresholds a slow pair is judged by."""

    typical_ms: float
    ratio: float
    margin_ms: float
    shown: Dict[str, Any]

    def slow(self, average_ms: Optional[float]) -> bool:
        return (
            average_ms is not None
            and average_ms > self.ratio * self.typical_ms
            and average_ms - self.typical_ms >= self.margin_ms
        )


def baseline(desired: DesiredState, results: Iterable[PingResult]) -> Optional[Baseline]:
    """The baseline of the answered pairs among ``results`` (None when fewer than
    :data:`LATENCY_PAIRS_MIN` answered with times): what a pair's round trip is judged against."""
    times = [r.average_ms for r in results if r.ok and r.average_ms is not None]
    if len(times) < LATENCY_PAIRS_MIN:
        return None
    overrides = desired.inventory.model.thresholds
    limits = grey_thresholds.effective(overrides)
    names = ("ping_latency_ratio", "ping_latency_margin_ms")
    shown = {name: grey_thresholds.shown(name, limits[name], overrides) for name in names}
    typical = statistics.quantiles(times, n=4, method="inclusive")[0]
    return Baseline(typical, limits[names[0]], limits[names[1]], shown)


def _ms(value: float) -> str:
    return f"{value:.3g} ms" if value < 100 else f"{value:,.0f} ms"


#: Per endpoint of the run: its evidence dict (shared by every pair naming it: "a" and "from"
#: are the same end; in a ring each end is in two pairs, ~16 pairs per host) and its text.
_Ends = Dict[Endpoint, Tuple[Dict[str, object], str]]


def _end(end: Endpoint, ends: _Ends) -> Tuple[Dict[str, object], str]:
    shown = ends.get(end)
    if shown is None:
        shown = ends[end] = (end.to_dict(), str(end))
    return shown


def _judge(
    pair: PingPair,
    ctx: ClusterContext,
    indexes: Dict[str, Dict[Tuple[int, str], PingResult]],
    ends: _Ends,
    baseline: Optional[Baseline] = None,
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
        {
            "sent": result.sent,
            "received": result.received,
            "loss_percent": result.loss_percent,
            "error": result.error,
            "rtt_avg_ms": result.average_ms,
            "rtt_max_ms": result.max_ms,
        }
    )
    if result.ok and baseline is not None and baseline.slow(result.average_ms):
        average = result.average_ms or 0.0
        evidence.update({"typical_rtt_ms": round(baseline.typical_ms, 6), "thresholds": baseline.shown})
        slowest = f", max {_ms(result.max_ms)}" if result.max_ms is not None else ""
        times = f"{average / baseline.typical_ms:.0f}x" if baseline.typical_ms > 0 else "far above"
        return failed(
            f"{arrow}: no loss but the replies average {_ms(average)}{slowest}, {times}"
            f" the mesh's typical {_ms(baseline.typical_ms)} (ping_latency_ratio {baseline.ratio:g},"
            f" ping_latency_margin_ms {baseline.margin_ms:g})",
            evidence,
            severity=Severity.WARNING,
            fix=_SLOW_FIX.format(npu=source.npu, ip=target.ip),
            subject=subject,
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
    typical = baseline(ctx.desired, (r for index in indexes.values() for r in index.values()))
    return [_judge(pair, ctx, indexes, ends, typical) for pair in plan.pairs]


CHECKS: List[Check] = [
    Check(
        "cluster.reachability",
        ("cluster", "network"),
        "cluster",
        Severity.ERROR,
        "every NPU pair of the mesh reaches each other (a pair far slower than the mesh's typical round trip: a warning)",
        "",
        reachability,
    ),
]
