"""The gather's probes of an Ascend 950 host's UB ports: per device, then per port, mode first.

On 950 the 910 per-NPU queries (``hccn_tool -i N -speed -g`` ...) are the wrong syntax: the tool
wants the mode first and, for port commands, the die and the port (``hccn_tool -g -speed -i N -u
U -p P``; hicann/driver ``docs/en/Ascend_950_HCCN_Tool``). The script tells a 950 host by ``npu-smi
info -l`` printing ``Product Name : A5 PCIe Card`` (the 950 npu-smi manual's example) and then
runs, instead of the 910 loop, per device:

* ``hccn_tool -g -ub_connect -i N`` (the device's UB interconnect state, per valid port);
* ``hccn_tool -g -dev_info -i N`` (the ports, netdevs and EIDs; its port table lists the
  ``UDie:Port`` pairs the per-port queries then ask about);
* ``npu-smi info -t sio-info -i N`` (die-to-die errors; card level, no ``-c`` on 950);

and per port ``-speed``, ``-fec``, ``-link_stat`` (with the host's local clock, ``now=``: the
950 answer prints no current time to window its flaps by), ``-port_info`` and ``-stat``, the last read a
second time at the script's end like the 910 counters (:mod:`ascendprep.facts.port_stats`), so
that verify judges their growth rather than their totals. Then the UB ping matrix: every device
pings, from its first EID, the first EID of every other device of the host (``hccn_tool -t
-ub_ping``). The Atlas 350's UB links join the cards of one server (2- or 4-card mesh), so the
matrix is per host; each device sends one ping at a time, within the tool's eight at once.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from ascendprep.facts import (
    sio_info,
    ub_connect,
    ub_dev_info,
    ub_fec,
    ub_link_stat,
    ub_ping,
    ub_port_info,
    ub_speed,
    ub_stat,
)
from ascendprep.facts.port_stats import FIRST, sample_time
from ascendprep.facts.sections import Section, id_number
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.ub_model import UbCounterRead, UbFacts, UbLinkStat, UbPing, UbPortFacts, port_key
from ascendprep.facts.unit import BOTH, HOST, VERIFY_ONLY, Draft, Given, ProbeUnit, RenderContext, Where

#: The shell test that holds on a 950 host (``AP_A5`` is set from ``npu-smi info -l``).
IS_A5 = '[ -n "$AP_A5" ]'
#: What ``npu-smi info -l`` prints for a 950 card (hicann/driver Ascend_950_npu-smi,
#: querying-all-npu-devices.md); the script sets ``AP_A5`` when it sees it.
A5_PRODUCT_NAME = "A5 PCIe Card"

_PORT_QUERIES = (
    ("hccn.ub_speed", "-speed"),
    ("hccn.ub_fec", "-fec"),
    ("hccn.ub_link_stat", "-link_stat"),
    ("hccn.ub_port_info", "-port_info"),
)
STAT_SECTION, STAT2_SECTION = "hccn.ub_stat", "hccn.ub_stat2"
#: Packets per UB ping and the gap between them (ms): 3 packets 100 ms apart, ~0.3 s a pair.
PING_COUNT, PING_INTERVAL_MS = 3, 100

SHELL_FUNCTIONS = r"""# ap_ub_probes: the UB queries of 950 device $ap_dev (ap_each_npu runs it per device): the device's
# interconnect state and port table, its die-to-die link, then each port of the table in turn.
ap_ub_probes() {
	ap_run hccn.ub_connect " npu=$ap_dev" ap_hccn -g -ub_connect -i "$ap_dev"
	ap_run hccn.ub_dev_info " npu=$ap_dev" ap_hccn -g -dev_info -i "$ap_dev"
	ap_ub_ports=
	if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then
		ap_ub_ports=$(sed -n 's/^| *\([0-9][0-9]*\) *| *\([0-9][0-9]*\) *|.*/\1:\2/p' "$AP_TMP/out")
	fi
	printf '%s\n' $ap_ub_ports >"$AP_ROOT/ub_ports.$ap_dev"
	if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then
		# the device's first EID (index 0 of its UDMA table), for the ping matrix: hex and colons only
		ap_ub_eid=$(sed -n 's/^| *udma[0-9]* *| *0 *| *\([0-9A-Fa-f:]*\) *|$/\1/p' "$AP_TMP/out" | head -n 1)
		case $ap_ub_eid in '' | *[!0-9A-Fa-f:]*) ;; *) printf '%s\n' "$ap_ub_eid" >"$AP_ROOT/ub_eid.$ap_dev" ;; esac
	fi
	if [ -n "$AP_NPUSMI" ]; then
		ap_run npu_smi.sio_info " npu=$ap_dev" ap_tool "$AP_NPUSMI" info -t sio-info -i "$ap_dev"
	fi
	for ap_up in $ap_ub_ports; do
		ap_u=${ap_up%:*} ap_p=${ap_up#*:}
		ap_run hccn.ub_speed " npu=$ap_dev udie=$ap_u port=$ap_p" ap_hccn -g -speed -i "$ap_dev" -u "$ap_u" -p "$ap_p"
		ap_run hccn.ub_fec " npu=$ap_dev udie=$ap_u port=$ap_p" ap_hccn -g -fec -i "$ap_dev" -u "$ap_u" -p "$ap_p"
		ap_lnow=$(date +%Y-%m-%dT%H:%M:%S 2>/dev/null)
		case $ap_lnow in *[!0-9T:-]* | '') ap_lnow=none ;; esac
		ap_run hccn.ub_link_stat " npu=$ap_dev udie=$ap_u port=$ap_p now=$ap_lnow" ap_hccn -g -link_stat -i "$ap_dev" -u "$ap_u" -p "$ap_p"
		ap_run hccn.ub_port_info " npu=$ap_dev udie=$ap_u port=$ap_p" ap_hccn -g -port_info -i "$ap_dev" -u "$ap_u" -p "$ap_p"
		ap_now
		printf '%s\n' "$AP_NOW" >"$AP_ROOT/ub_stat_t.$ap_dev"
		ap_run hccn.ub_stat " npu=$ap_dev udie=$ap_u port=$ap_p pass=1 t=$AP_NOW" ap_hccn -g -stat -i "$ap_dev" -u "$ap_u" -p "$ap_p"
	done
}

