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
   per node what went wrong in its own words (:mod:`ascendprep.verify.allreduce.diagnosis`). With
   ``--bisect``, a failed or slow run is repeated on pairs of nodes to name the node at fault
   (:mod:`ascendprep.verify.allreduce.bisection`).

With ``--exec-via`` every script of steps 1-3 runs through the wrapper (the job's container),
the worker is written by a script through it too (the container's /tmp is not the host's), and so
torchrun runs where a job would: :func:`ascendprep.run.execvia.wrap_step`.

This module is the SSH half; the jobs' layout, the binding and the judging are pure and live in
:mod:`ascendprep.verify.allreduce.jobs`.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from rich.console import Console

from ascendprep.inventory.load import Inventory
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import OutputTooLarge, RemoteError
from ascendprep.remote.shell import write_file_script
from ascendprep.report.allreduce import print_allreduce
from ascendprep.run.execvia import ExecVia, wrap_step
from ascendprep.run.fanout import Session
from ascendprep.verify.allreduce import worker_source
from ascendprep.verify.allreduce.bisection import BisectReport, GroupResult, judge, plan_rounds
from ascendprep.verify.allreduce.diagnosis import (
    LaunchResult,
    NodeProblem,
    log_tail,
    preflight_problems,
    suspects,
    without_node_prefix,
)
from ascendprep.verify.allreduce.jobs import (
    Job,
    JobNode,
    JobResult,
    binding_of,
    cluster_job,
    group_result,
    join_problems,
    judge_job,
    new_run_id,
    node_reports,
    product_busbw_floor,
    slowest_phases,
    worth_bisecting,
)
from ascendprep.verify.allreduce.options import AllreduceOptions, RunSettings, resolve_settings
from ascendprep.verify.allreduce.outcome import AllreduceOutcome, build_findings, option_findings
from ascendprep.verify.allreduce.scripts import (
    WORKER_NAME,
    LaunchOutput,
    parse_preflight,
    parse_script_output,
    remove_dir_script,
    render_cleanup_script,
    render_launch_script,
    render_preflight_script,
    torchrun_arguments,
)

__all__ = ["AllreduceOptions", "AllreduceOutcome", "print_allreduce", "run_allreduce"]

#: Preflight is a few file tests and one interpreter start without torch.
PREFLIGHT_TIMEOUT_S = 60.0
#: Killing a node's processes (SIGTERM, a grace, SIGKILL) and reading its log.
CLEANUP_TIMEOUT_S = 30.0
#: How often the launch loop looks at the clock while it waits.
POLL_S = 0.25

T = TypeVar("T")


def run_allreduce(
    inventory: Inventory,
    session: Session,
    options: Any,
    console: Optional[Console] = None,
    exec_via: Optional[ExecVia] = None,
) -> AllreduceOutcome:
    """Run the all-reduce check on every inventory node; print the table; return the outcome.

    ``options`` is an :class:`AllreduceOptions` or any object with its attribute names.
    ``exec_via``: every node step runs through this wrapper (``verify --exec-via``).
    Ctrl-C (KeyboardInterrupt) first kills the run's processes on every node, then propagates.
    """
    console = console or Console(stderr=True, highlight=False)
    started = time.monotonic()
    run_id = new_run_id()
    product_floor, floor_problem = product_busbw_floor(inventory)
    settings, problems = resolve_settings(
        AllreduceOptions.coerce(options), [(n.name, n.npus) for n in inventory.nodes], product_floor
    )
    problems += [floor_problem] if floor_problem else []
    accesses = {a.name: a for a in session.hosts}
    absent = [n.name for n in inventory.nodes if n.name not in accesses]
    if absent:
        problems.append(f"no SSH access prepared for nodes {', '.join(absent)}")
    if settings is None or problems:
        outcome = AllreduceOutcome(
            run_id,
            "options",
            settings,
            findings=option_findings(problems),
            problems=problems,
            seconds=time.monotonic() - started,
        )
        print_allreduce(console, outcome)
        return outcome
    python_path = inventory.model.software.python_path
    job = cluster_job(inventory, settings, run_id)
    console.print(
        f"all-reduce: {job.world_size} ranks on {len(job.nodes)} nodes, master {job.master.name} "
        f"(run {run_id}, timeout {settings.timeouts.overall:g}s)",
        soft_wrap=True,
        markup=False,
    )
    result = run_jobs(session, [job], settings, python_path, console, exec_via)[0]
    node_problems = dict(result.problems)
    if result.verdict is not None and result.collected is not None and not node_problems:
        for node, why in suspects(result.collected, [n.name for n in job.nodes]).items():
            node_problems[node] = NodeProblem(
                node,
                "suspect",
                why,
                "look at this node first: its log lines are below",
                log_tail(result.launches[node].output.log if node in result.launches else ""),
            )
    bisect_report = None
    if settings.bisect and worth_bisecting(result, node_problems):
        bisect_report = run_bisect(session, inventory, settings, python_path, run_id, console, exec_via)
    findings = build_findings(
        verdict=result.verdict, problems=node_problems, nodes=[n.name for n in inventory.nodes], bisect=bisect_report
    )
    stage = "done" if result.verdict is not None else "preflight"
    outcome = AllreduceOutcome(
        run_id,
        stage,
        settings,
        nodes=node_reports(result, node_problems, inventory),
        verdict=result.verdict,
        findings=findings,
        master=job.master.name,
        master_port=result.master_port,
        seconds=time.monotonic() - started,
        launch_seconds=result.launch_seconds,
        bisect=bisect_report,
        phase_seconds=slowest_phases(result.collected),
    )
    print_allreduce(console, outcome)
    return outcome


# --- running jobs -------------------------------------------------------------------------------


def run_jobs(
    session: Session,
    jobs: Sequence[Job],
    settings: RunSettings,
    python_path: str,
    console: Console,
    exec_via: Optional[ExecVia] = None,
) -> List[JobResult]:
    """Preflight, launch and judge ``jobs`` at the same time (their nodes must be disjoint);
    every node step through ``exec_via`` when given."""
    results = [JobResult(job) for job in jobs]
    accesses = {a.name: a for a in session.hosts}
    all_nodes = [(result, node) for result in results for node in result.job.nodes]
    worker = worker_source().encode()
    pool = ThreadPoolExecutor(max_workers=max(1, len(all_nodes)), thread_name_prefix="ascendprep-allreduce")
    interrupted = False
    try:
        preflights = _map(
            pool,
            lambda item: _preflight(
                session, accesses[item[1].name], item[1], item[1] is item[0].job.master, python_path, worker, exec_via
            ),
            all_nodes,
        )
        for (result, node), (problems, port, binding) in zip(all_nodes, preflights):
            if problems:
                result.problems[node.name] = join_problems(problems)
            if node is result.job.master:
                result.master_port = port
            if isinstance(binding, tuple):
                result.bindings[node.name] = binding
            elif binding is not None:
                result.unbound[node.name] = binding
        launchable = [r for r in results if not r.problems]
        for result in launchable:
            for name, why in result.unbound.items():
                console.print(
                    f"all-reduce: {name}: {why}; its ranks pick an address by the hostname",
                    soft_wrap=True,
                    markup=False,
                )
        for result in results:
            if result.problems:
                _map(pool, lambda n: _remove_dir(session, accesses[n.name], n, exec_via), list(result.job.nodes))
        if launchable:
            _launch(pool, session, accesses, launchable, settings, python_path, console, exec_via)
    except BaseException as exc:
        # Ctrl-C, or a bug here: no process of the run may outlive the command.
        interrupted = True
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"internal error ({type(exc).__name__})"
        console.print(f"[bold red]{what}: stopping the all-reduce on every node[/]")
        cleanup_pool = ThreadPoolExecutor(max_workers=max(1, len(all_nodes)))
        _map(cleanup_pool, lambda item: _cleanup(session, accesses[item[1].name], item[1], exec_via), all_nodes)
        cleanup_pool.shutdown(wait=True)
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=interrupted)
    for result in results:
        if result.launches:
            judge_job(result, settings)
    return results


