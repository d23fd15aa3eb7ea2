"""The gather's probes for what stops an HCCL job from starting: NPU processes, taken host ports,
the host NICs and the route to the master (issue 17).

:func:`job_probes` derives from the inventory what to ask (the HCCL port block, the master port
and address); :func:`render_lines` and :func:`render_functions` are the script's part;
:func:`read_section` turns each section into fact fields or a :class:`ProbeError`. A probe that
cannot answer (npu-smi failing, no ss and an unreadable ``/proc/net/tcp``) leaves its fact None
with an error, so the checks say "could not check", never "passed".

Sections: ``npu_smi.info`` (``npu-smi info``), ``ports.ss`` (``ss -tanp FILTER``; exit 127 when
ss is missing), ``ports.proc`` (only then: ``/proc/net/tcp``), ``net.links`` (``ip -o link``)
and ``net.route`` (``ip route get MASTER_ADDR``, only when the master is given by address).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.compat.hccl import BASE_PORT_MAX, BASE_PORT_MIN, DEFAULT_BASE_PORT, WIDE_PORT_COUNT
from ascendprep.facts import ProbeError
from ascendprep.jobfacts import RouteLookup
from ascendprep.probes import hostnic, npu_procs, ports
from ascendprep.probes.failures import classify_failure, dcmi_failure
from ascendprep.probes.netaddr import ip_literal
from ascendprep.probes.ports import PortQuery
from ascendprep.probes.sections import NOT_FOUND_RC, Section, render_attrs
from ascendprep.probes.text import UnexpectedOutput, first_line

#: The environment variable that moves HCCL's host port block (reference §5.2).
BASE_PORT_ENV = "HCCL_IF_BASE_PORT"

#: section → (probe name in ProbeErrors, command as messages name it).
SECTIONS: Dict[str, Tuple[str, str]] = {
    "npu_smi.info": ("npu_smi.procs", "npu-smi info"),
    "ports.ss": ("ports", "ss -tanp"),
    "ports.proc": ("ports", "reading /proc/net/tcp"),
    "net.links": ("net.links", "ip -o link show"),
    "net.route": ("net.route", "ip route get MASTER_ADDR"),
}


@dataclass(frozen=True)
class JobProbes:
    """What the gather asks about: the ports (HCCL block and master port), the master's address."""

    ports: PortQuery
    master_addr: Optional[str] = None

    def __post_init__(self) -> None:
        if self.master_addr is not None and ip_literal(self.master_addr) != self.master_addr:
            raise ValueError(f"master address {self.master_addr!r} is not an IPv4 address")


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
    return JobProbes(PortQuery(tuple(ranges)), ip_literal(inventory.master.host))


def render_functions(jobs: JobProbes) -> str:
    return ports.render_functions(jobs.ports)


def render_lines(jobs: JobProbes) -> str:
    """Script lines; they run after the NPU probes (``$AP_NPUSMI`` is npu-smi's path or empty)."""
    q = shlex.quote
    ranges = _ranges_attr(jobs.ports)
    lines = [
        "",
        "# What stops a job from starting: processes on the NPUs, taken host ports, host NICs.",
        'if [ -n "$AP_NPUSMI" ]; then',
        "\tap_run npu_smi.info '' ap_tool \"$AP_NPUSMI\" info",
        "fi",
        f"ap_run ports.ss {q(ranges)} ap_installed ss ap_tool ss -tanp {q(jobs.ports.ss_filter())}",
        'if [ "$ap_rc" -eq 127 ]; then',
        f"\tap_run ports.proc {q(ranges)} ap_proc_ports",
        "fi",
        "ap_run net.links '' ap_tool ip -o link show",
    ]
    if jobs.master_addr is not None:
        lines.append(f"ap_run net.route {q(render_attrs(dest=jobs.master_addr))} ap_tool ip route get {q(jobs.master_addr)}")
    return "\n".join(lines) + "\n"


def read_section(section: Section, timeout_s: Optional[int]) -> Tuple[Dict[str, Any], List[ProbeError]]:
    """Fact fields (for HostFacts) and errors from one of :data:`SECTIONS`. Never raises."""
    probe, what = SECTIONS[section.name]
    if section.name == "net.route":
        what = f"ip route get {section.attrs.get('dest', '?')}"

    def failure() -> Tuple[Dict[str, Any], List[ProbeError]]:
        return {}, [classify_failure(section, probe, what, timeout_s=timeout_s)]

    try:
        if section.name == "npu_smi.info":
            if section.rc != 0 or dcmi_failure(section.text):
                return failure()
            return {"npu_processes": npu_procs.parse_process_table(section.stdout)}, []
        if section.name == "ports.ss":
            if section.rc == NOT_FOUND_RC:
                return {}, []  # no ss: the /proc section follows
            if section.rc != 0:
                return failure()
            return {"port_sockets": ports.parse_ss(section.stdout, _query(section))}, []
        if section.name == "ports.proc":
            if section.rc != 0:
                return {}, [ProbeError(probe, "error", f"ss is not installed and {what} failed: "
                                                       f"{first_line(section.stderr) or f'exit {section.rc}'}")]
            return {"port_sockets": ports.parse_proc_ports(section.stdout, _query(section))}, []
        if section.name == "net.links":
            if section.rc != 0:
                return failure()
            return {"links": hostnic.parse_ip_link(section.stdout)}, []
        dest = section.attrs.get("dest", "")
        if section.rc != 0 and "unreachable" in section.text.lower():
            return {"route_to_master": RouteLookup(dest)}, []
        if section.rc != 0:
            return failure()
        return {"route_to_master": hostnic.parse_route_get(section.stdout, dest)}, []
    except (UnexpectedOutput, ValueError) as exc:
        return {}, [ProbeError(probe, "error", f"{what}: {exc}")]


def _ranges_attr(query: PortQuery) -> str:
    """The section attribute naming the queried ports: ``ranges=60000-60031+29500-29500``."""
    return render_attrs(ranges="+".join(f"{low}-{high}" for low, high in query.ranges))


def _query(section: Section) -> PortQuery:
    """The ports a section asked about (its ``ranges`` attribute); the parsers narrow to them
    again, so an ss that ignored the filter cannot widen the answer."""
    ranges = section.attrs.get("ranges", "")
    parsed = []
    for part in ranges.split("+") if ranges else ():
        low, _, high = part.partition("-")
        if low.isdigit() and high.isdigit():
            parsed.append((int(low), int(high)))
    if not parsed:
        raise UnexpectedOutput("the section does not say which ports it asked about")
    return PortQuery(tuple(parsed))
