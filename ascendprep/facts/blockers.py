"""The gather's probes for what stops an HCCL job from starting: NPU processes, taken host ports,
the host NICs and the route to the master, as probe units (:mod:`.unit`).

:func:`job_probes` derives from the inventory what to ask (the HCCL port block, the master port
and address); it reaches the units through ``RenderContext.job_probes`` (None: HCCL's default
block and port 29500, no route lookup). A probe that cannot answer
(npu-smi failing, no ss and an unreadable ``/proc/net/tcp``) leaves its fact None with an error,
so the checks say "could not check", never "passed".

Sections: ``npu_smi.info`` (``npu-smi info``), ``ports.ss`` (``ss -tanp FILTER``; exit 127 when
ss is missing), ``ports.proc`` (only then: ``/proc/net/tcp``), ``net.links`` (``ip -o link``),
``net.master`` (``getent ahostsv4 NAME``, only when the master is given by name: what the name
resolves to on this node, as torchrun and gloo there look it up) and ``net.route`` (``ip route
get MASTER_ADDR``: the master's address, or the first address its name resolved to here unless
that is loopback or missing).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.compat.hccl import BASE_PORT_MAX, BASE_PORT_MIN, DEFAULT_BASE_PORT, WIDE_PORT_COUNT
from ascendprep.facts import hostnic, netaddr, npu_procs, ports
from ascendprep.facts.blocker_model import RouteLookup
from ascendprep.facts.failures import dcmi_failure
from ascendprep.facts.netaddr import ip_literal
from ascendprep.facts.ports import PortQuery
from ascendprep.facts.sections import NOT_FOUND_RC, Section, render_attrs
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.unit import NOTHING, VERIFY_ONLY, Given, ProbeUnit, RenderContext, fixed, set_field, text_only

#: The environment variable that moves HCCL's host port block (docs/ascend-reference.md §5.2).
BASE_PORT_ENV = "HCCL_IF_BASE_PORT"


@dataclass(frozen=True)
class JobProbes:
    """What the gather asks about: the ports (HCCL block and master port), the master's address,
    or the master's name when the inventory gives a hostname (resolved on each node)."""

    ports: PortQuery
    master_addr: Optional[str] = None
    master_name: Optional[str] = None

    def __post_init__(self) -> None:
        if self.master_addr is not None and ip_literal(self.master_addr) != self.master_addr:
            raise ValueError(f"master address {self.master_addr!r} is not an IPv4 address")
        if self.master_name is not None and not netaddr.is_hostname(self.master_name):
            raise ValueError(f"master name {self.master_name!r} is not a hostname")


def base_port(env: Dict[str, str]) -> int:
    """``HCCL_IF_BASE_PORT`` from the inventory's ``env:``, else 60000 (an unusable value too:
    the plan reports it; the probe still looks at the default block)."""
    text = str(env.get(BASE_PORT_ENV, "")).strip()
    if text.isdigit() and BASE_PORT_MIN <= int(text) <= min(BASE_PORT_MAX, 65535 - WIDE_PORT_COUNT + 1):
        return int(text)
    return DEFAULT_BASE_PORT


def job_probes(inventory: Any) -> JobProbes:
    """The probes for an inventory: the wide (32-port) HCCL block, so the check can narrow it to
    the block of the CANN the node has; the master port; the master's address when it is one."""
    model = inventory.model
    base = base_port(dict(model.env))
    ranges = [(base, base + WIDE_PORT_COUNT - 1)]
    master_port = model.training.master_port
    if not base <= master_port < base + WIDE_PORT_COUNT:
        ranges.append((master_port, master_port))
    master = inventory.master.host
    address = ip_literal(master)
    return JobProbes(PortQuery(tuple(ranges)), address, master if address is None else None)


def _ranges_attr(query: PortQuery) -> str:
    """The section attribute naming the queried ports: ``ranges=60000-60031+29500-29500``."""
    return render_attrs(ranges="+".join(f"{low}-{high}" for low, high in query.ranges))


def _query(attrs: Dict[str, str]) -> PortQuery:
    """The ports a section asked about (its ``ranges`` attribute); the parsers narrow to them
    again, so an ss that ignored the filter cannot widen the answer."""
    ranges = attrs.get("ranges", "")
    parsed = []
    for part in ranges.split("+") if ranges else ():
        low, _, high = part.partition("-")
        if low.isdigit() and high.isdigit():
            parsed.append((int(low), int(high)))
    if not parsed:
        raise UnexpectedOutput("the section does not say which ports it asked about")
    return PortQuery(tuple(parsed))


#: Without an inventory: HCCL's default block (wide, the check narrows it) and port 29500.
DEFAULT_JOB_PROBES = JobProbes(
    PortQuery(((DEFAULT_BASE_PORT, DEFAULT_BASE_PORT + WIDE_PORT_COUNT - 1), (29500, 29500)))
)


def _jobs(ctx: RenderContext) -> JobProbes:
    given = getattr(ctx, "job_probes", None)
    return given if given is not None else DEFAULT_JOB_PROBES


# -- the units ----------------------------------------------------------------------------------