# ap_ub_pings: UB-ping from device $ap_dev's first EID to every other device's on this host, one
# at a time per device (the tool allows 8 at once per device; ap_each_npu runs the devices side by side).
ap_ub_pings() {
	if [ ! -r "$AP_ROOT/ub_eid.$ap_dev" ]; then return 0; fi
	read -r ap_src <"$AP_ROOT/ub_eid.$ap_dev"
	for ap_peer in $AP_DEVS; do
		if [ "$ap_peer" = "$ap_dev" ] || [ ! -r "$AP_ROOT/ub_eid.$ap_peer" ]; then continue; fi
		read -r ap_dst <"$AP_ROOT/ub_eid.$ap_peer"
		ap_run hccn.ub_ping " npu=$ap_dev peer=$ap_peer src=$ap_src dst=$ap_dst" ap_hccn -t -ub_ping -i "$ap_dev" -src_eid "$ap_src" -dst_eid "$ap_dst" -cnt PING_COUNT -interval PING_INTERVAL_MS
	done
}

# ap_ub_stat_second SECONDS: every UB port's counters again, SECONDS after its device's first reads.
ap_ub_stat_second() {
	for ap_dev in $AP_DEVS; do
		ap_t1=
		if [ -r "$AP_ROOT/ub_stat_t.$ap_dev" ]; then read -r ap_t1 <"$AP_ROOT/ub_stat_t.$ap_dev"; fi
		case $ap_t1 in '' | *[!0-9]*) continue ;; esac
		ap_stat_wait "$ap_t1" "$1"
		for ap_up in $(cat "$AP_ROOT/ub_ports.$ap_dev"); do
			ap_u=${ap_up%:*} ap_p=${ap_up#*:}
			ap_now
			ap_run hccn.ub_stat2 " npu=$ap_dev udie=$ap_u port=$ap_p pass=2 t=$AP_NOW" ap_hccn -g -stat -i "$ap_dev" -u "$ap_u" -p "$ap_p"
		done
	done
}
""".replace("PING_COUNT", str(PING_COUNT)).replace("PING_INTERVAL_MS", str(PING_INTERVAL_MS))


class _UbUnit(ProbeUnit):
    """A per-device (or per-port) 950 read rendered as a host unit, outside the 910 per-NPU loop:
    its sections still carry ``npu=``, which its errors and facts are filed under."""

    def npu_of(self, where: Where) -> Optional[int]:
        return where.npu

    def _missing_attrs(self, where: Where) -> Optional[str]:
        return None if where.npu is not None else "section without an NPU id"


def _npu(where: Where) -> int:
    if where.npu is None:  # the unit refuses such a section before parsing it
        raise UnexpectedOutput("section without an NPU id")
    return where.npu


def _ub(draft: Draft, where: Where) -> UbFacts:
    current = draft.npu(_npu(where)).get("ub")
    return current if current is not None else UbFacts()


def _store(draft: Draft, where: Where, ub: UbFacts) -> None:
    draft.npu(_npu(where))["ub"] = ub


def _fill_device(field: str) -> Callable[[Draft, Where, Any], None]:
    def fill(draft: Draft, where: Where, value: Any) -> None:
        _store(draft, where, replace(_ub(draft, where), **{field: value}))

    return fill


def _port_of(where: Where) -> Tuple[int, int]:
    udie, port = where.int_attr("udie"), where.int_attr("port")
    if udie is None or port is None:
        raise UnexpectedOutput("section without udie/port")
    return udie, port


def _port_parse(parse: Callable[[str], Tuple[int, int, Any]]) -> Callable[[str, Where], Any]:
    def unit_parse(stdout: str, where: Where) -> Any:
        asked = _port_of(where)
        udie, port, value = parse(stdout)
        if (udie, port) != asked:
            raise UnexpectedOutput(f"answer for port {port_key(udie, port)}, asked about {port_key(*asked)}")
        return value

    return unit_parse


def _plain_port_parse(parse: Callable[[str], Any]) -> Callable[[str, Where], Any]:
    def unit_parse(stdout: str, where: Where) -> Any:
        _port_of(where)
        return parse(stdout)

    return unit_parse


_CLOCK_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def _parse_link_stat(stdout: str, where: Where) -> UbLinkStat:
    """The port's history, with the host's clock of the read when the section carries one."""
    _port_of(where)
    stat = ub_link_stat.parse_link_stat(stdout)
    now = where.attrs.get("now", "")
    return replace(stat, current_time=now) if _CLOCK_RE.match(now) else stat


def _fill_port(field: str) -> Callable[[Draft, Where, Any], None]:
    def fill(draft: Draft, where: Where, value: Any) -> None:
        udie, port = _port_of(where)
        ub = _ub(draft, where)
        key = port_key(udie, port)
        facts = ub.ports.get(key) or UbPortFacts(udie=udie, port=port)
        if field == "stat_samples":
            facts = replace(facts, stat_samples=facts.stat_samples + (value,))
        else:
            facts = replace(facts, **{field: value})
        _store(draft, where, replace(ub, ports={**ub.ports, key: facts}))

    return fill


def _parse_stat(stdout: str, where: Where) -> UbCounterRead:
    _port_of(where)
    counters = ub_stat.parse_ub_stat(stdout)
    if counters["port_id"] != where.int_attr("port"):
        raise UnexpectedOutput(f"counters of port {counters['port_id']}, asked about port {where.int_attr('port')}")
    return UbCounterRead(
        pass_number=where.int_attr("pass") or FIRST, at_s=sample_time(where.attrs.get("t", "")), counters=counters
    )


def _port_describe(flag: str) -> Callable[[Where], str]:
    return lambda where: (
        f"hccn_tool -g {flag} -i {where.npu} -u {where.attrs.get('udie', '?')} -p {where.attrs.get('port', '?')}"
    )


def _a5_guard(ctx: RenderContext) -> str:
    """The 950 reads run on a host rendered for a 950 inventory, or one whose npu-smi names an A5 card."""
    return 'if [ -n "$AP_HCCN" ]; then' if ctx.is_950 else f'if [ -n "$AP_HCCN" ] && {IS_A5}; then'


def _render_probes(ctx: RenderContext) -> List[str]:
    return [
        SHELL_FUNCTIONS,
        "# Ascend 950 (A5): the UB ports, per device then per port (the 910 per-NPU loop did not run).",
        "AP_UB_PROBED=1",
        _a5_guard(ctx),
        "\tap_each_npu ap_ub_probes",
        "\tap_each_npu ap_ub_pings",
        "fi",
    ]


def _render_second(ctx: RenderContext) -> List[str]:
    interval = ctx.sample_interval
    if interval <= 0:
        return []
    return [
        f"# UB port counters, second read: {interval}s after each device's first (their growth is a rate).",
        _a5_guard(ctx),
        f"\tap_ub_stat_second {int(interval)}",
        "fi",
    ]


def _render_dev_info(ctx: RenderContext) -> List[str]:
    """``-dev_info`` alone, where the full UB block (which reads it too) does not run: plan reads
    the EIDs of a 950 inventory's NPUs for its rank table 2.0 and nothing else of the UB ports."""
    if not ctx.is_950:
        return []
    return [
        "# Ascend 950: each device's UB ports and EIDs (hccn_tool -g -dev_info), for the rank table 2.0.",
        "ap_ub_dev_info() {",
        '\tap_run hccn.ub_dev_info " npu=$ap_dev" ap_hccn -g -dev_info -i "$ap_dev"',
        "}",
        'if [ -z "${AP_UB_PROBED-}" ] && [ -n "$AP_HCCN" ]; then',
        "\tap_each_npu ap_ub_dev_info",
        "fi",
    ]


