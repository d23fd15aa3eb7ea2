"""Per-NPU network checks: what ``hccn_tool`` reports for each port against the plan.

The order follows the vendor's verification sequence (docs/ascend-reference.md §3.3): address, the file that
re-applies it, gateway and detect IP, link, net_health, the switch behind the port, TLS, flaps,
optics. Each check reads one fact; a probe that failed for that NPU makes it "could not check".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Dict, List, Optional, Tuple

from ascendprep.base.findings import Severity
from ascendprep.base.paths import HCCN_CONF
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import LinkRecord, LinkStat, NpuFacts
from ascendprep.plan import drift
from ascendprep.verify.checks.cluster import tls_command
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.verify.checks.text import parse_asctime

#: A link that went down within this window before the tool's current time counts as a flap.
FLAP_WINDOW = timedelta(hours=24)

_APPLY = "run 'ascendprep plan' and 'ascendprep apply'"
_NEEDS = ("node.reachable", "node.hccn_tool")


def _live(ctx: NodeContext, npu: int) -> NpuFacts:
    return ctx.port(npu).live


def _same(values: Dict[str, Any], planned: Dict[str, Any]) -> Dict[str, Any]:
    """``planned`` itself when ``values`` equal it: one dict in the evidence, not two or three
    equal ones (a converged NPU, ~8 per host held to the end of a 4,096-host verify); the JSON
    is the same. Evidence is never changed after the verdict is made."""
    return planned if values == planned else values


def _cidr(ip: Optional[str], netmask: Optional[str]) -> str:
    return f"{ip}/{netmask}" if ip else "none"


def ip(ctx: NodeContext, npu: int) -> Verdict:
    """The device's address against the plan (its copy in /etc/hccn.conf is network.hccn_conf's;
    a probe that failed makes this "could not check" in the runner, before the drift is read)."""
    want, port = ctx.planned(npu), ctx.port(npu)
    live = port.live
    item = drift.npu_address(want, ctx.facts, port)
    planned = {"ip": want.ip, "netmask": want.netmask}
    evidence = {"live": _same({"ip": live.ip, "netmask": live.netmask}, planned), "planned": planned}
    if item.have["device"] != item.want:
        return failed(
            f"device IP is {_cidr(live.ip, live.netmask)}; the plan says {want.ip}/{want.netmask}", evidence, fix=_APPLY
        )
    return passed(f"device IP {want.ip}/{want.netmask} as planned", evidence)


def hccn_conf(ctx: NodeContext, npu: int) -> Verdict:
    """File ↔ device, with the plan as evidence: a stale file quietly undoes a fix at the next
    driver restart (docs/ascend-reference.md §2). Device ↔ plan is network.ip's (and gateway's, netdetect's)
    job, so a device that is wrong *and* recorded as such is reported once, there. Which keys
    are stale is drift.npu_port's judgement, the one plan acts on too."""
    conf, port, want = ctx.facts.hccn_conf, ctx.port(npu), ctx.planned(npu)
    live = port.live
    unread = ctx.facts.errors_for("hccn_conf")  # the file's error names no NPU, so the runner's NPU filter misses it
    if unread:
        return could_not_check("; ".join(dict.fromkeys(e.message for e in unread)), {"file": None})
    if conf is None:
        return failed(
            f"{HCCN_CONF} does not exist: the device settings are lost at the next driver restart",
            {"file": None},
            fix=_APPLY,
        )
    planned = {"address": want.ip, "netmask": want.netmask, "gateway": want.gateway, "netdetect": want.netdetect}
    in_file = port.in_file
    file_values = {key: in_file.get(key) for key, _ in drift.HCCN_CONF_KEYS}
    live_values = {key: getattr(live, attribute) for key, attribute in drift.HCCN_CONF_KEYS}
    evidence: Dict[str, Any] = {
        "file": _same(file_values, planned),
        "device": _same(live_values, planned),
        "planned": planned,
    }
    problems = []
    for key in port.stale:
        file_value, on_device = file_values[key], live_values[key]
        shown = f"{key}_{npu}={file_value}" if file_value is not None else f"no {key}_{npu}"
        problems.append(f"{shown} but the device has {on_device or 'none'} (plan: {planned[key] or 'none'})")
    doubled = [key for key in conf.duplicates if key.endswith(f"_{npu}")] if conf.duplicates else []
    if doubled:
        evidence["duplicates"] = doubled
        problems.append(f"{', '.join(doubled)} appear more than once (hand edits)")
    if problems:
        return failed(
            f"{HCCN_CONF} is stale: " + "; ".join(problems),
            evidence,
            fix=f"{_APPLY} (it rewrites the file through hccn_tool)",
        )
    return passed(f"{HCCN_CONF} matches the device", evidence)