def _map(pool: ThreadPoolExecutor, fn: Callable[[Any], T], items: Sequence[Any]) -> List[T]:
    return list(pool.map(fn, items))


def _note_cap(session: Session, access: HostAccess, exc: RemoteError, step: str) -> None:
    """A node whose answer was cut at an output cap is named in ``limits_hit`` (these steps run
    on the session's connections, outside Session.run, which records the others)."""
    if isinstance(exc, OutputTooLarge):
        session.note_output_cap(access.name, exc, step)


def _preflight(
    session: Session,
    access: HostAccess,
    node: JobNode,
    is_master: bool,
    python_path: str,
    worker: bytes,
    exec_via: Optional[ExecVia] = None,
) -> Tuple[List[NodeProblem], Optional[int], Union[Tuple[str, str], str, None]]:
    """Check one node and upload the worker; (problems, free port when master, its binding or why none)."""
    try:
        transport = session.transport(access)
        script = wrap_step(
            render_preflight_script(node.directory, python_path, is_master), exec_via, node.name, "all-reduce preflight"
        )
        result = transport.run_script(script, timeout=PREFLIGHT_TIMEOUT_S)
        if result.timed_out:
            return (
                [
                    NodeProblem(
                        node.name,
                        "python_broken",
                        f"the preflight did not finish within {PREFLIGHT_TIMEOUT_S:g}s "
                        f"(is {python_path} hanging on start?)",
                        "run the interpreter by hand on the node",
                    )
                ],
                None,
                None,
            )
        pre = parse_preflight(result.stdout)
        problems = preflight_problems(node.name, python_path, pre)
        if is_master and not problems and pre.port is None:
            problems.append(
                NodeProblem(
                    node.name,
                    "python_broken",
                    "no free TCP port for torchrun's rendezvous",
                    "free some ports on the master node",
                )
            )
        if not problems and exec_via is None:
            transport.put(worker, f"{node.directory}/{WORKER_NAME}", 0o644)
        elif not problems:  # written from inside the container: its /tmp is not the host's
            target = f"{node.directory}/{WORKER_NAME}"
            upload = wrap_step(write_file_script(worker, target, 0o644), exec_via, node.name, "worker upload")
            transport.run_script(upload).raise_for_status(node.name, f"writing {target}")
        return problems, pre.port, binding_of(node, pre)
    except RemoteError as exc:
        _note_cap(session, access, exc, "the all-reduce preflight")
        return (
            [
                NodeProblem(
                    node.name,
                    "ssh" if exc.kind != "error" else "upload_failed",
                    without_node_prefix(str(exc), node.name),
                    "check SSH access to the node" if exc.kind != "error" else "check /tmp on the node",
                )
            ],
            None,
            None,
        )


