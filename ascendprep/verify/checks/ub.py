"""Per-NPU checks of an Ascend 950 card's Unified Bus (UB) ports, from the facts of
:mod:`ascendprep.facts.ub_units`.

What each judges, with the vendor page it rests on (hicann/driver ``docs/en/Ascend_950_HCCN_Tool``
and ``Ascend_950_npu-smi``; copied facts in docs/ascend950.md):

* ``ub.link``: ``-ub_connect``: every valid port ``UP``. ``DOWN`` is a port without a link;
  ``PARTIAL UP`` a port that came up on fewer lanes (the overall state is then ``PARTIAL LINK``).
  A single card has no valid port (the tool prints ``DOWN`` and no port): nothing to judge.
* ``ub.lanes``: each port's lanes: ``-speed`` ``Width`` below ``Cap`` or ``Status downgraded``,
  ``-port_info`` ``cur_tx_lane_num``/``cur_rx_lane_num`` below ``lane_num``. A lane lost halves
  or quarters the port's bandwidth without taking the link down.
* ``ub.counters``: each port's ``-stat`` error counters read twice, their growth per second
  against ``ub_crc_errors_per_s``, ``ub_retries_per_s`` and ``ub_drops_per_s``
  (``data/grey_thresholds.yaml``), as ``network.counters`` does for 910 ports.
* ``ub.ping``: ``hccn_tool -t -ub_ping`` from the NPU's first EID to every other card's of the
  host (the gather's matrix; the Atlas 350's UB links join the cards of one server).
* ``ub.sio``: ``npu-smi info -t sio-info``: errors on the link between the chip's two dies.
* ``ub.link_flaps``: each port's ``-link_stat`` history (querying-the-historical-link-up-and-down-
  status-of-a-port.md: the link-up and link-down counts since the driver loaded, then the latest
  changes, newest first), judged as ``network.link_flaps`` judges a 910 port: a link that went
  down and came back within the last 24 h of the host's clock at the read is a flap (a warning),
  as is a down count above the downs the bounded history still lists. A port whose latest change
  is LINK_DOWN is down now, which is ``ub.link``'s; its earlier downs still count. The 950 answer
  prints no current time, so the gather records the host's (local, like the tool's [I]); without
  it every listed flap counts.

The checks apply to Ascend 950 inventories only (elsewhere each is skipped once, saying why). An
NPU without UB facts could not be checked (the host did not identify as an A5 card, or the probe
failed); facts of a 910 NPU, which has none, skip it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Tuple, Union

from ascendprep.base.findings import Severity
from ascendprep.facts.ub_model import (
    PORT_DOWN,
    PORT_PARTIAL_UP,
    PORT_UP,
    UbCounterRead,
    UbFacts,
    UbLinkEvent,
    UbLinkStat,
    port_key,
)
from ascendprep.inventory import thresholds as grey_thresholds
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.counters import counter_rate
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.verify.checks.network import FLAP_WINDOW
from ascendprep.verify.checks.text import parse_asctime

_NEEDS = ("node.reachable", "node.hccn_tool")
#: The die the Atlas 350's card-level ports are on: ``-ub_connect`` prints ``port N`` only, and
#: the card manual says ``-u`` is always 0 there.
CONNECT_DIE = 0

#: (counter, threshold) judged per UB port, in the order reports list them.
JUDGED: Tuple[Tuple[str, str], ...] = (
    ("crc_error_sum", "ub_crc_errors_per_s"),
    ("retry_req_sum", "ub_retries_per_s"),
    ("drop_ind_cnt_rx", "ub_drops_per_s"),
    ("drop_ind_cnt_tx", "ub_drops_per_s"),
)

FIXES = {
    "down": (
        "the UB port has no link: reseat or replace the UB cable of this port and its peer card's, and"
        " read 'hccn_tool -g -link_stat -i {npu} -u {udie} -p {port}' for when it went down"
    ),
    "lanes": (
        "the port trained on fewer lanes than it has: reseat or replace the UB cable; read"
        " 'hccn_tool -g -port_info -i {npu} -u {udie} -p {port}' (cur_tx_lane_num, cur_rx_lane_num)"
        " and 'hccn_tool -g -down_data' for the lane that failed"
    ),
    "ub_crc_errors_per_s": "frames arrive corrupted on this UB link: reseat or replace the cable; read 'hccn_tool -g -bit_err -i {npu} -u {udie} -p {port}'",
    "ub_retries_per_s": "the link retransmits: a marginal lane or cable; read 'hccn_tool -g -port_info -i {npu} -u {udie} -p {port}' and replace the cable if it persists",
    "ub_drops_per_s": "packets are dropped on this UB port: check the peer card's health and the port's credit ('hccn_tool -g -credit')",
    "ping": "NPU {npu} cannot reach NPU {peer} over UB: look at ub.link and ub.lanes of both cards, reseat the UB cables between them, and run 'hccn_tool -g -ub_connect -i {npu}'",
    "flaps": (
        "the UB link went down and came back: reseat or replace the UB cable of this port and its peer"
        " card's; 'hccn_tool -g -down_data -i {npu} -u {udie} -p {port}' shows the lanes at each link-down"
    ),
    "sio": "the two dies of this NPU report link errors between them: a hardware fault of the card; collect 'npu-smi info -t sio-info -i {npu}' over time and contact the vendor if the count grows",
}


def only_950(desired: Any) -> Optional[str]:
    """The UB checks apply to Ascend 950 inventories only (skipped once, saying why, elsewhere)."""
    product = desired.inventory.product
    return None if product.is_950 else f"{product.id} has no UB ports (Ascend 950 only)"


def _ub(ctx: NodeContext, npu: int, probe: str) -> Union[UbFacts, Verdict]:
    """The NPU's UB facts, or the verdict when there are none: skipped on a 910 NPU, "could not
    check" when the probe failed or the inventory is a 950 one."""
    npu_facts = ctx.facts.npus.get(npu)
    ub = npu_facts.ub if npu_facts is not None else None
    if ub is not None:
        return ub
    errors = ctx.facts.errors_for(probe, npu)
    if errors:
        return could_not_check(errors[0].message)
    if ctx.desired.inventory.product.is_950:
        return could_not_check(
            f"no UB facts for NPU {npu}: the host's 'npu-smi info -l' did not name an A5 card, so its UB ports were not read"
        )
    return skipped("not an Ascend 950 NPU (no UB ports)")


