"""``verify --allreduce``: run the worker under torchrun on every node at once, and judge it.

The control side of the all-reduce check (the worker is ``worker.py``; the verdict
``results.build_verdict``). Per run, over the verify command's open SSH :class:`Session`:

1. **preflight**, every node at once: make the node's run directory, check set_env.sh, the
   interpreter and torch, pick the master's free port, find the NIC that holds the node's
   inventory address, upload the worker (SFTP, or streamed through the exec channel on a host
   without the sftp subsystem). A node that cannot run is named now, and nothing is started
   anywhere.
2. **launch**, every node at once (threads of our own, so the session's ``forks`` cannot make
   one node wait for another): torchrun with the worker, its output in the run directory, its
   sockets bound to that NIC and MASTER_ADDR an address (a hostname may resolve to loopback).
   The overall timeout bounds each node's torchrun; the worker's per-phase timeouts name the
   phase long before that. Once one node has failed, the others get a grace period to report,
   then are stopped, because torchrun's agent would otherwise wait for a dead node forever.
3. **cleanup**, where a launch did not end on its own (timeout, lost connection, Ctrl-C, a
   failed peer): kill every process of the run on the node and fetch its log. Run directories
   are removed on every path, success included.
4. **verdict and findings**: the ranks' records from every node's log, ``build_verdict``, and
   per node what went wrong in its own words (:mod:`.diagnosis`). With ``--bisect``, a failed
   or slow run is repeated on pairs of nodes to name the node at fault (:mod:`.bisect`).
"""

from __future__ import annotations

import secrets
import socket
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from rich.console import Console

from ascendprep.allreduce import worker_source
from ascendprep.allreduce.bisection import BisectReport, GroupResult, judge, plan_rounds
from ascendprep.allreduce.diagnosis import (
    LaunchResult,
    NodeProblem,
    launch_problem,
    log_tail,
    preflight_problems,
    primary_problems,
    suspects,
    without_node_prefix,
)
from ascendprep.allreduce.options import AllreduceOptions, RunSettings, resolve_settings
from ascendprep.allreduce.outcome import AllreduceOutcome, NodeReport, build_findings, option_findings
from ascendprep.allreduce.results import AllreduceVerdict, CollectedOutput, build_verdict, parse_worker_output
from ascendprep.allreduce.scripts import (
    WORKER_NAME,
    LaunchOutput,
    parse_preflight,
    parse_script_output,
    remove_dir_script,
    render_cleanup_script,
    render_launch_script,
    render_preflight_script,
    run_dir,
    torchrun_arguments,
)
from ascendprep.allreduce.table import print_allreduce
from ascendprep.compat import ThresholdsError, min_busbw_gbps
from ascendprep.inventory import Inventory
from ascendprep.probes.netaddr import interface_holding, ip_literal, is_loopback
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import RemoteError
from ascendprep.remote.fanout import Session

__all__ = ["AllreduceOptions", "AllreduceOutcome", "option_problems", "print_allreduce", "run_allreduce"]

#: Preflight is a few file tests and one interpreter start without torch.
PREFLIGHT_TIMEOUT_S = 60.0
#: Killing a node's processes (SIGTERM, a grace, SIGKILL) and reading its log.
CLEANUP_TIMEOUT_S = 30.0
#: How often the launch loop looks at the clock while it waits.
POLL_S = 0.25

T = TypeVar("T")


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
    product_floor, floor_problem = _product_floor(inventory)
    _, problems = resolve_settings(AllreduceOptions.coerce(options),
                                   [(n.name, n.npus) for n in inventory.nodes], product_floor)
    return problems + ([floor_problem] if floor_problem else [])


