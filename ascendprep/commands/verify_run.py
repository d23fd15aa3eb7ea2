"""What ``ascendprep verify`` does, once click has parsed the options (see commands/verify.py).

1. Load the inventory and its desired state (rule violations: exit 2).
2. One SSH round trip per host gathers its facts; a second one per host pings NPU pairs (the
   ``--mesh``); with ``--allreduce`` the all-reduce launcher runs on the same connections.
3. The checks (:mod:`ascendprep.checks`) turn the evidence into results; nothing they do touches a
   host, so ``--from-bundle`` re-runs them on a saved run with the same outcome.
4. Output: a summary (text) or a document (json), optionally JUnit; every live run saves its
   evidence bundle under ``.ascendprep/runs/``. Exit 0 when nothing at error severity failed.

Kept apart from the click command so that ``ascendprep --help`` does not import SSH, the
probes and every check just to list the commands.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from rich.console import Console
from ascendprep.report.text import markup_safe as escape

from ascendprep import exitcodes
from ascendprep.checks.bundle import RUNS_DIR, Bundle, BundleError, bundle_size, check_free_space, new_bundle_dir, prune_runs, read_bundle, write_bundle
from ascendprep.checks.context import HostEvidence
from ascendprep.checks.evidence import collect
from ascendprep.checks.mesh import PingPlan
from ascendprep.checks.model import CheckResult
from ascendprep.checks.registry import Selection, SelectionError
from ascendprep.checks.runner import no_errors, run_checks
from ascendprep.desired import DesiredState, build_desired
from ascendprep.findings import Finding, Severity, has_errors
from ascendprep.hosts import host_accesses
from ascendprep.inventory import Inventory, inventory_from_text
from ascendprep.limits import KEEP_RUNS_DEFAULT
from ascendprep.remote.sudo import SudoPassword
from ascendprep.remote.deadline import Deadline, command_deadline
from ascendprep.remote.fanout import Session
from ascendprep.probes.shell import checked_output_cap_override, remote_call_output_cap
from ascendprep.report.limits_hit import collect_limits_hit
from ascendprep.remote.progress import progress_for_terminal
from ascendprep.report.findings import findings_table
from ascendprep.report.junit import render_junit
from ascendprep.report.verify import print_verify, verify_document
from ascendprep.yamlsource import InputError, Located, read_input_text


@dataclass(frozen=True)
class VerifyOptions:
    inventory: Optional[Path]
    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()
    output_format: str = "text"
    junit: Optional[Path] = None
    mesh: Optional[str] = None
    from_bundle: Optional[Path] = None
    accept_new_host_keys: bool = False
    forks: Optional[int] = None
    #: A prompted sudo password (``--ask-sudo-password``); None: ASCENDPREP_SUDO_PASSWORD, if set.
    sudo_password: Optional[SudoPassword] = None
    #: ``ascendprep.allreduce.options.AllreduceOptions`` when --allreduce was given.
    allreduce: Optional[Any] = None
    runs_dir: Optional[Path] = None
    #: Run folders kept under runs_dir after this run's bundle is saved (``--keep-runs``).
    keep_runs: int = KEEP_RUNS_DEFAULT
    #: ``--timeout``: seconds the whole command may take (None: derived from the fleet).
    timeout: Optional[float] = None
    #: ``--exec-via``: the checked wrapper the node checks run through (ascendprep.execvia.ExecVia).
    exec_via: Optional[Any] = None


@dataclass
class _Run:
    """What a verify produced, live or from a bundle."""

    desired: DesiredState
    inventory_path: str
    inventory_text: str
    hosts: Dict[str, HostEvidence]
    pings: Optional[PingPlan]
    mesh: str
    selection: Selection
    day: date
    ssh_execs: Dict[str, int]
    allreduce_findings: List[Finding]
    allreduce_doc: Optional[Dict[str, Any]] = None
    from_bundle: Optional[str] = None
    #: Limits the live run hit (report.limits_hit); a bundle re-check hits none.
    limits_hit: List[Dict[str, Any]] = field(default_factory=list)


def _fail_input(error: InputError, console: Console) -> int:
    for problem in error.problems:
        console.print(f"[bold red]error:[/] {escape(str(problem))}", soft_wrap=True)
    return exitcodes.INVALID


def _desired(inventory: Inventory, console: Console) -> Optional[DesiredState]:
    desired = build_desired(inventory)
    if desired.invalid:
        console.print(findings_table([f for f in desired.findings if f.severity is Severity.ERROR], "The inventory breaks device-IP rules"))
        return None
    return desired


def _live(options: VerifyOptions, selection: Selection, err: Console) -> Optional[_Run]:
    assert options.inventory is not None
    checked_output_cap_override()
    path = options.inventory
    text = read_input_text(path)
    inventory = inventory_from_text(text, file=str(path), base_dir=path.parent)
    desired = _desired(inventory, err)
    if desired is None:
        return None
    if options.allreduce is not None:
        from ascendprep.allreduce.launch import option_problems

        problems = option_problems(inventory, options.allreduce)
        if problems:
            raise InputError([Located("--allreduce", None, "", problem) for problem in problems])
    mesh = options.mesh or "ring"
    day = datetime.now(timezone.utc).date()
    accesses = host_accesses(inventory, options.accept_new_host_keys)
    allreduce_findings: List[Finding] = []
    allreduce_doc = None
    deadline = verify_deadline(inventory, options)
    with Session(accesses, options.forks or inventory.model.ssh.forks, sudo_password=options.sudo_password, deadline=deadline) as session:
        hosts, pings = collect(session, desired, mesh, selection.needs_pings, lambda what: progress_for_terminal(what), exec_via=options.exec_via)
        if options.allreduce is not None:
            from ascendprep.allreduce.launch import run_allreduce  # written separately; loaded only when asked for

            shown = err if options.output_format == "json" else Console(highlight=False)
            outcome = run_allreduce(inventory, session, _allreduce_within(options.allreduce, deadline), shown)
            allreduce_findings = list(outcome.findings)
            allreduce_doc = outcome.to_dict()
        execs = session.exec_counts()
    limits_hit = collect_limits_hit(session.limits_hit, {name: host.facts for name, host in hosts.items()}, remote_call_output_cap())
    return _Run(desired, str(path.resolve()), text, hosts, pings, mesh, selection, day, execs, allreduce_findings, allreduce_doc, limits_hit=limits_hit)


#: Remote phases of ``verify`` (for the default deadline): the gather, then the pings.
VERIFY_PHASES = 2


def verify_deadline(inventory: Inventory, options: VerifyOptions) -> Deadline:
    """``--timeout``, or the default for this fleet; --allreduce adds its own default budget."""
    ssh = inventory.model.ssh
    deadline = command_deadline(options.timeout, len(inventory.nodes), options.forks or ssh.forks, ssh.connect_timeout, ssh.command_timeout, VERIFY_PHASES)
    if options.timeout is None and options.allreduce is not None:
        from ascendprep.allreduce.options import DEFAULT_TIMEOUT_S

        deadline.seconds += DEFAULT_TIMEOUT_S
    return deadline


def _allreduce_within(allreduce: Any, deadline: Deadline) -> Any:
    """The all-reduce's options with its overall limit cut to what is left of the command's."""
    from ascendprep.allreduce.options import DEFAULT_TIMEOUT_S, MIN_TIMEOUT_S

    wanted = allreduce.timeout if allreduce.timeout is not None else DEFAULT_TIMEOUT_S
    return replace(allreduce, timeout=max(MIN_TIMEOUT_S, min(wanted, deadline.remaining())))


def _from_bundle(options: VerifyOptions, selection: Optional[Selection], err: Console) -> Optional[_Run]:
    assert options.from_bundle is not None
    bundle = read_bundle(options.from_bundle)
    inventory = inventory_from_text(bundle.inventory_text, file=bundle.inventory_path, base_dir=Path(bundle.inventory_path).parent)
    desired = _desired(inventory, err)
    if desired is None:
        return None
    if selection is None:
        selection = Selection.parse(bundle.selection.get("only", ()), bundle.selection.get("skip", ()))
    missing = sorted(set(n.name for n in inventory.nodes) - set(bundle.hosts))
    if missing:
        raise BundleError(f"{bundle.path}: no evidence for nodes {', '.join(missing)}")
    return _Run(desired, bundle.inventory_path, bundle.inventory_text, bundle.hosts, bundle.pings, bundle.mesh, selection, bundle.day, bundle.ssh_execs, bundle.allreduce_findings, bundle.allreduce_doc, from_bundle=str(options.from_bundle))


def run_verify(options: VerifyOptions) -> int:
    """The whole command; returns the exit code. Raises nothing for bad input: it says so, exits 2."""
    err = Console(stderr=True, highlight=False)
    try:
        explicit = bool(options.only or options.skip)
        selection = Selection.parse(options.only, options.skip) if explicit or options.from_bundle is None else None
        if options.from_bundle is not None:
            run = _from_bundle(options, selection, err)
        else:
            assert selection is not None
            run = _live(options, selection, err)
    except InputError as error:
        return _fail_input(error, err)
    except (BundleError, SelectionError) as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        return exitcodes.INVALID
    if run is None:
        return exitcodes.INVALID
    return _report(run, options, err)


def _save_bundle(run: _Run, target: Path, document: Dict[str, Any], keep_runs: int, err: Console) -> Optional[Path]:
    """Write the evidence bundle (when the disk has room) and drop runs past ``keep_runs``.

    The bundle is evidence, not the verdict: any failure here is a warning, and the document then
    says ``"bundle": null``. Returns where it was saved, or None.
    """
    bundle = Bundle(run.inventory_path, run.inventory_text, run.hosts, run.pings, run.mesh, run.selection.to_dict(), run.day, ssh_execs=run.ssh_execs, allreduce_findings=run.allreduce_findings, allreduce_doc=run.allreduce_doc)
    disk = check_free_space(target.parent, bundle_size(bundle, document))
    if disk.warning:
        err.print(f"[yellow]warning:[/] {escape(disk.warning)}", soft_wrap=True)
    saved: Optional[Path] = None
    if disk.write:
        try:
            saved = write_bundle(bundle, target, document)
        except (OSError, ValueError) as exc:
            err.print(f"[yellow]warning:[/] the evidence bundle could not be saved in {escape(str(target))}: {escape(str(exc))}", soft_wrap=True)
    if saved is None:
        document["bundle"] = None
    try:
        prune_runs(target.parent, keep_runs)
    except OSError as exc:
        err.print(f"[yellow]warning:[/] old runs under {escape(str(target.parent))} could not be removed: {escape(str(exc))}", soft_wrap=True)
    return saved


def _report(run: _Run, options: VerifyOptions, err: Console) -> int:
    results: List[CheckResult] = run_checks(run.desired, run.hosts, run.pings, run.selection, run.day)
    code = exitcodes.OK if no_errors(results) and not has_errors(run.allreduce_findings) else exitcodes.FAILED
    if any(hit["limit"] == "command_timeout" for hit in run.limits_hit):
        code = exitcodes.FAILED  # incomplete, whatever the checks of the rest say
    node_order = [n.name for n in run.desired.inventory.nodes]
    if options.junit is not None:
        try:
            options.junit.write_text(render_junit(results, node_order, run.desired.inventory.name, run.allreduce_findings if run.allreduce_doc is not None else None))
        except OSError as exc:
            err.print(f"[bold red]error:[/] --junit {escape(str(options.junit))}: {escape(str(exc.strerror or exc))}")
            code = exitcodes.FAILED
    target = None if run.from_bundle else new_bundle_dir(options.runs_dir or RUNS_DIR)
    document = verify_document(
        inventory={"path": run.inventory_path, "sha256": hashlib.sha256(run.inventory_text.encode()).hexdigest(), "name": run.desired.inventory.name},
        results=results,
        hosts=run.hosts,
        ssh_execs=run.ssh_execs,
        mesh=run.mesh,
        selection=run.selection.to_dict(),
        exit_code=code,
        extra=run.allreduce_findings,
        allreduce=run.allreduce_doc,
        bundle=str(target) if target else None,
        from_bundle=run.from_bundle,
    )
    document["limits_hit"] = run.limits_hit
    if target is not None:
        target = _save_bundle(run, target, document, options.keep_runs, err)
    if options.output_format == "json":
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    else:
        out = Console(highlight=False)
        if run.from_bundle:
            out.print(f"Re-checked the evidence in {escape(run.from_bundle)} (gathered {run.day.isoformat()}); no host was contacted.")
        print_verify(out, results, run.hosts, node_order, run.allreduce_findings, str(target) if target else None)
        for hit in run.limits_hit:
            if hit["limit"] == "command_timeout":
                out.print(f"[yellow]The command's deadline ({hit['seconds']:g}s) passed in {escape(hit['step'])}: {escape(', '.join(hit['hosts']))} were given up on; their results are incomplete.[/]", soft_wrap=True)
    return code
