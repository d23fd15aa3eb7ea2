"""The all-reduce jobs as data: who runs which ranks, where they bind, and what the runs said.

The control side of ``verify --allreduce`` is split in two: this module holds the pure half (the
job layout, the options check, the binding of a node's ranks to the NIC holding its inventory
address, judging the collected logs, the per-node reports and the bisect groups' results);
:mod:`ascendprep.run.allreduce` runs the jobs over the verify command's SSH session.
Only :func:`node_address` looks anything up: the inventory host, resolved on this machine.
"""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ascendprep.compat import ThresholdsError, min_busbw_gbps
from ascendprep.facts.netaddr import interface_holding, ip_literal, is_loopback
from ascendprep.inventory.load import Inventory
from ascendprep.verify.allreduce.bisection import GroupResult
from ascendprep.verify.allreduce.diagnosis import LaunchResult, NodeProblem, launch_problem, primary_problems
from ascendprep.verify.allreduce.options import AllreduceOptions, RunSettings, resolve_settings
from ascendprep.verify.allreduce.outcome import NodeReport
from ascendprep.verify.allreduce.results import AllreduceVerdict, CollectedOutput, build_verdict, parse_worker_output
from ascendprep.verify.allreduce.scripts import run_dir


@dataclass(frozen=True)
class JobNode:
    """One node's place in one torchrun job."""

    name: str
    host: str
    node_rank: int
    nproc: int
    directory: str


@dataclass(frozen=True)
class Job:
    """One torchrun job: the whole cluster, or a bisect group. ``nodes[0]`` is the master."""

    nodes: Tuple[JobNode, ...]

    @property
    def master(self) -> JobNode:
        return self.nodes[0]

    @property
    def world_size(self) -> int:
        return sum(n.nproc for n in self.nodes)


