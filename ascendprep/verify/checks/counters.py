"""``network.counters``: per NPU port, the growth of its error and pause counters, as a rate.

The gather reads ``hccn_tool -stat -g`` twice, ``--sample-interval`` seconds apart
(:mod:`ascendprep.facts.port_stats`). A counter that grows faster than its threshold
(``data/grey_thresholds.yaml``, overridable in the inventory) is a finding naming the
counter, its rate and the threshold; counts since boot are shown, never judged. A counter that
went down between the two reads was cleared (``-stat -c``) or wrapped: its rate is unknown, never
negative.

The rates are keyed by the MindCluster NPU exporter's metric names (``npu_chip_info_rx_fcs_num``,
``npu_chip_mac_rx_pfc_pkt_num``, ...; ecosystem.md) where the counter is the same, so that a
dashboard's ``rate(npu_chip_...[1m])`` and this report speak of the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.base.findings import Severity
from ascendprep.facts import port_stats
from ascendprep.facts.model import CounterSample
from ascendprep.inventory import thresholds as grey_thresholds
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped


@dataclass(frozen=True)
class JudgedCounter:
    """A ``-stat -g`` counter whose growth is judged: its exporter metric and its threshold's name."""

    counter: str
    metric: str
    threshold: str


#: The judged counters, in the order reports list them. Metric names: MindCluster npu-exporter
#: ``collector/metrics/collector_for_roce.go`` (the FCS counter is ``npu_chip_info_rx_fcs_num``
#: there, the MAC pause counters drop the ``mac_`` in the middle).
JUDGED: Tuple[JudgedCounter, ...] = (
    JudgedCounter("mac_rx_fcs_err_pkt_num", "npu_chip_info_rx_fcs_num", "fcs_errors_per_s"),
    JudgedCounter("mac_rx_bad_pkt_num", "npu_chip_mac_rx_bad_pkt_num", "bad_packets_per_s"),
    JudgedCounter("mac_tx_bad_pkt_num", "npu_chip_mac_tx_bad_pkt_num", "bad_packets_per_s"),
    JudgedCounter("roce_rx_err_pkt_num", "npu_chip_roce_rx_err_pkt_num", "roce_errors_per_s"),
    JudgedCounter("roce_tx_err_pkt_num", "npu_chip_roce_tx_err_pkt_num", "roce_errors_per_s"),
    JudgedCounter("roce_verification_err_num", "npu_chip_roce_verification_err_num", "roce_errors_per_s"),
    JudgedCounter("roce_out_of_order_num", "npu_chip_roce_out_of_order_num", "roce_out_of_order_per_s"),
    JudgedCounter("roce_qp_status_err_num", "npu_chip_roce_qp_status_err_num", "roce_qp_errors_per_s"),
    JudgedCounter("roce_new_pkt_rty_num", "npu_chip_roce_new_pkt_rty_num", "roce_retries_per_s"),
    JudgedCounter("mac_rx_pfc_pkt_num", "npu_chip_mac_rx_pfc_pkt_num", "pfc_frames_per_s"),
    JudgedCounter("mac_tx_pfc_pkt_num", "npu_chip_mac_tx_pfc_pkt_num", "pfc_frames_per_s"),
    JudgedCounter("mac_rx_mac_pause_num", "npu_chip_mac_rx_pause_num", "pause_frames_per_s"),
    JudgedCounter("mac_tx_mac_pause_num", "npu_chip_mac_tx_pause_num", "pause_frames_per_s"),
)

#: What a counter growing past its threshold most likely means, per threshold: the fix.
FIXES: Dict[str, str] = {
    "fcs_errors_per_s": "frames arrive corrupted: clean or replace the fibre and the optical module of this port and its switch port; read 'hccn_tool -i {npu} -optical -g'",
    "bad_packets_per_s": "the port drops malformed frames: check the optics and cabling, and the switch port's error counters",
    "roce_errors_per_s": "RoCE packets fail on this port: check the link's optics, MTU and the switch's lossless (PFC/ECN) settings",
    "roce_out_of_order_per_s": "packets are lost or reordered on the path: look for drops on the switch (buffer, ECMP) and a lossless queue that is not lossless",
    "roce_qp_errors_per_s": "queue pairs go into an error state: a peer died or packets are being lost; check the peers' health and the path",
    "roce_retries_per_s": "packets are being retransmitted: look for loss on the path (optics, switch drops, PFC not enabled end to end)",
    "pfc_frames_per_s": "a PFC pause storm: a receiver or switch queue is stuck and pauses the link; find the source with the switch's PFC counters (a storm spreads through the fabric)",
    "pause_frames_per_s": "link-level pause frames flood the port: check the switch port's flow-control settings and what it is congested by",
}


@dataclass(slots=True)
class CounterRate:
    """One counter over the sample: both reads, and its growth per second or why it is unknown.

    Not frozen: made ~50 times per sampled NPU (every counter in both reads) and read at once
    by the check; a frozen dataclass's ``__init__`` costs more (``object.__setattr__`` per field)."""

    counter: str
    first: int
    second: int
    interval_s: float
    rate_per_s: Optional[float]
    problem: Optional[str] = None


def sample_pair(samples: Tuple[CounterSample, ...]) -> Tuple[Optional[CounterSample], Optional[CounterSample]]:
    """The last read of the first pass and the last of the second (either None when missing)."""
    first = next((s for s in reversed(samples) if s.pass_number == port_stats.FIRST), None)
    second = next((s for s in reversed(samples) if s.pass_number == port_stats.SECOND), None)
    return first, second