def run_allreduce(inventory: Inventory, session: Session, options: Any,
                  console: Optional[Console] = None) -> AllreduceOutcome:
    """Run the all-reduce check on every inventory node; print the table; return the outcome.

    ``options`` is an :class:`AllreduceOptions` or any object with its attribute names.
    Ctrl-C (KeyboardInterrupt) first kills the run's processes on every node, then propagates.
    """
    console = console or Console(stderr=True, highlight=False)
    started = time.monotonic()
    run_id = new_run_id()
    product_floor, floor_problem = _product_floor(inventory)
    settings, problems = resolve_settings(AllreduceOptions.coerce(options),
                                          [(n.name, n.npus) for n in inventory.nodes], product_floor)
    problems += [floor_problem] if floor_problem else []
    accesses = {a.name: a for a in session.hosts}
    absent = [n.name for n in inventory.nodes if n.name not in accesses]
    if absent:
        problems.append(f"no SSH access prepared for nodes {', '.join(absent)}")
    if settings is None or problems:
        outcome = AllreduceOutcome(run_id, "options", settings, findings=option_findings(problems),
                                   problems=problems, seconds=time.monotonic() - started)
        print_allreduce(console, outcome)
        return outcome
    python_path = inventory.model.software.python_path
    job = cluster_job(inventory, settings, run_id)
    console.print(f"all-reduce: {job.world_size} ranks on {len(job.nodes)} nodes, master {job.master.name} "
                  f"(run {run_id}, timeout {settings.timeouts.overall:g}s)", soft_wrap=True, markup=False)
    result = run_jobs(session, [job], settings, python_path, console)[0]
    node_problems = dict(result.problems)
    if result.verdict is not None and result.collected is not None and not node_problems:
        for node, why in suspects(result.collected, [n.name for n in job.nodes]).items():
            node_problems[node] = NodeProblem(node, "suspect", why, "look at this node first: its log lines are below",
                                              log_tail(result.launches[node].output.log if node in result.launches else ""))
    bisect_report = None
    if settings.bisect and _worth_bisecting(result, node_problems):
        bisect_report = run_bisect(session, inventory, settings, python_path, run_id, console)
    findings = build_findings(verdict=result.verdict, problems=node_problems,
                              nodes=[n.name for n in inventory.nodes], bisect=bisect_report)
    stage = "done" if result.verdict is not None else "preflight"
    outcome = AllreduceOutcome(
        run_id, stage, settings, nodes=_node_reports(result, node_problems, inventory),
        verdict=result.verdict, findings=findings, master=job.master.name, master_port=result.master_port,
        seconds=time.monotonic() - started, launch_seconds=result.launch_seconds, bisect=bisect_report,
        phase_seconds=slowest_phases(result.collected))
    print_allreduce(console, outcome)
    return outcome


def _product_floor(inventory: Inventory) -> Tuple[Optional[float], Optional[str]]:
    try:
        return min_busbw_gbps(inventory.model.product), None
    except ThresholdsError as exc:
        return None, f"bandwidth threshold: {exc}"


def cluster_job(inventory: Inventory, settings: RunSettings, run_id: str,
                names: Optional[Sequence[str]] = None) -> Job:
    """The job over ``names`` (default: every node), master first (torchrun's node rank 0)."""
    wanted = list(names) if names is not None else [n.name for n in inventory.nodes]
    master = inventory.master.name if inventory.master.name in wanted else wanted[0]
    ordered = [master] + [name for name in wanted if name != master]
    nodes = []
    for rank, name in enumerate(ordered):
        node = inventory.node(name)
        nodes.append(JobNode(name, node.host, rank, settings.nproc_by_node[name], run_dir(run_id, name)))
    return Job(tuple(nodes))


def _worth_bisecting(result: JobResult, problems: Dict[str, NodeProblem]) -> bool:
    """Bisect when the run completed but failed or straggled, and no node is named already."""
    verdict = result.verdict
    if verdict is None or problems or len(result.job.nodes) < 3:
        return False
    return not verdict.passed or bool(verdict.stragglers)


# --- running jobs -------------------------------------------------------------------------------