def _remove_dir(session: Session, access: HostAccess, node: JobNode, exec_via: Optional[ExecVia] = None) -> None:
    """Take away what preflight made on a node of a job that will not run."""
    try:
        script = wrap_step(remove_dir_script(node.directory), exec_via, node.name, "all-reduce cleanup")
        session.transport(access).run_script(script, timeout=CLEANUP_TIMEOUT_S)
    except RemoteError as exc:
        _note_cap(session, access, exc, "removing the all-reduce directory")
        return  # the node is unreachable: its problem is already reported, nothing was started there


def _cleanup(
    session: Session, access: HostAccess, node: JobNode, exec_via: Optional[ExecVia] = None
) -> Tuple[LaunchOutput, Optional[str]]:
    """Kill the node's processes of this run, fetch its log, remove its directory."""
    try:
        script = wrap_step(render_cleanup_script(node.directory), exec_via, node.name, "all-reduce cleanup")
        result = session.transport(access).run_script(script, timeout=CLEANUP_TIMEOUT_S)
    except RemoteError as exc:
        _note_cap(session, access, exc, "the all-reduce cleanup")
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


def _launch(
    pool: ThreadPoolExecutor,
    session: Session,
    accesses: Dict[str, HostAccess],
    jobs: List[JobResult],
    settings: RunSettings,
    python_path: str,
    console: Console,
    exec_via: Optional[ExecVia] = None,
) -> None:
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
                node.directory,
                python_path,
                torchrun_arguments(
                    nnodes=len(job.nodes),
                    node_rank=node.node_rank,
                    nproc=node.nproc,
                    master_addr=result.master_addr,
                    master_port=result.master_port,
                    rendezvous_timeout=settings.timeouts.rendezvous,
                ),
                settings.worker_arguments(node.name),
                bind=result.bindings.get(node.name),
            )
            running.append(
                _Running(
                    result, node, pool.submit(_run_launch, session, accesses[node.name], script, overall, exec_via)
                )
            )
    stop_at: Dict[int, float] = {}
    stopped: Dict[str, Tuple[LaunchOutput, Optional[str]]] = {}
    with ThreadPoolExecutor(max_workers=len(running), thread_name_prefix="ascendprep-allreduce-stop") as stopper:

        def stop(items: List[_Running]) -> None:
            for item, output in zip(
                items, _map(stopper, lambda r: _cleanup(session, accesses[r.node.name], r.node, exec_via), items)
            ):
                stopped[item.node.name] = output

        while True:
            for item in running:
                if item.future.done() and id(item.result) not in stop_at and item.future.result().failed:
                    stop_at[id(item.result)] = time.monotonic() + settings.timeouts.grace
                    console.print(
                        f"all-reduce: {item.node.name} failed; stopping the rest of its job in "
                        f"{settings.timeouts.grace:g}s unless it ends first",
                        soft_wrap=True,
                        markup=False,
                    )
            pending = [r for r in running if not r.future.done()]
            if not pending:
                break
            now = time.monotonic()
            stop(
                [
                    r
                    for r in pending
                    if r.node.name not in stopped
                    and (now >= stop_at.get(id(r.result), float("inf")) or now - started > overall + CLEANUP_TIMEOUT_S)
                ]
            )
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
            item.node.name,
            merged,
            timed_out=ended.timed_out,
            remote_error=ended.error or cleanup_error,
            remote_kind=ended.error_kind,
            cleaned_up=cleanup_out is not None,
            killed=killed,
            seconds=ended.seconds,
        )
        item.result.launch_seconds = launch_seconds