def _as_planned(item: Optional[drift.Drift], what: str, unplanned: str, live: Optional[str]) -> Verdict:
    """A live hccn value (gateway, detect IP) against the plan; skipped where nothing is planned."""
    if item is None:
        return skipped(unplanned, {"live": live})
    evidence = {"live": live, "planned": item.want}
    if item.have["device"] != item.want:
        return failed(f"{what} is {live or 'not set'}; the plan says {item.want}", evidence, fix=_APPLY)
    return passed(f"{what} {item.want} as planned", evidence)


def gateway(ctx: NodeContext, npu: int) -> Verdict:
    """The device's gateway against the plan; with none planned, one the device still has fails
    (plan removes it: drift.npu_gateway). Its copy in /etc/hccn.conf is network.hccn_conf's."""
    port = ctx.port(npu)
    item = drift.npu_gateway(ctx.planned(npu), ctx.facts, port)
    live = port.live.gateway
    if item is not None and item.want is None:
        evidence = {"live": live, "planned": None}
        if live is not None:
            return failed(
                f"gateway is {live}; the plan has none (device_network.gateway is not set for this NPU)",
                evidence,
                fix=_APPLY,
            )
        return passed("no gateway, as planned", evidence)
    return _as_planned(item, "gateway", "no gateway is planned (device_network.gateway is not set)", live)


def netdetect(ctx: NodeContext, npu: int) -> Verdict:
    port = ctx.port(npu)
    item = drift.npu_netdetect(ctx.planned(npu), ctx.facts, port)
    return _as_planned(item, "detect IP", "no detect IP is planned for this NPU", port.live.netdetect)


def link(ctx: NodeContext, npu: int) -> Verdict:
    state = _live(ctx, npu).link
    if state != "UP":
        return failed(
            f"link status is {state or 'unknown'}",
            {"link": state},
            fix=f"check the cable and the switch port; after an admin down run 'hccn_tool -i {npu} -cfg recovery'",
        )
    return passed("link status is UP", {"link": state})


def net_health(ctx: NodeContext, npu: int) -> Verdict:
    live = _live(ctx, npu)
    evidence = {"net_health": live.net_health, "netdetect": live.netdetect, "link": live.link}
    if live.net_health == "Success":
        return passed("net health status is Success", evidence)
    if live.net_health == "Init":
        fix = f"set a detect IP ({_APPLY})"
    elif live.net_health == "Fault":
        fix = "the port cannot send: fix the link first (network.link)"
    else:
        target = live.netdetect or "the detect IP"
        fix = f"check that {target} answers: hccn_tool -i {npu} -ping -g address {target}"
    return failed(
        f"net health status is {live.net_health or 'unknown'} (detect IP {live.netdetect or 'not set'})",
        evidence,
        fix=fix,
    )


def _no_neighbour(npu: int, link: Optional[str], expected: Optional[Dict[str, str]]) -> Verdict:
    """No LLDP frame came in. With the link up the port and cable work, so the fix is on the
    switch (LLDP off on that port); with the link down there is nothing to hear yet."""
    evidence = {"lldp": None, "link": link, "expected": expected}
    port = f" ({expected['switch']} {expected['port']})" if expected else ""
    if link == "UP":
        return failed(
            "no LLDP neighbour: the link is up but the switch port sends no LLDP",
            evidence,
            fix=f"enable LLDP on the switch port{port} (e.g. 'lldp enable' globally and on the interface), then check with hccn_tool -i {npu} -lldp -g",
        )
    if link == "DOWN":
        return failed(
            "no LLDP neighbour: the link is down",
            evidence,
            fix="bring the link up first (network.link): check the cable and the switch port",
        )
    return failed(
        "no LLDP neighbour (link state unknown)",
        evidence,
        fix=f"check the cable and that LLDP is enabled on the switch port{port} (hccn_tool -i {npu} -lldp -g)",
    )