NPU_SMI_INFO = ProbeUnit(
    section="npu_smi.info",
    comment="What stops a job from starting: processes on the NPUs (npu-smi info's process table).",
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info',
    guard='[ -n "$AP_NPUSMI" ]',
    probe=fixed("npu_smi.procs"),
    describe=fixed("npu-smi info"),
    answered=lambda section: section.rc == 0 and dcmi_failure(section.text) is None,
    parse=text_only(npu_procs.parse_process_table),
    fill=set_field("npu_processes"),
    fact="npu_processes",
    phases=VERIFY_ONLY,
)


def _render_ports(ctx: RenderContext) -> List[str]:
    jobs = _jobs(ctx)
    q = shlex.quote
    ranges = q(_ranges_attr(jobs.ports))
    return [
        "",
        "# Sockets on HCCL's host ports and the master port: ss, or /proc/net/tcp where ss is missing.",
        *ports.render_functions(jobs.ports).rstrip("\n").split("\n"),
        f"ap_run ports.ss {ranges} ap_installed ss ap_tool ss -tanp {q(jobs.ports.ss_filter())}",
        'if [ "$ap_rc" -eq 127 ]; then',
        f"\tap_run ports.proc {ranges} ap_proc_ports",
        "fi",
    ]


PORTS_SS = ProbeUnit(
    section="ports.ss",
    command=lambda ctx: "",
    render=_render_ports,
    probe=fixed("ports"),
    describe=fixed("ss -tanp"),
    settle=lambda section: NOTHING if section.rc == NOT_FOUND_RC else None,  # no ss: ports.proc follows
    parse=lambda stdout, where: ports.parse_ss(stdout, _query(dict(where.attrs))),
    fill=set_field("port_sockets"),
    fact="port_sockets",
    phases=VERIFY_ONLY,
)

#: Rendered by :data:`PORTS_SS` (only where ss is missing).
PORTS_PROC = ProbeUnit(
    section="ports.proc",
    command=lambda ctx: "",
    render=lambda ctx: [],
    probe=fixed("ports"),
    describe=fixed("ss is not installed; reading /proc/net/tcp"),
    parse=lambda stdout, where: ports.parse_proc_ports(stdout, _query(dict(where.attrs))),
    fill=set_field("port_sockets"),
    fact="port_sockets",
    phases=VERIFY_ONLY,
)

NET_LINKS = ProbeUnit(
    section="net.links",
    command=lambda ctx: "ap_tool ip -o link show",
    describe=fixed("ip -o link show"),
    parse=text_only(hostnic.parse_ip_link),
    fill=set_field("links"),
    fact="links",
    phases=VERIFY_ONLY,
)


def _render_route(ctx: RenderContext) -> List[str]:
    """The route to the master: its address (validated as one: safe in an attribute), or where
    the inventory names it, the first address the name resolves to on this node (getent, under
    the script's time limit and output cap), kept only when it is a dotted quad outside
    127.0.0.0/8: a loopback or missing answer is the check's finding, not a route to look up."""
    jobs = _jobs(ctx)
    return [
        f"AP_MASTER={shlex.quote(jobs.master_addr or '')}",
        f"AP_MASTER_NAME={shlex.quote(jobs.master_name or '')}",
        'if [ -n "$AP_MASTER_NAME" ]; then',
        '\tap_run net.master " name=$AP_MASTER_NAME" ap_tool getent ahostsv4 "$AP_MASTER_NAME"',
        '\tif [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then read -r AP_MASTER ap_rest <"$AP_TMP/out" || :; fi',
        "\tcase $AP_MASTER in 127.* | *[!0-9.]*) AP_MASTER= ;; esac",
        "fi",
        'if [ -n "$AP_MASTER" ]; then',
        '\tap_run net.route " dest=$AP_MASTER" ap_tool ip route get "$AP_MASTER"',
        "fi",
    ]


#: Rendered by :data:`NET_ROUTE` (only where the master is named by hostname).
NET_MASTER = ProbeUnit(
    section="net.master",
    command=lambda ctx: "",
    render=lambda ctx: [],
    describe=lambda where: f"getent ahostsv4 {where.attrs.get('name', '?')}",
    settle=lambda section: Given(()) if section.rc == netaddr.GETENT_NOT_FOUND_RC else None,
    parse=text_only(netaddr.parse_getent_ahosts),
    fill=set_field("master_addresses"),
    fact="master_addresses",
    phases=VERIFY_ONLY,
)


def _settle_route(section: Section) -> Optional[Given]:
    """``RTNETLINK answers: Network is unreachable``: the answer is "no route", not a failure."""
    if section.rc not in (0, None) and "unreachable" in section.text.lower():
        return Given(RouteLookup(section.attrs.get("dest", "")))
    return None


NET_ROUTE = ProbeUnit(
    section="net.route",
    command=lambda ctx: "",
    render=_render_route,
    describe=lambda where: f"ip route get {where.attrs.get('dest', '?')}",
    settle=_settle_route,
    parse=lambda stdout, where: hostnic.parse_route_get(stdout, where.attrs.get("dest", "")),
    fill=set_field("route_to_master"),
    fact="route_to_master",
    phases=VERIFY_ONLY,
)

#: In the order the script runs them (after every other probe: ``$AP_NPUSMI`` is set by then).
JOB_UNITS: Tuple[ProbeUnit, ...] = (NPU_SMI_INFO, PORTS_SS, PORTS_PROC, NET_LINKS, NET_MASTER, NET_ROUTE)