def link(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "hccn.ub_connect")
    if isinstance(ub, Verdict):
        return [ub]
    connect = ub.connect
    if connect is None:
        return [could_not_check(f"hccn_tool -g -ub_connect -i {npu} was not read")]
    evidence: Dict[str, Any] = {
        "status": connect.status,
        "ports": {port_key(CONNECT_DIE, port): state for port, state in sorted(connect.ports.items())},
    }
    if not connect.ports:
        return [skipped(f"no valid UB port (link status {connect.status}): a single card has none", evidence)]
    verdicts: List[Verdict] = []
    for port, state in sorted(connect.ports.items()):
        key = port_key(CONNECT_DIE, port)
        fix = FIXES["down" if state == PORT_DOWN else "lanes"].format(npu=npu, udie=CONNECT_DIE, port=port)
        if state == PORT_DOWN:
            verdicts.append(failed(f"UB port {key} is DOWN (link status {connect.status})", evidence, fix, subject=key))
        elif state == PORT_PARTIAL_UP:
            verdicts.append(
                failed(
                    f"UB port {key} is PARTIAL UP: up on fewer lanes (link status {connect.status})",
                    evidence,
                    fix,
                    subject=key,
                )
            )
    if verdicts:
        return verdicts
    return [passed(f"all {len(connect.ports)} valid UB ports {PORT_UP} (link status {connect.status})", evidence)]