def _nothing(ctx: RenderContext) -> List[str]:
    return []  # rendered by UB_CONNECT's block (ap_ub_probes)


UB_CONNECT = _UbUnit(
    section="hccn.ub_connect",
    scope=HOST,
    command=lambda ctx: 'ap_hccn -g -ub_connect -i "$ap_dev"',
    render=_render_probes,
    describe=lambda where: f"hccn_tool -g -ub_connect -i {where.npu}",
    parse=lambda stdout, where: ub_connect.parse_ub_connect(stdout),
    fill=_fill_device("connect"),
    fact="npus[devid].ub.connect",
    phases=VERIFY_ONLY,
)

UB_DEV_INFO = _UbUnit(
    section="hccn.ub_dev_info",
    scope=HOST,
    command=lambda ctx: 'ap_hccn -g -dev_info -i "$ap_dev"',
    render=_render_dev_info,
    describe=lambda where: f"hccn_tool -g -dev_info -i {where.npu}",
    parse=lambda stdout, where: ub_dev_info.parse_dev_info(stdout),
    fill=_fill_device("dev_info"),
    fact="npus[devid].ub.dev_info",
    # plan reads it too on a 950 inventory: the rank table 2.0's addresses are these EIDs
    phases=BOTH,
)

SIO_INFO = _UbUnit(
    section="npu_smi.sio_info",
    scope=HOST,
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -t sio-info -i "$ap_dev"',
    render=_nothing,
    describe=lambda where: f"npu-smi info -t sio-info -i {where.npu}",
    parse=lambda stdout, where: sio_info.parse_sio_info(stdout),
    fill=_fill_device("sio"),
    fact="npus[devid].ub.sio",
    phases=VERIFY_ONLY,
)