def _run_launch(
    session: Session, access: HostAccess, script: str, overall: float, exec_via: Optional[ExecVia] = None
) -> _Exec:
    started = time.monotonic()
    try:
        result = session.transport(access).run_script(
            wrap_step(script, exec_via, access.name, "all-reduce launch"), timeout=overall
        )
    except RemoteError as exc:
        _note_cap(session, access, exc, "the all-reduce launch")
        return _Exec(LaunchOutput(), error=str(exc), error_kind=exc.kind, seconds=time.monotonic() - started)
    return _Exec(parse_script_output(result.stdout), timed_out=result.timed_out, seconds=result.seconds)


# --- bisect -------------------------------------------------------------------------------------


def run_bisect(
    session: Session,
    inventory: Inventory,
    settings: RunSettings,
    python_path: str,
    run_id: str,
    console: Console,
    exec_via: Optional[ExecVia] = None,
) -> BisectReport:
    """Run the rounds of :func:`ascendprep.verify.allreduce.bisection.plan_rounds`, each round's groups at the same time."""
    names = [n.name for n in inventory.nodes]
    rounds: List[List[GroupResult]] = []
    group_settings = replace(settings, inject_wrong=None, inject_stall=None)
    for index, groups in enumerate(plan_rounds(names), start=1):
        console.print(f"bisect round {index}: " + ", ".join("+".join(g) for g in groups), soft_wrap=True, markup=False)
        jobs = [
            cluster_job(inventory, group_settings, f"{run_id}-b{index}g{number}", names=group)
            for number, group in enumerate(groups, start=1)
        ]
        results = run_jobs(session, jobs, group_settings, python_path, console, exec_via)
        rounds.append([group_result(tuple(group), result) for group, result in zip(groups, results)])
    return judge(rounds)
