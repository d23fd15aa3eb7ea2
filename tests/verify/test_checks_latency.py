"""``cluster.reachability`` judges the pairs' round trip too: a pair far slower than the mesh's
typical round trip (lower quartile), with no loss, is a warning naming the pair; the times are its evidence."""

from __future__ import annotations

from dataclasses import replace
from typing import Tuple

from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

#: A healthy RoCE pair's replies, as the vendor's example prints them: ~1.4 ms for the first, ~0.04 after.
HEALTHY = (0.497, 1.418)


def _judge(
    desired: DesiredState,
    slow_node: str = "",
    slow: Tuple[float, float] = (40.0, 52.0),
    healthy: Tuple[float, float] = HEALTHY,
):
    """The reachability results of the 4-node cluster, every pair answered; the pairs that
    ``slow_node`` sends, or that are sent to it, take ``slow`` (average, max) ms."""
    hosts, plan = cluster_evidence(desired)
    ips = {(p.target.ip, p.target.node) for p in plan.pairs if p.source is not None}
    node_of_ip = dict(ips)
    timed = {}
    for name, host in hosts.items():
        pings = []
        for ping in host.pings or ():
            average, slowest = slow if slow_node in (name, node_of_ip.get(ping.target)) else healthy
            pings.append(replace(ping, average_ms=average, max_ms=slowest))
        timed[name] = replace(host, pings=tuple(pings))
    results = run_checks(desired, timed, plan, Selection(), today=TODAY)
    return [r for r in results if r.check == "cluster.reachability"]


def test_round_trip_is_evidence_of_every_answered_pair(desired):
    results = _judge(desired)
    assert results and all(r.status is Status.PASSED for r in results)
    assert {(r.evidence["rtt_avg_ms"], r.evidence["rtt_max_ms"]) for r in results} == {HEALTHY}


def test_a_slow_node_is_a_warning_on_each_of_its_pairs(desired):
    results = _judge(desired, slow_node="node3")
    slow = [r for r in results if r.failed]
    assert slow and all("node3" in r.subject for r in slow)
    assert {r.severity for r in slow} == {Severity.WARNING}  # no loss: the job runs, slowly
    assert len(slow) == sum(1 for r in results if "node3" in r.subject)
    first = slow[0]
    assert "no loss but the replies average 40 ms, max 52 ms, 80x the mesh's typical 0.497 ms" in first.message
    assert first.evidence["typical_rtt_ms"] == 0.497
    assert first.evidence["thresholds"]["ping_latency_ratio"]["source"] == "default"
    assert "hccn_tool -i" in first.fix


def test_a_slow_pair_within_the_margin_is_not_named(desired):
    # 6x the typical round trip and 2.5 ms above it: both thresholds (5x, 2 ms) hold
    assert any(r.failed for r in _judge(desired, "node2", (3.0, 3.0)))
    # 4x: under the ratio
    assert not any(r.failed for r in _judge(desired, "node2", (2.0, 2.5)))
    # 10x, but only 0.45 ms above it: under the margin (one reply's ARP is not a slow node)
    assert not any(r.failed for r in _judge(desired, "node2", (0.5, 1.4), healthy=(0.05, 0.06)))
    assert any(r.failed for r in _judge(desired, "node2", (2.5, 2.6), healthy=(0.05, 0.06)))


def test_a_slow_master_is_named_though_it_is_in_half_the_ring(desired):
    # in the ring mesh every node pings the master: most pairs are slow, the lower quartile is not
    slow = [r for r in _judge(desired, "node1") if r.failed]
    assert slow and all("node1" in r.subject for r in slow)


def test_thresholds_are_overridable_in_the_inventory():
    tighter = desired_state(INVENTORY + "thresholds:\n  ping_latency_margin_ms: 50\n")
    assert not any(r.failed for r in _judge(tighter, "node3"))
    looser = desired_state(INVENTORY + "thresholds:\n  ping_latency_ratio: 2\n  ping_latency_margin_ms: 0.5\n")
    slow = [r for r in _judge(looser, "node3", (1.2, 1.5)) if r.failed]
    assert slow and slow[0].evidence["thresholds"]["ping_latency_ratio"]["source"] == "inventory"