_PORT_PARSERS: Dict[str, Tuple[Callable[[str, Where], Any], str]] = {
    "hccn.ub_speed": (_port_parse(ub_speed.parse_speed), "speed"),
    "hccn.ub_fec": (_port_parse(ub_fec.parse_fec), "fec"),
    "hccn.ub_link_stat": (_parse_link_stat, "link_stat"),
    "hccn.ub_port_info": (_plain_port_parse(ub_port_info.parse_port_info), "port_info"),
}


def _port_unit(section: str, flag: str) -> ProbeUnit:
    parse, field = _PORT_PARSERS[section]
    return _UbUnit(
        section=section,
        scope=HOST,
        command=lambda ctx: f'ap_hccn -g {flag} -i "$ap_dev" -u "$ap_u" -p "$ap_p"',
        render=_nothing,
        describe=_port_describe(flag),
        parse=parse,
        fill=_fill_port(field),
        fact=f"npus[devid].ub.ports['udie/port'].{field}",
        phases=VERIFY_ONLY,
    )


PORT_UNITS = tuple(_port_unit(section, flag) for section, flag in _PORT_QUERIES)

UB_STAT = _UbUnit(
    section=STAT_SECTION,
    scope=HOST,
    command=lambda ctx: 'ap_hccn -g -stat -i "$ap_dev" -u "$ap_u" -p "$ap_p"',
    render=_nothing,
    describe=_port_describe("-stat"),
    parse=_parse_stat,
    fill=_fill_port("stat_samples"),
    fact="npus[devid].ub.ports['udie/port'].stat_samples[0] (pass 1)",
    phases=VERIFY_ONLY,
)