def run_jobs(session: Session, jobs: Sequence[Job], settings: RunSettings, python_path: str,
             console: Console) -> List[JobResult]:
    """Preflight, launch and judge ``jobs`` at the same time (their nodes must be disjoint)."""
    results = [JobResult(job) for job in jobs]
    accesses = {a.name: a for a in session.hosts}
    all_nodes = [(result, node) for result in results for node in result.job.nodes]
    worker = worker_source().encode()
    pool = ThreadPoolExecutor(max_workers=max(1, len(all_nodes)), thread_name_prefix="ascendprep-allreduce")
    interrupted = False
    try:
        preflights = _map(pool, lambda item: _preflight(session, accesses[item[1].name], item[1],
                                                        item[1] is item[0].job.master, python_path, worker),
                          all_nodes)
        for (result, node), (problems, port, binding) in zip(all_nodes, preflights):
            if problems:
                result.problems[node.name] = _join_problems(problems)
            if node is result.job.master:
                result.master_port = port
            if isinstance(binding, tuple):
                result.bindings[node.name] = binding
            elif binding is not None:
                result.unbound[node.name] = binding
        launchable = [r for r in results if not r.problems]
        for result in launchable:
            for name, why in result.unbound.items():
                console.print(f"all-reduce: {name}: {why}; its ranks pick an address by the hostname",
                              soft_wrap=True, markup=False)
        for result in results:
            if result.problems:
                _map(pool, lambda n: _remove_dir(session, accesses[n.name], n), list(result.job.nodes))
        if launchable:
            _launch(pool, session, accesses, launchable, settings, python_path, console)
    except BaseException as exc:
        # Ctrl-C, or a bug here: no process of the run may outlive the command.
        interrupted = True
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"internal error ({type(exc).__name__})"
        console.print(f"[bold red]{what}: stopping the all-reduce on every node[/]")
        cleanup_pool = ThreadPoolExecutor(max_workers=max(1, len(all_nodes)))
        _map(cleanup_pool, lambda item: _cleanup(session, accesses[item[1].name], item[1]), all_nodes)
        cleanup_pool.shutdown(wait=True)
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=interrupted)
    for result in results:
        if result.launches:
            _judge(result, settings)
    return results


def _map(pool: ThreadPoolExecutor, fn: Callable[[Any], T], items: Sequence[Any]) -> List[T]:
    return list(pool.map(fn, items))


def _join_problems(problems: List[NodeProblem]) -> NodeProblem:
    first = problems[0]
    if len(problems) == 1:
        return first
    return replace(first, message="; ".join(p.message for p in problems),
                   fix="; ".join(dict.fromkeys(p.fix for p in problems if p.fix)))


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


def _preflight(session: Session, access: HostAccess, node: JobNode, is_master: bool, python_path: str,
               worker: bytes) -> Tuple[List[NodeProblem], Optional[int], Union[Tuple[str, str], str, None]]:
    """Check one node and upload the worker; (problems, free port when master, its binding or why none)."""
    try:
        transport = session.transport(access)
        result = transport.run_script(render_preflight_script(node.directory, python_path, is_master),
                                      timeout=PREFLIGHT_TIMEOUT_S)
        if result.timed_out:
            return [NodeProblem(node.name, "python_broken",
                                f"the preflight did not finish within {PREFLIGHT_TIMEOUT_S:g}s "
                                f"(is {python_path} hanging on start?)", "run the interpreter by hand on the node")], None, None
        pre = parse_preflight(result.stdout)
        problems = preflight_problems(node.name, python_path, pre)
        if is_master and not problems and pre.port is None:
            problems.append(NodeProblem(node.name, "python_broken", "no free TCP port for torchrun's rendezvous",
                                        "free some ports on the master node"))
        if not problems:
            transport.put(worker, f"{node.directory}/{WORKER_NAME}", 0o644)
        return problems, pre.port, binding_of(node, pre)
    except RemoteError as exc:
        return [NodeProblem(node.name, "ssh" if exc.kind != "error" else "upload_failed", without_node_prefix(str(exc), node.name),
                            "check SSH access to the node" if exc.kind != "error" else "check /tmp on the node")], None, None


def _remove_dir(session: Session, access: HostAccess, node: JobNode) -> None:
    """Take away what preflight made on a node of a job that will not run."""
    try:
        session.transport(access).run_script(remove_dir_script(node.directory), timeout=CLEANUP_TIMEOUT_S)
    except RemoteError:
        return  # the node is unreachable: its problem is already reported, nothing was started there