def lanes(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "hccn.ub_speed")
    if isinstance(ub, Verdict):
        return [ub]
    if not ub.ports:
        return [skipped("no UB port listed by -dev_info")]
    verdicts: List[Verdict] = []
    seen: Dict[str, Any] = {}
    for key, port in sorted(ub.ports.items()):
        facts: Dict[str, Any] = {}
        problems: List[str] = []
        if port.speed is not None:
            facts["speed"] = {"cap": port.speed.cap_lanes, "width": port.speed.width_lanes, "status": port.speed.status}
            if port.speed.downgraded:
                problems.append(
                    f"-speed Width X{port.speed.width_lanes} of Cap X{port.speed.cap_lanes} ({port.speed.status})"
                )
        info = port.port_info
        if info is not None:
            facts["port_info"] = {"lane_num": info.lane_num, "tx": info.cur_tx_lane_num, "rx": info.cur_rx_lane_num}
            if info.lanes_reduced:
                problems.append(
                    f"-port_info trained tx X{info.cur_tx_lane_num} rx X{info.cur_rx_lane_num} of X{info.lane_num}"
                )
        seen[key] = facts
        if problems:
            verdicts.append(
                failed(
                    f"UB port {key} runs on fewer lanes: {'; '.join(problems)}",
                    facts,
                    FIXES["lanes"].format(npu=npu, udie=port.udie, port=port.port),
                    subject=key,
                )
            )
    verdicts += _port_probe_failures(ctx, npu, ("hccn.ub_speed", "hccn.ub_port_info"))
    if verdicts:
        return verdicts
    if not any(seen.values()):
        return [could_not_check(f"neither -speed nor -port_info was read for NPU {npu}'s UB ports")]
    return [passed(f"{len(seen)} UB ports on all their lanes", {"ports": seen})]


def _port_probe_failures(ctx: NodeContext, npu: int, probes: Tuple[str, ...]) -> List[Verdict]:
    """A per-port read that failed leaves that port unjudged: "could not check", naming the command."""
    return [
        could_not_check(error.message, subject=error.probe)
        for probe in probes
        for error in ctx.facts.errors_for(probe, npu)
    ]


def _pair(samples: Tuple[UbCounterRead, ...]) -> Tuple[Optional[UbCounterRead], Optional[UbCounterRead]]:
    first = next((s for s in reversed(samples) if s.pass_number == 1), None)
    second = next((s for s in reversed(samples) if s.pass_number == 2), None)
    return first, second


def counters(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "hccn.ub_stat")
    if isinstance(ub, Verdict):
        return [ub]
    limits = grey_thresholds.effective(ctx.desired.inventory.model.thresholds)
    verdicts: List[Verdict] = []
    steady: Dict[str, Dict[str, float]] = {}
    read_once = []
    for key, port in sorted(ub.ports.items()):
        first, second = _pair(port.stat_samples)
        if first is None or second is None or first.at_s is None or second.at_s is None or second.at_s <= first.at_s:
            if port.stat_samples:
                read_once.append(key)
            continue
        interval = second.at_s - first.at_s
        port_rates: Dict[str, float] = {}
        for counter, threshold in JUDGED:
            if counter not in first.counters or counter not in second.counters:
                continue
            rate = counter_rate(counter, first.counters[counter], second.counters[counter], interval)
            if rate.rate_per_s is None:
                continue
            port_rates[counter] = round(rate.rate_per_s, 3)
            if rate.rate_per_s > limits[threshold]:
                verdicts.append(
                    failed(
                        f"UB port {key}: {counter} grows {rate.rate_per_s:,.1f}/s over {interval:.1f}s"
                        f" (threshold {limits[threshold]:g}/s, {threshold})",
                        {
                            "port": key,
                            "counter": counter,
                            "first": rate.first,
                            "second": rate.second,
                            "interval_s": round(interval, 3),
                            "rate_per_s": round(rate.rate_per_s, 3),
                            "threshold": {"name": threshold, "value": limits[threshold]},
                        },
                        FIXES[threshold].format(npu=npu, udie=port.udie, port=port.port),
                        subject=f"{key} {counter}",
                    )
                )
        steady[key] = port_rates
    verdicts += _port_probe_failures(ctx, npu, ("hccn.ub_stat",))
    if verdicts:
        return verdicts
    if not steady:
        if read_once:
            return [skipped(f"UB counters of {', '.join(read_once)} read once (--sample-interval 0): no rates")]
        return [skipped("no UB port counters were read")]
    return [passed(f"UB error counters of {len(steady)} ports steady", {"rates_per_s": steady})]