UB_STAT2 = _UbUnit(
    section=STAT2_SECTION,
    scope=HOST,
    command=lambda ctx: 'ap_hccn -g -stat -i "$ap_dev" -u "$ap_u" -p "$ap_p"',
    render=_render_second,
    probe=lambda where: STAT_SECTION,
    describe=_port_describe("-stat"),
    parse=_parse_stat,
    fill=_fill_port("stat_samples"),
    fact="npus[devid].ub.ports['udie/port'].stat_samples[1] (pass 2)",
    phases=VERIFY_ONLY,
)


def _settle_ping(section: Section) -> Optional[Given]:
    """Every answer is a ping result (a failed or unreadable ping is a failed ping, not an error)."""
    attrs = section.attrs
    peer = id_number(attrs.get("peer", ""))
    return Given(ub_ping.parse_ub_ping(attrs.get("src", ""), attrs.get("dst", ""), section.rc, section.stdout, peer))


def _fill_ping(draft: Draft, where: Where, ping: UbPing) -> None:
    ub = _ub(draft, where)
    _store(draft, where, replace(ub, pings=ub.pings + (ping,)))


UB_PING = _UbUnit(
    section="hccn.ub_ping",
    scope=HOST,
    command=lambda ctx: 'ap_hccn -t -ub_ping -i "$ap_dev" -src_eid "$ap_src" -dst_eid "$ap_dst"',
    render=_nothing,
    describe=lambda where: (
        f"hccn_tool -t -ub_ping -i {where.npu} -src_eid {where.attrs.get('src', '?')}"
        f" -dst_eid {where.attrs.get('dst', '?')} -cnt {PING_COUNT} -interval {PING_INTERVAL_MS}"
    ),
    parse=lambda stdout, where: None,
    settle=_settle_ping,
    fill=_fill_ping,
    fact="npus[devid].ub.pings[]",
    phases=VERIFY_ONLY,
)

#: The units run early (after the 910 per-NPU loop's place), in the order the block runs them.
UNITS = (UB_CONNECT, UB_DEV_INFO, SIO_INFO, *PORT_UNITS, UB_STAT, UB_PING)
