"""The edge of verify that talks to hosts: gather facts, then run the ping phase. Nothing else here
touches a host; the checks only read what this returns.

Round trips: one gather script per host, then one ping script per host that has pings to send
(on a node, each NPU's pings run in turn and the NPUs side by side; nodes run at once).
So verify costs at most 2 SSH execs per host, and a dead host costs its connect timeout once:
the Session remembers the failure for the ping phase.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Callable, Dict, Optional, Tuple

from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import PingResult
from ascendprep.facts.ping import parse_ping_output, render_ping_script
from ascendprep.remote.access import HostAccess
from ascendprep.remote.transport import Transport
from ascendprep.run.execvia import ExecVia, wrap_step
from ascendprep.run.fanout import HostOutcome, Session
from ascendprep.run.hccs import run_hccs
from ascendprep.run.hosts import Gathered, gather_facts
from ascendprep.run.progress import Progress
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.mesh import PingPlan, plan_pings

#: Seconds one ``hccn_tool -ping`` may take (3 echoes; lost ones wait ~1 s each on real devices).
PING_TIMEOUT_S = 15
#: Extra tries with back-off (1, 2, 4, 8, 8 s) when hccn_tool answers that it is busy.
PING_BUSY_RETRIES = 5

ProgressFactory = Callable[[str], Optional[Progress]]


@dataclass(frozen=True)
class PingRun:
    """One node's ping script: its parsed results and the raw transcript (kept as evidence)."""

    results: Tuple[PingResult, ...]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def ping_script_budget(count: int, per_ping: int = PING_TIMEOUT_S, retries: int = PING_BUSY_RETRIES) -> float:
    """Wall-clock limit for a script of ``count`` pings: each may run to its timeout after busy retries."""
    return 30.0 + count * (per_ping + 3 + retries)


def run_pings(
    session: Session,
    plan: PingPlan,
    progress: Optional[Progress] = None,
    exec_via: Optional[ExecVia] = None,
    mode_first: bool = False,
) -> Dict[str, HostOutcome[PingRun]]:
    """Run each source node's pings (one script per node, all nodes at once), through ``exec_via`` if given.
    ``mode_first``: an Ascend 950 cluster, whose tool pings ``-t -ping -i N -src_address S -dst_address D``."""
    work = plan.by_source()

    def job(transport: Transport, access: HostAccess) -> PingRun:
        pairs = work[access.name]
        sources = None
        if mode_first:
            sources = {p.source.npu: p.source.ip for p in plan.pairs if p.source and p.source.node == access.name}
        script = render_ping_script(
            pairs, per_command_timeout=PING_TIMEOUT_S, busy_retries=PING_BUSY_RETRIES, sources=sources
        )
        script = wrap_step(script, exec_via, access.name, "ping")
        limit = max(ping_script_budget(len(pairs)), access.command_timeout or 0)
        result = transport.run_script(script, timeout=limit)
        return PingRun(
            tuple(parse_ping_output(result.stdout)), result.stdout, result.stderr, result.seconds, result.timed_out
        )

    targets = [h for h in session.hosts if h.name in work]
    return session.run(job, progress, hosts=targets, step="pinging NPU pairs")


def _ping_problem(run: PingRun) -> Optional[str]:
    if run.timed_out:
        return f"the ping script ran past its time limit after {run.seconds:.0f}s and was killed"
    return None


def within(plan: PingPlan, only: AbstractSet[str]) -> PingPlan:
    """The pairs of ``plan`` with an end on the ``only`` nodes. The other end was not read, so it
    ranks as no source (mesh._source_rank): each pair is sent from its ``only`` end."""
    return PingPlan(plan.mesh, tuple(p for p in plan.pairs if p.a.node in only or p.b.node in only))


def collect(
    session: Session,
    desired: DesiredState,
    mesh: str,
    with_pings: bool,
    progress: ProgressFactory = lambda _: None,
    sample_interval: int = 0,
    exec_via: Optional[ExecVia] = None,
    with_hccs: Optional[bool] = None,
    only: Optional[AbstractSet[str]] = None,
    keep: Callable[[HostEvidence], HostEvidence] = lambda host: host,
) -> Tuple[Dict[str, HostEvidence], Optional[PingPlan]]:
    """Gather every host (or the ``only`` ones), plan and run the pings; the evidence per node
    read, and the ping plan.

    ``sample_interval``: seconds between the gather's two reads of the port counters (0: one read).
    ``exec_via``: the gather, the pings and the HCCS pings run through this wrapper (the job's
    container), so they see the devices and tools a job there sees.
    ``with_hccs``: run the A3 HCCS pings within each super-pod (fleet/hccs.py); None: as ``with_pings``.
    ``only`` (``verify --hosts``): no other node is contacted. The pings are the mesh's pairs
    with an end among them, sent from that end (the peer's address is the planned one).
    ``keep``: called with each host's evidence once a phase has filled it (the gather: in the
    host's worker, as soon as it is parsed), and what it returns is kept (verify's
    BundleWriter.keep writes the raw transcripts to the bundle and drops them). It may run in
    several worker threads at once, for different hosts.
    """
    inventory = desired.inventory

    def kept(name: str, value: Gathered) -> Gathered:
        """In the host's worker, as soon as it is parsed: its transcript goes to ``keep``."""
        host = keep(HostEvidence(name, "", value.facts, gather_stdout=value.transcript, gather_stderr=value.stderr))
        return replace(value, transcript=host.gather_stdout, stderr=host.gather_stderr)

    gathered = gather_facts(
        session,
        inventory,
        progress("reading hosts"),
        only=set(only) if only is not None else None,
        sample_interval=sample_interval,
        exec_via=exec_via,
        keep=kept,
    )
    hosts: Dict[str, HostEvidence] = {}
    for node in inventory.nodes:
        if only is not None and node.name not in only:
            continue
        outcome = gathered[node.name]
        if outcome.ok and outcome.value is not None:
            value = outcome.value
            hosts[node.name] = HostEvidence(
                node.name,
                node.host,
                value.facts,
                seconds=value.seconds,
                gather_stdout=value.transcript,
                gather_stderr=value.stderr,
            )
        else:
            hosts[node.name] = HostEvidence(
                node.name, node.host, None, error=outcome.error, error_kind=outcome.kind, seconds=outcome.seconds
            )
    if (with_pings if with_hccs is None else with_hccs) and inventory.product.id == "atlas-a3":
        hosts = run_hccs(
            session, desired, hosts, progress("HCCS pings"), exec_via=exec_via
        )  # the HCCS plane in each super-pod
        hosts = {name: keep(host) if host.hccs_stdout else host for name, host in hosts.items()}
    if not with_pings:
        return hosts, None
    plan = plan_pings(desired, {name: host.facts for name, host in hosts.items()}, mesh)
    if only is not None:
        plan = within(plan, only)
    mode_first = desired.inventory.product.is_950
    for name, pinged in run_pings(
        session, plan, progress("pinging NPU pairs"), exec_via=exec_via, mode_first=mode_first
    ).items():
        host = hosts[name]
        if pinged.ok and pinged.value is not None:
            run = pinged.value
            hosts[name] = keep(
                replace(
                    host,
                    pings=run.results,
                    ping_error=_ping_problem(run),
                    ping_stdout=run.stdout,
                    ping_stderr=run.stderr,
                    ping_seconds=run.seconds,
                )
            )
        else:
            hosts[name] = replace(
                host, ping_error=pinged.error or "the ping script failed", ping_seconds=pinged.seconds
            )
    return hosts, plan