def _cleanup(session: Session, access: HostAccess, node: JobNode) -> Tuple[LaunchOutput, Optional[str]]:
    """Kill the node's processes of this run, fetch its log, remove its directory."""
    try:
        result = session.transport(access).run_script(render_cleanup_script(node.directory), timeout=CLEANUP_TIMEOUT_S)
    except RemoteError as exc:
        return LaunchOutput(), f"cleanup on {node.name} failed: {exc}"
    if result.timed_out:
        return parse_script_output(result.stdout), f"cleanup on {node.name} did not finish in {CLEANUP_TIMEOUT_S:g}s"
    return parse_script_output(result.stdout), None


@dataclass(frozen=True)
class _Exec:
    """How one node's launch script ended, as the control side saw it."""

    output: LaunchOutput
    timed_out: bool = False
    error: Optional[str] = None
    error_kind: Optional[str] = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.timed_out or self.error is not None or self.output.exit_code != 0

    @property
    def finished(self) -> bool:
        """The script ran to its end, so it already killed leftovers and removed its directory."""
        return not self.timed_out and self.error is None and self.output.exit_code is not None


@dataclass
class _Running:
    result: JobResult
    node: JobNode
    future: "Future[_Exec]"


def _launch(pool: ThreadPoolExecutor, session: Session, accesses: Dict[str, HostAccess], jobs: List[JobResult],
            settings: RunSettings, python_path: str, console: Console) -> None:
    """Start every node of every job at once; stop a failed job's other nodes after the grace.

    Cleanups run in a pool of their own: the launch pool's threads are all busy waiting for the
    very scripts a cleanup has to stop.
    """
    overall = settings.timeouts.overall
    started = time.monotonic()
    running: List[_Running] = []
    for result in jobs:
        job = result.job
        assert result.master_port is not None
        for node in job.nodes:
            script = render_launch_script(
                node.directory, python_path,
                torchrun_arguments(nnodes=len(job.nodes), node_rank=node.node_rank, nproc=node.nproc,
                                   master_addr=result.master_addr, master_port=result.master_port,
                                   rendezvous_timeout=settings.timeouts.rendezvous),
                settings.worker_arguments(node.name), bind=result.bindings.get(node.name))
            running.append(_Running(result, node, pool.submit(_run_launch, session, accesses[node.name], script, overall)))
    stop_at: Dict[int, float] = {}
    stopped: Dict[str, Tuple[LaunchOutput, Optional[str]]] = {}
    with ThreadPoolExecutor(max_workers=len(running), thread_name_prefix="ascendprep-allreduce-stop") as stopper:
        def stop(items: List[_Running]) -> None:
            for item, output in zip(items, _map(stopper, lambda r: _cleanup(session, accesses[r.node.name], r.node), items)):
                stopped[item.node.name] = output

        while True:
            for item in running:
                if item.future.done() and id(item.result) not in stop_at and item.future.result().failed:
                    stop_at[id(item.result)] = time.monotonic() + settings.timeouts.grace
                    console.print(f"all-reduce: {item.node.name} failed; stopping the rest of its job in "
                                  f"{settings.timeouts.grace:g}s unless it ends first", soft_wrap=True, markup=False)
            pending = [r for r in running if not r.future.done()]
            if not pending:
                break
            now = time.monotonic()
            stop([r for r in pending if r.node.name not in stopped and (
                now >= stop_at.get(id(r.result), float("inf")) or now - started > overall + CLEANUP_TIMEOUT_S)])
            wait([r.future for r in pending], timeout=POLL_S, return_when=FIRST_COMPLETED)
        launch_seconds = time.monotonic() - started
        stop([r for r in running if r.node.name not in stopped and not r.future.result().finished])
    for item in running:
        ended = item.future.result()
        cleanup_out, cleanup_error = stopped.get(item.node.name, (None, None))
        # Both scripts may print the log; the launch's copy can be cut short when the cleanup
        # removed the directory under it, so the longer copy is the complete one.
        copies = [text for text in (ended.output.log, cleanup_out.log if cleanup_out else None) if text is not None]
        killed = (ended.output.killed or 0) + ((cleanup_out.killed or 0) if cleanup_out else 0)
        merged = replace(ended.output, log=max(copies, key=len) if copies else None, killed=killed)
        item.result.launches[item.node.name] = LaunchResult(
            item.node.name, merged, timed_out=ended.timed_out, remote_error=ended.error or cleanup_error,
            remote_kind=ended.error_kind, cleaned_up=cleanup_out is not None, killed=killed, seconds=ended.seconds)
        item.result.launch_seconds = launch_seconds