def sio(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "npu_smi.sio_info")
    if isinstance(ub, Verdict):
        return [ub]
    info = ub.sio
    if info is None:
        errors = ctx.facts.errors_for("npu_smi.sio_info", npu)
        return [could_not_check(errors[0].message if errors else f"npu-smi info -t sio-info -i {npu} was not read")]
    evidence = {"tx_errors": info.tx_errors, "rx_errors": info.rx_errors}
    if info.tx_errors or info.rx_errors:
        return [
            failed(
                f"die-to-die (SIO) link errors: TX {info.tx_errors}, RX {info.rx_errors}",
                evidence,
                FIXES["sio"].format(npu=npu),
            )
        ]
    return [passed("no die-to-die (SIO) link errors", evidence)]


def ping(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "hccn.ub_ping")
    if isinstance(ub, Verdict):
        return [ub]
    pings = ub.pings
    if not pings:
        return [skipped("no UB ping from this NPU (no other card with an EID on the host, or a single card)")]
    evidence = {
        "pings": [
            {"peer": p.peer, "src_eid": p.src_eid, "dst_eid": p.dst_eid, "ok": p.ok, "avg_ms": p.avg_ms} for p in pings
        ]
    }
    verdicts = [
        failed(
            f"UB ping to NPU {p.peer} failed ({p.src_eid} -> {p.dst_eid}): {p.error}",
            {"peer": p.peer, "src_eid": p.src_eid, "dst_eid": p.dst_eid, "error": p.error},
            FIXES["ping"].format(npu=npu, peer=p.peer),
            subject=f"to npu {p.peer}",
        )
        for p in pings
        if not p.ok
    ]
    if verdicts:
        return verdicts
    return [passed(f"UB ping to {len(pings)} other NPUs of the host answered", evidence)]


def _clock(text: Optional[str]) -> Optional[datetime]:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _event_time(event: UbLinkEvent) -> Optional[datetime]:
    parts = parse_asctime(event.time)
    if parts is None:
        return None
    try:
        return datetime(*parts)
    except ValueError:
        return None


def flapped_downs(stat: UbLinkStat) -> Tuple[List[UbLinkEvent], bool]:
    """The LINK_DOWN events that count as flaps (see the module docstring), and whether they were
    windowed by the host's clock (False: every listed flap counts)."""
    events = list(stat.events)
    if events and events[0].state == "LINK_DOWN":
        events = events[1:]  # down now: ub.link's
    downs = [e for e in events if e.state == "LINK_DOWN"]
    now = _clock(stat.current_time)
    if now is None:
        return downs, False
    recent = []
    for event in downs:
        when = _event_time(event)
        if when is None or now - FLAP_WINDOW <= when <= now + timedelta(minutes=5):
            recent.append(event)
    return recent, True