@dataclass
class JobResult:
    job: Job
    problems: Dict[str, NodeProblem] = field(default_factory=dict)
    launches: Dict[str, LaunchResult] = field(default_factory=dict)
    verdict: Optional[AllreduceVerdict] = None
    collected: Optional[CollectedOutput] = None
    master_port: Optional[int] = None
    launch_seconds: Optional[float] = None
    #: Per node: (inventory address, the interface holding it) its ranks are bound to.
    bindings: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    #: Per node left unbound: why (its ranks then pick an address by the hostname).
    unbound: Dict[str, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str:
        """The master's address for MASTER_ADDR: the bound one, else the inventory's host."""
        bound = self.bindings.get(self.job.master.name)
        return bound[0] if bound is not None else self.job.master.host


def new_run_id() -> str:
    """UTC time and a random suffix: sortable, and unique across concurrent runs."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def option_problems(inventory: Inventory, options: Any) -> List[str]:
    """What is wrong with ``options`` for this inventory (empty: nothing), without any I/O.

    For a command to refuse bad input (exit 2) before it connects to anything.
    """
    product_floor, floor_problem = product_busbw_floor(inventory)
    _, problems = resolve_settings(
        AllreduceOptions.coerce(options), [(n.name, n.npus) for n in inventory.nodes], product_floor
    )
    return problems + ([floor_problem] if floor_problem else [])


def product_busbw_floor(inventory: Inventory) -> Tuple[Optional[float], Optional[str]]:
    """The product's busbw floor (GB/s), or why it cannot be known."""
    try:
        return min_busbw_gbps(inventory.model.product), None
    except ThresholdsError as exc:
        return None, f"bandwidth threshold: {exc}"


def cluster_job(inventory: Inventory, settings: RunSettings, run_id: str, names: Optional[Sequence[str]] = None) -> Job:
    """The job over ``names`` (default: every node), master first (torchrun's node rank 0)."""
    wanted = list(names) if names is not None else [n.name for n in inventory.nodes]
    master = inventory.master.name if inventory.master.name in wanted else wanted[0]
    ordered = [master] + [name for name in wanted if name != master]
    nodes = []
    for rank, name in enumerate(ordered):
        node = inventory.node(name)
        nodes.append(JobNode(name, node.host, rank, settings.nproc_by_node[name], run_dir(run_id, name)))
    return Job(tuple(nodes))


def worth_bisecting(result: JobResult, problems: Dict[str, NodeProblem]) -> bool:
    """Bisect when the run completed but failed or straggled, and no node is named already."""
    verdict = result.verdict
    if verdict is None or problems or len(result.job.nodes) < 3:
        return False
    return not verdict.passed or bool(verdict.stragglers)


def join_problems(problems: List[NodeProblem]) -> NodeProblem:
    """One problem per node: the first one's kind, every message and fix."""
    first = problems[0]
    if len(problems) == 1:
        return first
    return replace(
        first,
        message="; ".join(p.message for p in problems),
        fix="; ".join(dict.fromkeys(p.fix for p in problems if p.fix)),
    )


def node_address(host: str) -> Optional[str]:
    """The inventory host as an IPv4 address: itself, or what the name resolves to here.

    Resolved on this machine, as SSH resolved it to reach the node; the node's own NICs then
    confirm it (:func:`binding_of`). None when it does not resolve or only to loopback.
    """
    literal = ip_literal(host)
    if literal is not None:
        return literal
    try:
        found = socket.getaddrinfo(host, None, family=socket.AF_INET, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    for *_, sockaddr in found:
        if not is_loopback(str(sockaddr[0])):
            return str(sockaddr[0])
    return None


def binding_of(node: JobNode, pre: Any) -> Union[Tuple[str, str], str]:
    """(address, interface) to bind the node's ranks to, or why there is none."""
    if pre.addresses_problem:
        return f"its interfaces could not be read ({pre.addresses_problem})"
    address = node_address(node.host)
    if address is None:
        return f"its host '{node.host}' does not resolve to an address here"
    if not pre.addresses:
        return "'ip -o addr' listed no interfaces (is iproute2 installed?)"
    ifname = interface_holding(address, pre.addresses)
    if ifname is None:
        return f"no interface holds its inventory address {address} (NAT or a jump host?)"
    return address, ifname


# --- judging ------------------------------------------------------------------------------------


def judge_job(result: JobResult, settings: RunSettings) -> None:
    """Fill ``result``'s collected records, verdict and per-node problems from its launches' logs."""
    job = result.job
    collected = CollectedOutput()
    for node in job.nodes:
        launch = result.launches[node.name]
        collected = collected.merged(parse_worker_output(launch.output.log or "", source=f"{node.name} torchrun log"))
    result.collected = collected
    result.verdict = build_verdict(
        collected,
        expected_world_size=job.world_size,
        expected_nodes=[n.name for n in job.nodes],
        min_busbw_GBps=settings.min_busbw,
    )
    found = {}
    for node in job.nodes:
        problem = launch_problem(
            result.launches[node.name],
            node.nproc,
            collected,
            result.master_addr,
            result.master_port,
            settings.timeouts.overall,
        )
        if problem is not None:
            found[node.name] = problem
    result.problems.update(primary_problems(found))


def slowest_phases(collected: Optional[CollectedOutput]) -> Dict[str, float]:
    """Per phase, the longest any rank took: where a launch spends its time."""
    slowest: Dict[str, float] = {}
    for record in collected.records if collected else ():
        for name, phase in record.phases.items():
            if phase.seconds is not None:
                slowest[name] = max(slowest.get(name, 0.0), phase.seconds)
    return slowest


def node_reports(result: JobResult, problems: Dict[str, NodeProblem], inventory: Inventory) -> List[NodeReport]:
    """One report per inventory node, in inventory order."""
    by_name = {n.name: n for n in result.job.nodes}
    reports = []
    for node in inventory.nodes:
        job_node = by_name[node.name]
        launch = result.launches.get(node.name)
        problem = problems.get(node.name)
        ranks = sum(1 for r in (result.collected.records if result.collected else ()) if r.node == node.name)
        if launch is None:
            status = "not_started"
        elif problem is None:
            status = "ok"
        else:
            status = "suspect" if problem.kind == "suspect" else "failed"
        reports.append(
            NodeReport(
                node=node.name,
                host=node.host,
                node_rank=job_node.node_rank,
                nproc=job_node.nproc,
                status=status,
                problem=problem,
                exit_code=launch.output.exit_code if launch else None,
                timed_out=launch.timed_out if launch else False,
                killed=launch.killed if launch else 0,
                ranks_reported=ranks,
                seconds=launch.seconds if launch else 0.0,
                log_tail=problem.log_tail if problem is not None else "",
                bound=result.bindings.get(node.name),
                unbound_reason=result.unbound.get(node.name),
            )
        )
    return reports


# --- bisect -------------------------------------------------------------------------------------


def group_result(group: Tuple[str, ...], result: JobResult) -> GroupResult:
    """A bisect group's run as :func:`ascendprep.verify.allreduce.bisection.judge` compares it."""
    verdict = result.verdict
    if verdict is None:
        reason = "; ".join(p.message for p in result.problems.values()) or "did not run"
        return GroupResult(group, False, None, None, reason)
    functional = verdict.connectivity_passed and verdict.correctness_passed and not verdict.failures
    complete = [row for row in verdict.sizes if row.ranks_reporting == verdict.world_size]
    largest = max(complete, key=lambda row: row.bytes) if complete else None
    # Groups are compared with each other (bisect.judge), not with the cluster's gate.
    reason = "" if functional else "; ".join(verdict.reasons[:2])
    return GroupResult(
        group, functional, largest.busbw_GBps if largest else None, largest.bytes if largest else None, reason
    )
