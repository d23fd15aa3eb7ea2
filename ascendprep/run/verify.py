"""The ``verify`` flow: live over SSH, node-local, or from saved bundles; checks, report, bundle.

The click command (:mod:`ascendprep.commands.verify`) parses the options into
:class:`VerifyOptions` and calls :func:`run_verify`; everything after that is here.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

from rich.console import Console

from ascendprep.base import exitcodes
from ascendprep.base.findings import Finding, has_errors
from ascendprep.base.hostrange import compressed
from ascendprep.base.text import markup_safe as escape
from ascendprep.base.yamlsource import InputError, Located, read_input_text
from ascendprep.facts.shell import checked_output_cap_override, remote_call_output_cap
from ascendprep.remote.deadline import Deadline
from ascendprep.run.common import (
    hosts_deadline,
    open_session,
    print_input_errors,
    select_nodes,
)

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.inventory.load import Inventory
    from ascendprep.verify.checks.model import CheckResult
    from ascendprep.verify.checks.registry import Selection
import os
import time

from ascendprep import __version__
from ascendprep.base.outputfile import write_file
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.planfile import PlanFile, read_plan
from ascendprep.report.html import HtmlInput, render_html
from ascendprep.report.jsondoc import write_json
from ascendprep.report.junit import render_junit
from ascendprep.report.limits_hit import collect_limits_hit
from ascendprep.report.prometheus import verify_metrics, write_metrics_file
from ascendprep.report.verify import bundle_document, print_verify, verify_document
from ascendprep.run.allreduce import run_allreduce
from ascendprep.run.bundle import (
    RUNS_DIR,
    Bundle,
    BundleError,
    BundleWriter,
    DiskCheck,
    ReadBudget,
    bundle_size,
    check_free_space,
    new_bundle_dir,
    prune_runs,
    read_bundle,
    write_bundle,
)
from ascendprep.run.bundlemerge import bundle_paths, check_compatible, describe, merge_bundles
from ascendprep.run.evidence import collect
from ascendprep.run.node_local import node_results, verify_local
from ascendprep.run.progress import progress_for_terminal
from ascendprep.run.slurm import SlurmError, prepare_slurm
from ascendprep.run.verify_run import VERIFY_PHASES, VerifyOptions, VerifyRun, desired_state
from ascendprep.verify.allreduce.jobs import option_problems
from ascendprep.verify.allreduce.options import DEFAULT_TIMEOUT_S, MIN_TIMEOUT_S
from ascendprep.verify.checks.blockers import busy_npu_refusal
from ascendprep.verify.checks.registry import Selection, SelectionError
from ascendprep.verify.checks.runner import no_errors, run_checks

#: The bundle's ``selection`` entry listing the nodes a ``--hosts`` run read.
ONLY_HOSTS_KEY = "hosts"


def _live(options: VerifyOptions, selection: Selection, err: Console) -> Optional[VerifyRun]:

    assert options.inventory is not None
    checked_output_cap_override()
    path = options.inventory
    text = read_input_text(path)
    inventory = inventory_from_text(text, file=str(path), base_dir=path.parent)
    chosen = select_nodes(
        inventory, options.hosts_pattern
    )  # a pattern naming no node stops here, before any host is read
    only = {node.name for node in chosen} if options.hosts_pattern is not None else None
    desired = desired_state(inventory, err)
    if desired is None:
        return None
    if options.allreduce is not None:
        problems = option_problems(inventory, options.allreduce)
        if problems:
            raise InputError([Located("--allreduce", None, "", problem) for problem in problems])
    launcher = _slurm_launcher(inventory) if options.allreduce is not None and options.launcher == "slurm" else None
    mesh = options.mesh or "ring"
    day = datetime.now(timezone.utc).date()
    allreduce_findings: List[Finding] = []
    allreduce_doc = None
    deadline = verify_deadline(inventory, options)
    writer = _bundle_writer(options)
    try:
        with open_session(
            inventory, options.accept_new_host_keys, options.forks, options.sudo_password, deadline
        ) as session:
            hosts, pings = collect(
                session,
                desired,
                mesh,
                selection.needs_pings,
                lambda what: progress_for_terminal(what),
                sample_interval=options.sample_interval,
                exec_via=options.exec_via,
                with_hccs=selection.needs_hccs,
                only=only,
                keep=writer.keep,
            )
            refusal = (
                busy_npu_refusal(hosts)
                if options.allreduce is not None and not options.allreduce.allow_busy_npus
                else None
            )
            if refusal is not None:
                allreduce_findings = [refusal]  # an all-reduce on NPUs another job holds fails with EJ0001
            elif options.allreduce is not None:
                shown = err if options.output_format != "text" else Console(highlight=False)
                if launcher is not None:  # srun steps in the allocation instead of the SSH connections
                    with launcher.session(session.hosts, deadline) as steps:
                        outcome = run_allreduce(
                            inventory, steps, _allreduce_within(options.allreduce, deadline), shown, options.exec_via
                        )
                    session.limits_hit.extend(steps.limits_hit)  # the steps' caps and deadline, in the same list
                else:
                    outcome = run_allreduce(
                        inventory, session, _allreduce_within(options.allreduce, deadline), shown, options.exec_via
                    )
                allreduce_findings = list(outcome.findings)
                allreduce_doc = outcome.to_dict()
            execs = session.exec_counts()
    except BaseException:
        writer.abandon()  # Ctrl-C or an error: no half bundle is left behind
        raise
    limits_hit = collect_limits_hit(
        session.limits_hit, {name: host.facts for name, host in hosts.items()}, remote_call_output_cap()
    )
    return VerifyRun(
        desired,
        str(path.resolve()),
        text,
        hosts,
        pings,
        mesh,
        selection,
        day,
        execs,
        allreduce_findings,
        allreduce_doc,
        limits_hit=limits_hit,
        only_hosts=[n.name for n in chosen] if only is not None else None,
        bundle_writer=writer,
    )


def _bundle_writer(options: VerifyOptions) -> Any:
    """The run's bundle, opened before any host is read so that each host's transcripts go to
    disk as soon as its phase is done (fleet.bundle.BundleWriter); a folder that cannot be made
    means no bundle and a warning at the end, never a failed run."""

    writer = BundleWriter(new_bundle_dir(options.runs_dir or RUNS_DIR))
    try:
        writer.open()
    except (OSError, ValueError) as exc:
        writer.give_up(f"the evidence bundle could not be saved in {writer.target}: {exc}")
    return writer


def _slurm_launcher(inventory: Inventory) -> Any:
    """``--launcher slurm``: the allocation checked before any host is read (exit 2 outside one)."""

    try:
        return prepare_slurm([(n.name, n.host) for n in inventory.nodes], os.environ)
    except SlurmError as exc:
        raise InputError([Located("--launcher slurm", None, "", str(exc))]) from None


def verify_deadline(inventory: Inventory, options: VerifyOptions) -> Deadline:
    """``--timeout``, or the default for this fleet; --allreduce adds its own default budget."""
    deadline = hosts_deadline(inventory, options.timeout, options.forks, VERIFY_PHASES)
    if options.timeout is None and options.sample_interval:
        waves = -(-len(inventory.nodes) // (options.forks or inventory.model.ssh.forks))
        deadline.seconds += options.sample_interval * waves  # each wave's gather waits up to the interval
    if options.timeout is None and options.allreduce is not None:
        deadline.seconds += DEFAULT_TIMEOUT_S
    return deadline


def _allreduce_within(allreduce: Any, deadline: Deadline) -> Any:
    """The all-reduce's options with its overall limit cut to what is left of the command's."""

    wanted = allreduce.timeout if allreduce.timeout is not None else DEFAULT_TIMEOUT_S
    return replace(allreduce, timeout=max(MIN_TIMEOUT_S, min(wanted, deadline.remaining())))


def _from_bundle(options: VerifyOptions, selection: Optional[Selection], err: Console) -> Optional[VerifyRun]:

    assert options.from_bundle is not None
    merge = ReadBudget.for_merge()  # what all the folders given may decompress to together
    bundle = read_bundle(options.from_bundle, merge)
    if options.more_bundles or bundle.local_node is not None:
        return _merged(options, selection, [bundle, *(read_bundle(p, merge) for p in _more_paths(options))], err)
    inventory = inventory_from_text(
        bundle.inventory_text, file=bundle.inventory_path, base_dir=Path(bundle.inventory_path).parent
    )
    desired = desired_state(inventory, err)
    if desired is None:
        return None
    if selection is None:
        selection = Selection.parse(bundle.selection.get("only", ()), bundle.selection.get("skip", ()))
    read = {
        name for name in bundle.selection.get(ONLY_HOSTS_KEY) or () if isinstance(name, str)
    }  # a --hosts run read only these
    only_hosts = [n.name for n in inventory.nodes if n.name in read] if read else None
    missing = sorted(
        set(only_hosts if only_hosts is not None else (n.name for n in inventory.nodes)) - set(bundle.hosts)
    )
    if missing:
        raise BundleError(f"{bundle.path}: no evidence for nodes {', '.join(missing)}")
    return VerifyRun(
        desired,
        bundle.inventory_path,
        bundle.inventory_text,
        bundle.hosts,
        bundle.pings,
        bundle.mesh,
        selection,
        bundle.day,
        bundle.ssh_execs,
        bundle.allreduce_findings,
        bundle.allreduce_doc,
        from_bundle=str(options.from_bundle),
        only_hosts=only_hosts,
    )


def _more_paths(options: VerifyOptions) -> List[Path]:

    assert options.from_bundle is not None
    return bundle_paths(options.from_bundle, options.more_bundles)[1:]


def _merged(
    options: VerifyOptions, selection: Optional[Selection], bundles: List[Any], err: Console
) -> Optional[VerifyRun]:
    """``--from-bundle DIR DIR...``: node bundles of verify --local runs, judged as one cluster."""

    check_compatible(bundles, explicit_selection=selection is not None)
    first = bundles[0]
    inventory = inventory_from_text(
        first.inventory_text, file=first.inventory_path, base_dir=Path(first.inventory_path).parent
    )
    desired = desired_state(inventory, err)
    if desired is None:
        return None
    if selection is None:
        selection = Selection.parse(first.selection.get("only", ()), first.selection.get("skip", ()))
    merged = merge_bundles(bundles, desired, selection.needs_pings)
    label = ", ".join(merged.sources.values())
    return VerifyRun(
        desired,
        first.inventory_path,
        first.inventory_text,
        merged.hosts,
        merged.pings,
        first.mesh,
        selection,
        merged.day,
        merged.ssh_execs,
        [],
        None,
        from_bundle=label,
        merged=merged,
    )


@contextlib.contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Python's cycle collector off for the command, and back as it was after (also on an error).

    verify builds ~250 KB of small objects per host (facts, results) that live to the end; the
    collector kept walking all of them as they grew, so each host's checks cost more the more
    hosts were already done. Reference counting still
    frees everything that is not a cycle at once; cycles made meanwhile (few: tracebacks of
    errors) are collected when it is back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_verify(options: VerifyOptions) -> int:
    """The whole command; returns the exit code. Raises nothing for bad input: it says so, exits 2."""
    with without_cyclic_gc():
        return _run_verify(options)


def _run_verify(options: VerifyOptions) -> int:

    err = Console(stderr=True, highlight=False)
    try:
        explicit = bool(options.only or options.skip)
        selection = Selection.parse(options.only, options.skip) if explicit or options.from_bundle is None else None
        # Shown, never acted on: held to apply's checks of the file's type, size, mode and
        # fields, but not to its ownership rule (that guards what apply runs).
        saved_plan = read_plan(options.plan, owned=False) if options.plan is not None else None
        if options.from_bundle is not None:
            run = _from_bundle(options, selection, err)
        elif options.local:
            assert selection is not None
            run = verify_local(options, selection, err)
        else:
            assert selection is not None
            run = _live(options, selection, err)
    except InputError as error:
        return print_input_errors(error, err)
    except (BundleError, SelectionError) as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return exitcodes.INVALID
    if run is None:
        return exitcodes.INVALID
    try:
        return _report(run, options, err, saved_plan)
    finally:
        if run.bundle_writer is not None:
            run.bundle_writer.abandon()  # a no-op once the bundle is in place; else no half bundle stays


def _save_bundle(
    run: VerifyRun,
    target: Path,
    document: Dict[str, Any],
    keep_runs: int,
    err: Console,
    chosen_dir: bool = False,
    results: Sequence[CheckResult] = (),
) -> Optional[Path]:
    """Write the evidence bundle (when the disk has room) and drop runs past ``keep_runs``;
    ``results`` (those ``document`` was made of) choose the hosts whose facts.json it holds
    (fleet.bundle.facts_wanted), and its results.json is their verdict
    (report.verify.bundle_document: passed results counted, not listed).

    The bundle is evidence, not the verdict: any failure here is a warning, and the document then
    says ``"bundle": null``. Returns where it was saved, or None.
    """

    recorded = {**run.selection.to_dict(), **({ONLY_HOSTS_KEY: run.only_hosts} if run.only_hosts is not None else {})}
    bundle = Bundle(
        run.inventory_path,
        run.inventory_text,
        run.hosts,
        run.pings,
        run.mesh,
        recorded,
        run.day,
        ssh_execs=run.ssh_execs,
        allreduce_findings=run.allreduce_findings,
        allreduce_doc=run.allreduce_doc,
        local_node=run.local_node,
        node_tie=run.node_tie,
    )
    writer = run.bundle_writer
    if writer is None:  # --local: the bundle is written at the end, by a writer made here
        writer = BundleWriter(target, chosen_dir, run.local_node)
    verdict = bundle_document(document, results)
    saved: Optional[Path] = None
    if writer.problem is not None:  # given up while the run went (disk full, no folder)
        err.print(f"[yellow]warning:[/] {escape(writer.problem)}", soft_wrap=True)
        disk = DiskCheck(False)
    else:
        disk = check_free_space(target.parent, bundle_size(bundle, verdict, results))
        if disk.warning:
            err.print(f"[yellow]warning:[/] {escape(disk.warning)}", soft_wrap=True)
    if disk.write:
        try:
            saved = write_bundle(bundle, target, verdict, chosen_dir=chosen_dir, writer=writer, results=results)
        except (OSError, ValueError) as exc:
            err.print(
                f"[yellow]warning:[/] the evidence bundle could not be saved in {escape(str(target))}: {escape(str(exc))}",
                soft_wrap=True,
            )
    else:
        writer.abandon()
    for folder in writer.removed_stale:
        err.print(
            f"Removed {escape(str(folder))}: the partial bundle of a run that stopped before finishing it.",
            soft_wrap=True,
        )
    for problem in writer.stale_problems:
        err.print(
            f"[yellow]warning:[/] the partial bundle of a run that stopped could not be removed: {escape(problem)}",
            soft_wrap=True,
        )
    if saved is None:
        document["bundle"] = None
    if not chosen_dir:  # --bundle-dir: the user's folder; runs elsewhere are not this run's to prune
        try:
            prune_runs(target.parent, keep_runs)
        except OSError as exc:
            err.print(
                f"[yellow]warning:[/] old runs under {escape(str(target.parent))} could not be removed: {escape(str(exc))}",
                soft_wrap=True,
            )
    return saved


def _only_hosts(run: VerifyRun, results: List[CheckResult], chosen: set) -> Tuple[VerifyRun, List[CheckResult]]:
    """``--hosts``: the results, findings and host evidence of the chosen nodes, and those about
    no node in particular; the exit code then judges only them."""
    kept = [r for r in results if r.node is None or r.node in chosen]
    hosts = {name: host for name, host in run.hosts.items() if name in chosen}
    findings = [f for f in run.allreduce_findings if f.node is None or f.node in chosen]
    return replace(run, hosts=hosts, allreduce_findings=findings), kept


def _report(run: VerifyRun, options: VerifyOptions, err: Console, saved_plan: Optional[PlanFile] = None) -> int:

    if run.local_node is not None:
        results: List[CheckResult] = node_results(
            run.desired, run.hosts[run.local_node], run.pings, run.selection, run.day
        )
    else:
        results = run_checks(run.desired, run.hosts, run.pings, run.selection, run.day)
    shown = run  # a bundle re-check with --hosts shows only those nodes of what it holds
    if options.hosts_pattern is not None and run.from_bundle is not None:
        shown, results = _only_hosts(
            run, results, {n.name for n in select_nodes(run.desired.inventory, options.hosts_pattern)}
        )
    code = exitcodes.OK if no_errors(results) and not has_errors(shown.allreduce_findings) else exitcodes.FAILED
    if any(hit["limit"] == "command_timeout" for hit in run.limits_hit):
        code = exitcodes.FAILED  # incomplete, whatever the checks of the rest say
    node_order = [n.name for n in run.desired.inventory.nodes if n.name in shown.hosts]
    if options.junit is not None:
        try:
            write_file(
                options.junit,
                render_junit(
                    results,
                    node_order,
                    run.desired.inventory.name,
                    shown.allreduce_findings if run.allreduce_doc is not None or shown.allreduce_findings else None,
                ),
            )  # 0600: host evidence
        except OSError as exc:
            err.print(f"[bold red]error:[/] --junit {escape(str(options.junit))}: {escape(str(exc.strerror or exc))}")
            code = exitcodes.FAILED
    if options.prometheus_file is not None and not _write_metrics(
        options.prometheus_file, _metrics(results, shown, node_order, code, run.allreduce_doc), err
    ):
        code = exitcodes.FAILED
    if options.html is not None:
        page = HtmlInput(
            run.desired,
            results,
            shown.hosts,
            node_order,
            run.pings,
            code,
            run.allreduce_doc,
            shown.allreduce_findings,
            run.from_bundle or run.inventory_path,
            plan=saved_plan,
            plan_path=str(options.plan) if options.plan is not None else "",
        )
        try:
            write_file(options.html, render_html(page), mode=0o600)  # host evidence
        except OSError as exc:
            err.print(
                f"[bold red]error:[/] --html {escape(str(options.html))}: {escape(str(exc.strerror or exc))}",
                soft_wrap=True,
            )
            code = exitcodes.FAILED
    chosen_dir = run.local_node is not None and options.bundle_dir is not None
    if run.from_bundle:
        target = None
    elif run.bundle_writer is not None:
        target = run.bundle_writer.target  # named when the run began; its hosts' files are written
    else:
        target = options.bundle_dir if chosen_dir else new_bundle_dir(options.runs_dir or RUNS_DIR)
    document = verify_document(
        inventory={
            "path": run.inventory_path,
            "sha256": hashlib.sha256(run.inventory_text.encode()).hexdigest(),
            "name": run.desired.inventory.name,
        },
        results=results,
        hosts=shown.hosts,
        ssh_execs=run.ssh_execs,
        mesh=run.mesh,
        selection=run.selection.to_dict(),
        exit_code=code,
        extra=shown.allreduce_findings,
        allreduce=run.allreduce_doc,
        bundle=str(target) if target else None,
        from_bundle=run.from_bundle,
        lazy_checks=True,  # written by json_chunks only (--format json; the bundle's verdict: those not passed): made while written
    )
    document["limits_hit"] = run.limits_hit
    if run.local_node is not None:
        document["local_node"] = run.local_node
    if run.merged is not None:
        document["merged"] = run.merged.to_dict()
    #: verify --hosts: the nodes read; the cluster checks judged them alone.
    document["only_hosts"] = compressed(run.only_hosts) if run.only_hosts is not None else None
    if target is not None:
        target = _save_bundle(run, target, document, options.keep_runs, err, chosen_dir=chosen_dir, results=results)
    if options.output_format == "prometheus":
        sys.stdout.write(_metrics(results, shown, node_order, code, run.allreduce_doc))
    elif options.output_format == "json":
        write_json(document, sys.stdout)  # every result; compact, in slices: 4,096 hosts in seconds, not minutes
    else:
        out = Console(highlight=False)
        if run.merged is not None:
            for line in describe(run.merged):
                out.print(escape(line), soft_wrap=True)
        elif run.from_bundle:
            out.print(
                f"Re-checked the evidence in {escape(run.from_bundle)} (gathered {run.day.isoformat()}); no host was contacted."
            )
        if run.local_node is not None:
            out.print(
                f"Checked this machine as {escape(run.local_node)} (--local, no SSH); its peers' own checks are theirs.",
                soft_wrap=True,
            )
        if run.only_hosts is not None:
            out.print(
                f"Read only {escape(compressed(run.only_hosts))} (--hosts): the cluster checks judged these "
                "nodes alone, and their pings went to the planned addresses of the other nodes, which were not contacted.",
                soft_wrap=True,
            )
        print_verify(
            out,
            results,
            shown.hosts,
            node_order,
            shown.allreduce_findings,
            str(target) if target else None,
            counts=document["summary"],
        )
        for hit in run.limits_hit:
            if hit["limit"] == "command_timeout":
                out.print(
                    f"[yellow]The command's deadline ({hit['seconds']:g}s) passed in {escape(hit['step'])}: {escape(compressed(hit['hosts']))} were given up on; their results are incomplete.[/]",
                    soft_wrap=True,
                )
    return code


def _metrics(
    results: List[CheckResult],
    shown: VerifyRun,
    node_order: List[str],
    code: int,
    allreduce_doc: Optional[Dict[str, Any]],
) -> str:
    """The Prometheus textfile of this run (``--format prometheus`` / ``--prometheus-file``)."""

    return verify_metrics(results, shown.hosts, node_order, code, time.time(), allreduce_doc, __version__)


def _write_metrics(path: Path, metrics: str, err: Console) -> bool:
    """``--prometheus-file``: write atomically; a failure is said with the path (and exits 1)."""

    try:
        write_metrics_file(path, metrics)
    except OSError as exc:
        err.print(f"[bold red]error:[/] --prometheus-file {escape(str(path))}: {escape(str(exc.strerror or exc))}")
        return False
    return True