def link_flaps(ctx: NodeContext, npu: int) -> List[Verdict]:
    ub = _ub(ctx, npu, "hccn.ub_link_stat")
    if isinstance(ub, Verdict):
        return [ub]
    if not ub.ports:
        return [skipped("no UB port listed by -dev_info")]
    verdicts: List[Verdict] = _port_probe_failures(ctx, npu, ("hccn.ub_link_stat",))
    judged: Dict[str, Any] = {}
    for key, port in sorted(ub.ports.items()):
        stat = port.link_stat
        if stat is None:
            continue
        downs, windowed = flapped_downs(stat)
        listed = sum(1 for e in stat.events if e.state == "LINK_DOWN")
        evidence = {
            "port": key,
            "current_time": stat.current_time,
            "up_count": stat.up_count,
            "down_count": stat.down_count,
            "flaps": [e.time for e in downs],
        }
        judged[key] = evidence
        fix = FIXES["flaps"].format(npu=npu, udie=port.udie, port=port.port)
        span = "in the last 24 h" if windowed else "in its history (the host's clock was not read)"
        if downs:
            times = "s" if len(downs) != 1 else ""
            message = f"UB port {key} went down and back {len(downs)} time{times} {span} (latest {downs[0].time})"
            verdicts.append(failed(message, evidence, fix, subject=key))
        elif stat.down_count > listed:
            verdicts.append(
                failed(
                    f"UB port {key}: link down count is {stat.down_count} but the history lists {listed}"
                    " (it keeps the last 10 changes): the link has flapped, when is unknown",
                    evidence,
                    fix,
                    subject=key,
                )
            )
    if verdicts:
        return verdicts
    if not judged:
        return [could_not_check(f"-link_stat was not read for NPU {npu}'s UB ports")]
    return [passed(f"no UB link flap on {len(judged)} ports in the last 24 h", {"ports": judged})]


CHECKS: List[Check] = [
    Check(
        "ub.link",
        ("ub", "network"),
        "npu",
        Severity.ERROR,
        "every valid UB port of an Ascend 950 card is UP (not DOWN, not PARTIAL UP)",
        "reseat or replace the UB cable of the port named, and its peer's",
        link,
        probes=("hccn.ub_connect",),
        requires=_NEEDS,
        applies=only_950,
    ),
    Check(
        "ub.lanes",
        ("ub", "network"),
        "npu",
        Severity.ERROR,
        "every UB port runs on all its lanes (-speed Width = Cap, -port_info lanes as configured)",
        "reseat or replace the UB cable of the port named; hccn_tool -g -down_data shows the lane that failed",
        lanes,
        probes=("hccn.ub_dev_info",),
        requires=_NEEDS,
        applies=only_950,
    ),
    Check(
        "ub.counters",
        ("ub", "network"),
        "npu",
        Severity.ERROR,
        "no UB port's CRC, retry or drop counter grows faster than its threshold",
        "reseat or replace the UB cable of the port named; raise the threshold only where the fabric is known to be noisy",
        counters,
        probes=("hccn.ub_dev_info",),
        requires=_NEEDS,
        applies=only_950,
    ),
    Check(
        "ub.ping",
        ("ub", "network"),
        "npu",
        Severity.ERROR,
        "the NPU's first EID reaches every other card's of the host (hccn_tool -t -ub_ping)",
        "look at ub.link and ub.lanes of both cards; reseat the UB cables between them",
        ping,
        probes=(),
        requires=_NEEDS,
        applies=only_950,
    ),
    Check(
        "ub.link_flaps",
        ("ub", "network"),
        "npu",
        Severity.WARNING,
        "no UB port's link went down and back in the last 24 h (-link_stat history)",
        "reseat or replace the UB cable of the port named, and its peer's",
        link_flaps,
        probes=("hccn.ub_dev_info",),
        requires=_NEEDS,
        applies=only_950,
    ),
    Check(
        "ub.sio",
        ("ub",),
        "npu",
        Severity.WARNING,
        "no errors on the link between the NPU's two dies (npu-smi info -t sio-info)",
        "a card fault: watch whether the count grows, and contact the vendor if it does",
        sio,
        probes=(),
        requires=_NEEDS,
        applies=only_950,
    ),
]