def counter_rate(counter: str, first: int, second: int, interval_s: float) -> CounterRate:
    """Growth per second; a counter that went down (cleared or wrapped) has no rate."""
    if second < first:
        return CounterRate(
            counter,
            first,
            second,
            interval_s,
            None,
            f"went down from {first} to {second} (cleared or wrapped between the reads)",
        )
    return CounterRate(counter, first, second, interval_s, (second - first) / interval_s)


def rates(first: CounterSample, second: CounterSample) -> Dict[str, CounterRate]:
    """Every counter present in both reads, with its rate; {} when the interval is not positive."""
    if first.at_s is None or second.at_s is None or second.at_s <= first.at_s:
        return {}
    interval = second.at_s - first.at_s
    return {
        name: counter_rate(name, value, second.counters[name], interval)
        for name, value in first.counters.items()
        if name in second.counters
    }


#: (the inventory's ``thresholds:`` object, the limits in effect, each limit as evidence shows it)
#: of the last inventory checked: every NPU of every node asks, and they depend on the inventory
#: alone. The shown dicts are shared by the results that show them and never changed.
_LAST_LIMITS: Tuple[Any, Dict[str, float], Dict[str, Dict[str, Any]]] = (None, {}, {})


def _limits(desired: Any) -> Tuple[Dict[str, float], Dict[str, Dict[str, Any]]]:
    """``grey_thresholds.effective`` of the inventory and each limit's ``shown``, built once per inventory."""
    global _LAST_LIMITS
    overrides = desired.inventory.model.thresholds
    seen, limits, shown = _LAST_LIMITS
    if not limits or seen is not overrides:
        limits = grey_thresholds.effective(overrides)
        shown = {name: grey_thresholds.shown(name, value, overrides) for name, value in limits.items()}
        _LAST_LIMITS = (overrides, limits, shown)
    return limits, shown


def _round(value: float) -> float:
    return round(value, 3)


def port_counters(ctx: NodeContext, npu: int) -> List[Verdict]:
    npu_facts = ctx.facts.npus.get(npu)
    samples = npu_facts.stat_samples if npu_facts is not None else ()
    if not samples:
        return [skipped(f"hccn_tool -i {npu} -stat -g was not read (facts gathered without it)")]
    first, second = sample_pair(samples)
    reference = first or second
    if reference is None:
        return [
            skipped(
                f"hccn_tool -i {npu} -stat -g was read, but in no pass verify knows ({sorted({s.pass_number for s in samples})})"
            )
        ]
    counts = reference.counters
    judged = [j for j in JUDGED if j.counter in counts]
    since_boot = {j.metric: counts[j.counter] for j in judged}
    form = "long" if len(counts) > 2 else "short (older driver: RoCE error counters only)"
    base: Dict[str, Any] = {"form": form, "since_boot": since_boot}
    if not judged:
        return [skipped(f"-stat -g lists none of the judged counters ({len(reference.counters)} others)", base)]
    if first is None or second is None:
        return [
            skipped(
                "counters were read once (--sample-interval 0): no rates; counts since boot are information only", base
            )
        ]
    measured = rates(first, second)
    if not measured:
        return [skipped("the two reads carry no usable time stamps: no rates", base)]
    interval = next(iter(measured.values())).interval_s
    limits, shown_limits = _limits(ctx.desired)
    known: Dict[str, float] = {}
    for j in judged:
        per_s = measured[j.counter].rate_per_s if j.counter in measured else None
        if per_s is not None:
            known[j.metric] = _round(per_s)
    unknown = {
        j.metric: measured[j.counter].problem or "not in both reads"
        for j in judged
        if j.counter not in measured or measured[j.counter].rate_per_s is None
    }
    evidence = {**base, "interval_s": _round(interval), "rates_per_s": known, "unknown": unknown}
    verdicts: List[Verdict] = []
    for item in judged:
        rate = measured.get(item.counter)
        if rate is None or rate.rate_per_s is None:
            continue
        limit = limits[item.threshold]
        if rate.rate_per_s > limit:
            verdicts.append(
                failed(
                    f"{item.counter} grows {rate.rate_per_s:,.1f}/s over {interval:.1f}s (threshold {limit:g}/s, {item.threshold})",
                    {
                        "counter": item.counter,
                        "metric": item.metric,
                        "rate_per_s": _round(rate.rate_per_s),
                        "threshold": shown_limits[item.threshold],
                        "first": rate.first,
                        "second": rate.second,
                        "interval_s": _round(interval),
                        **({"unknown": unknown} if unknown else {}),
                    },
                    fix=FIXES[item.threshold].format(npu=npu),
                    subject=item.counter,
                )
            )
    if verdicts:
        return verdicts
    note = (
        f"; rate unknown for {', '.join(sorted(unknown))} ({'; '.join(sorted(set(unknown.values())))})"
        if unknown
        else ""
    )
    thresholds = {name: shown_limits[name] for name in dict.fromkeys(j.threshold for j in judged)}
    return [
        passed(
            f"{len(known)} error and pause counters steady over {interval:.1f}s{note}",
            {**evidence, "thresholds": thresholds},
        )
    ]


CHECKS: List[Check] = [
    Check(
        "network.counters",
        ("network",),
        "npu",
        Severity.ERROR,
        "no error or pause counter of the port grows faster than its threshold",
        "",
        port_counters,
        probes=(port_stats.SECTION,),
        requires=("node.reachable", "node.hccn_tool"),
    ),
]