def lldp(ctx: NodeContext, npu: int) -> Verdict:
    live = _live(ctx, npu)
    neighbour = live.lldp
    cabling = ctx.node.node.cabling.get(npu)
    expected = {"switch": cabling.switch, "port": cabling.port} if cabling else None
    if live.lldp_link_down:
        # hccn_tool refused the query because the port's link is down: nothing was asked of the
        # switch, so whether LLDP is on there is not known (not "no neighbour").
        return failed(
            f"LLDP not read: the link is down (hccn_tool -i {npu} -lldp -g: Execute failed: Link status is down.)",
            {"lldp": None, "lldp_answer": "link down", "link": live.link, "expected": expected},
            fix="bring the link up first (network.link): check the cable and the switch port, then check LLDP again",
        )
    if neighbour is None:
        return _no_neighbour(npu, live.link, expected)
    seen = {"switch": neighbour.system_name, "port": neighbour.port_ifname or neighbour.port_id}
    evidence = {"lldp": seen, "expected": expected}
    if expected and (seen["switch"], seen["port"]) != (expected["switch"], expected["port"]):
        return failed(
            f"cabled to {seen['switch'] or '?'} {seen['port'] or '?'}; the inventory says {expected['switch']} {expected['port']}",
            evidence,
            fix="move the cable to the planned switch port, or correct nodes[].cabling in the inventory",
        )
    return passed(f"LLDP neighbour {seen['switch'] or '?'} {seen['port'] or '?'}", evidence)


def tls(ctx: NodeContext, npu: int) -> Verdict:
    """The effective switch (drift.tls_effective: off without certificates) against the plan."""
    item = drift.npu_tls(ctx.planned(npu), ctx.facts)
    state = _live(ctx, npu).tls
    if item is None:
        return skipped("no TLS switch is planned for this NPU")
    if state is None or item.unknown is not None:
        return failed("TLS state unknown", {"planned": item.want}, fix=_APPLY)
    evidence = {
        "switch": state.switch,
        "certificates": state.certificates,
        "enabled": state.enabled,
        "planned": item.want,
    }
    words = {0: "disabled", 1: "enabled"}
    if item.drifted:
        return failed(
            f"TLS is {words[item.have]}; the plan says {words[item.want]}",
            evidence,
            fix=f"{_APPLY} ({tls_command(ctx.desired.inventory.product.is_950, npu, item.want)})",
        )
    return passed(f"TLS switch {item.want} as planned", evidence)


def _moment(parts: Optional[Tuple[int, int, int, int, int, int]]) -> Optional[datetime]:
    if parts is None:
        return None
    year, month, day, hour, minute, second = parts
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


def recent_downs(records: Tuple[LinkRecord, ...], now_text: Optional[str]) -> Tuple[List[LinkRecord], bool]:
    """LINK DOWN records within :data:`FLAP_WINDOW` of the tool's current time.

    Returns (records, windowed): when the current time cannot be read every DOWN record counts
    and ``windowed`` is False.
    """
    now = _moment(parse_asctime(now_text)) if now_text else None
    downs = [r for r in records if r.state == "DOWN"]
    if now is None:
        return downs, False
    recent = []
    for record in downs:
        when = _moment(parse_asctime(record.time))
        if when is None or now - FLAP_WINDOW <= when <= now + timedelta(minutes=5):
            recent.append(record)
    return recent, True


def link_flaps(ctx: NodeContext, npu: int) -> Verdict:
    stat = _live(ctx, npu).link_stat
    if stat is None:
        return failed("no link history", {}, fix=f"read hccn_tool -i {npu} -link_stat -g by hand")
    downs, windowed = recent_downs(stat.records, stat.current_time)
    evidence = {
        "current_time": stat.current_time,
        "up_count": stat.up_count,
        "down_count": stat.down_count,
        "recent_downs": [r.time for r in downs],
    }
    span = "in the last 24 h" if windowed else "in its history (the tool's current time is unreadable)"
    fix = f"check the optics and fibre: hccn_tool -i {npu} -optical -g (Rx power, LoS/LoL flags); reseat or replace"
    if downs:
        return failed(
            f"link went down {len(downs)} time{'s' if len(downs) != 1 else ''} {span} (latest {downs[0].time})",
            evidence,
            fix=fix,
        )
    unrecorded = _unrecorded_downs(stat)
    if unrecorded and stat.down_count is not None:
        evidence["unrecorded_downs"] = unrecorded
        return failed(
            f"link down count is {stat.down_count} but only {stat.down_count - unrecorded} of those downs are in the "
            f"tool's change records (they keep a bounded history): the link has flapped, when is unknown",
            evidence,
            fix=f"{fix}; after fixing, clear the history with hccn_tool -i {npu} -link_stat -c to see new flaps",
        )
    return passed(f"no link down {span}", evidence)