def _run_launch(session: Session, access: HostAccess, script: str, overall: float) -> _Exec:
    started = time.monotonic()
    try:
        result = session.transport(access).run_script(script, timeout=overall)
    except RemoteError as exc:
        return _Exec(LaunchOutput(), error=str(exc), error_kind=exc.kind, seconds=time.monotonic() - started)
    return _Exec(parse_script_output(result.stdout), timed_out=result.timed_out, seconds=result.seconds)


# --- judging ------------------------------------------------------------------------------------


def _judge(result: JobResult, settings: RunSettings) -> None:
    job = result.job
    collected = CollectedOutput()
    for node in job.nodes:
        launch = result.launches[node.name]
        collected = collected.merged(parse_worker_output(launch.output.log or "", source=f"{node.name} torchrun log"))
    result.collected = collected
    result.verdict = build_verdict(collected, expected_world_size=job.world_size,
                                   expected_nodes=[n.name for n in job.nodes], min_busbw_GBps=settings.min_busbw)
    found = {}
    for node in job.nodes:
        problem = launch_problem(result.launches[node.name], node.nproc, collected, result.master_addr,
                                 result.master_port, settings.timeouts.overall)
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


def _node_reports(result: JobResult, problems: Dict[str, NodeProblem], inventory: Inventory) -> List[NodeReport]:
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
        reports.append(NodeReport(
            node=node.name, host=node.host, node_rank=job_node.node_rank, nproc=job_node.nproc, status=status,
            problem=problem, exit_code=launch.output.exit_code if launch else None,
            timed_out=launch.timed_out if launch else False, killed=launch.killed if launch else 0,
            ranks_reported=ranks, seconds=launch.seconds if launch else 0.0,
            log_tail=problem.log_tail if problem is not None else "",
            bound=result.bindings.get(node.name), unbound_reason=result.unbound.get(node.name)))
    return reports


# --- bisect -------------------------------------------------------------------------------------


def run_bisect(session: Session, inventory: Inventory, settings: RunSettings, python_path: str, run_id: str,
               console: Console) -> BisectReport:
    """Run the rounds of :func:`bisect.plan_rounds`, each round's groups at the same time."""
    names = [n.name for n in inventory.nodes]
    rounds: List[List[GroupResult]] = []
    group_settings = replace(settings, inject_wrong=None, inject_stall=None)
    for index, groups in enumerate(plan_rounds(names), start=1):
        console.print(f"bisect round {index}: " + ", ".join("+".join(g) for g in groups), soft_wrap=True, markup=False)
        jobs = [cluster_job(inventory, group_settings, f"{run_id}-b{index}g{number}", names=group)
                for number, group in enumerate(groups, start=1)]
        results = run_jobs(session, jobs, group_settings, python_path, console)
        rounds.append([_group_result(tuple(group), result) for group, result in zip(groups, results)])
    return judge(rounds)


def _group_result(group: Tuple[str, ...], result: JobResult) -> GroupResult:
    verdict = result.verdict
    if verdict is None:
        reason = "; ".join(p.message for p in result.problems.values()) or "did not run"
        return GroupResult(group, False, None, None, reason)
    functional = verdict.connectivity_passed and verdict.correctness_passed and not verdict.failures
    complete = [row for row in verdict.sizes if row.ranks_reporting == verdict.world_size]
    largest = max(complete, key=lambda row: row.bytes) if complete else None
    # Groups are compared with each other (bisect.judge), not with the cluster's gate.
    reason = "" if functional else "; ".join(verdict.reasons[:2])
    return GroupResult(group, functional, largest.busbw_GBps if largest else None,
                       largest.bytes if largest else None, reason)