def _unrecorded_downs(stat: LinkStat) -> int:
    """Downs the ``link down count`` line reports beyond the LINK DOWN records still listed.

    The records are a bounded history, so a count above them is evidence of flaps whose time is
    lost. Older drivers print no count (None): nothing to compare."""
    if not stat.down_count:  # None (not printed) or 0: nothing beyond the records (the usual port)
        return 0
    listed = sum(1 for record in stat.records if record.state == "DOWN")
    return max(0, stat.down_count - listed)


def optical(ctx: NodeContext, npu: int) -> Verdict:
    present = _live(ctx, npu).optical_present
    if present is not True:
        return failed(
            "optical module not present" if present is False else "optical module state unknown",
            {"present": present},
            fix="insert or reseat the optical module (or the DAC cable) of this port",
        )
    return passed("optical module present", {"present": True})


def _planned_anywhere(attribute: str, reason: str) -> Callable[[DesiredState], Optional[str]]:
    def applies(desired: DesiredState) -> Optional[str]:
        wanted = any(getattr(s, attribute) is not None for node in desired.nodes.values() for s in node.hccn)
        return None if wanted else reason

    return applies


def _npu_check(
    id: str,
    title: str,
    run: Any,
    probes: Tuple[str, ...],
    severity: Severity = Severity.ERROR,
    applies: Optional[Callable[[DesiredState], Optional[str]]] = None,
) -> Check:
    return Check(id, ("network",), "npu", severity, title, _APPLY, run, probes=probes, requires=_NEEDS, applies=applies)


def _not_on_950(why: str) -> Callable[[DesiredState], Optional[str]]:
    """These checks read the 910 per-NPU answers, which the Ascend 950 tool does not give (its
    ports are read per UB port: checks/ub.py); on a 950 inventory each is skipped once, saying why."""

    def applies(desired: DesiredState) -> Optional[str]:
        product = desired.inventory.product
        return f"{product.id}: {why}" if product.is_950 else None

    return applies


CHECKS: List[Check] = [
    _npu_check("network.ip", "live device IP and netmask equal the plan", ip, ("hccn.ip",)),
    _npu_check(
        "network.hccn_conf",
        f"{HCCN_CONF} holds the live values (what a driver restart re-applies)",
        hccn_conf,
        ("hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn_conf"),
    ),
    _npu_check("network.gateway", "gateway as planned (none where none is planned)", gateway, ("hccn.gateway",)),
    _npu_check(
        "network.netdetect",
        "detect IP as planned",
        netdetect,
        ("hccn.netdetect",),
        applies=_planned_anywhere("netdetect", "no detect IP is planned"),
    ),
    _npu_check(
        "network.link",
        "link is UP",
        link,
        ("hccn.link",),
        applies=_not_on_950("the UB ports' links are ub.link's"),
    ),
    _npu_check(
        "network.net_health",
        "net health status is Success",
        net_health,
        ("hccn.net_health",),
        applies=_not_on_950("the Ascend 950 HCCN Tool guide documents no -net_health output, so it is not read"),
    ),
    _npu_check(
        "network.lldp",
        "a switch is seen over LLDP (the planned one when cabling is given)",
        lldp,
        ("hccn.lldp",),
        applies=_not_on_950("the Ascend 950 HCCN Tool guide documents no -lldp output, so it is not read"),
    ),
    _npu_check(
        "network.tls",
        "TLS switch as planned",
        tls,
        ("hccn.tls",),
        applies=_planned_anywhere(
            "tls", "the inventory does not set device_network.tls (cluster.tls still checks that all NPUs agree)"
        ),
    ),
    _npu_check(
        "network.link_flaps",
        "no recent link flaps",
        link_flaps,
        ("hccn.link_stat",),
        severity=Severity.WARNING,
        applies=_not_on_950("the UB ports' link history is ub.link_flaps'"),
    ),
    _npu_check(
        "network.optical",
        "optical module present",
        optical,
        ("hccn.optical",),
        applies=_not_on_950("no 950 -optical output is documented"),
    ),
]
