"""The ``apply`` flow: check the saved plan and its inventory, re-read the hosts, run each host's
script, journal every step, report."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import click
from rich.console import Console

from ascendprep.apply.journal import ApplyJournal, public_change
from ascendprep.base import exitcodes
from ascendprep.base.findings import Severity
from ascendprep.base.hostrange import compressed
from ascendprep.base.paths import RANK_TABLE
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.desired.state import build_desired, plan_rank_table_v2
from ascendprep.facts.shell import checked_output_cap_override
from ascendprep.facts.unit import PLAN
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import area_of, diff_host, managed_keys, reconcile
from ascendprep.plan.planfile import DEFAULT_PLAN, NotTrusted, read_inventory_bytes, read_plan, write_plan
from ascendprep.plan.reads import npu_kinds_for, units_for_changes, with_rank_table_v2_reads
from ascendprep.remote.sudo import SudoPassword
from ascendprep.report import console as report_console
from ascendprep.report.changes import apply_table
from ascendprep.run.common import (
    hosts_deadline,
    open_session,
    select_nodes,
)
from ascendprep.run.hosts import apply_changes, gather_facts
from ascendprep.run.node_local import local_session, machine_identity, match_node
from ascendprep.run.progress import progress_for_terminal

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.apply.journal import ApplyJournal
    from ascendprep.desired.state import DesiredState
    from ascendprep.inventory.load import Inventory
    from ascendprep.inventory.model import Node
    from ascendprep.plan.diff import Change
    from ascendprep.plan.planfile import PlanFile
    from ascendprep.run.fanout import HostOutcome
    from ascendprep.run.hosts import AppliedHost


#: Exit status after SIGTERM (128 + 15), as a shell reports it.
TERMINATED = 143


#: Exit status after Ctrl-C (128 + 2).
INTERRUPTED = 130


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C so the journal is finished and connections closed."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Refused(Exception):
    """The plan cannot be carried out; ``lines`` say why (printed after the journal is closed)."""

    def __init__(self, heading: str, lines: list[str], footer: str) -> None:
        super().__init__(heading)
        self.heading, self.lines, self.footer = heading, lines, footer


def rebuild_rank_table_v2(desired: "DesiredState", gathered: dict, local: bool) -> None:
    """Recompute the rank table 2.0 from every node's fresh EIDs into ``desired`` (the fresh diff
    then confirms it by digest against the plan's); refused when it cannot be built."""
    if local:
        raise Refused(
            f"The plan writes the rank table 2.0 ({RANK_TABLE}), built from every node's EIDs; --local reads only this machine, so it cannot be confirmed. Nothing was changed.",
            [],
            "Run 'ascendprep apply' without --local, from a machine that reaches every node.",
        )
    facts = {name: o.value.facts if o.ok and o.value is not None else None for name, o in gathered.items()}
    problems = [f for f in plan_rank_table_v2(desired, facts) if f.severity is Severity.ERROR]
    if problems:
        raise Refused(
            "The rank table 2.0 the plan writes cannot be rebuilt from the nodes now; nothing was changed:",
            [finding.message for finding in problems],
            "Run 'ascendprep plan' again, review, then apply the new plan.",
        )


def _load_inventory(path: Path, saved: "PlanFile", given: Optional[Path]) -> "Inventory":
    """The inventory from ``--inventory`` or from the plan; its hash must be the plan's."""

    source = given if given is not None else Path(saved.inventory_path)
    if given is None and not source.is_absolute():
        raise InputError(
            [
                Located(
                    str(path),
                    None,
                    "inventory.path",
                    f"'{saved.inventory_path}' is not an absolute path (plan files record the resolved path)",
                )
            ]
        )
    try:
        data, digest = read_inventory_bytes(source, owned=given is None)  # the plan's: held to the plan's rule
    except FileNotFoundError:
        where = (
            Located(str(path), None, "inventory.path", f"the plan's inventory {source} no longer exists")
            if given is None
            else Located(str(source), None, "", "no such file")
        )
        raise InputError([where]) from None
    except NotTrusted as exc:
        raise InputError(
            [Located(str(source), None, "", f"{exc}; with --inventory FILE you name the inventory yourself")]
        ) from None
    except OSError as exc:
        raise InputError([Located(str(source), None, "", f"cannot read: {exc}")]) from None
    if digest != saved.inventory_sha256:
        if given is None:
            raise Refused(
                f"The inventory {source} changed since this plan was made; nothing was changed.",
                [],
                "Run 'ascendprep plan' again, review, then apply the new plan.",
            )
        raise Refused(
            f"{source} is not the inventory this plan was made from ({saved.inventory_path}, sha256 {saved.inventory_sha256[:12]}…); nothing was changed.",
            [],
            "Apply a plan made from this inventory ('ascendprep plan INVENTORY').",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Located(str(source), None, "", f"cannot read: {exc}")]) from None
    return inventory_from_text(text, str(source), base_dir=source.parent)


def _check_hosts(saved: PlanFile, desired: DesiredState) -> list[str]:
    """Plan hosts that are not this inventory's nodes (or not at its address)."""
    problems = []
    if saved.cluster != desired.inventory.name:
        problems.append(f"the plan is for cluster {saved.cluster!r}, the inventory is {desired.inventory.name!r}")
    seen: set[str] = set()
    for index, host in enumerate(saved.hosts):
        node = desired.nodes.get(host.node)
        if node is None:
            problems.append(f"hosts[{index}]: {host.node!r} is not a node of the inventory")
        elif host.address != node.node.host:
            problems.append(f"{host.node}: the plan says address {host.address!r}, the inventory {node.node.host}")
        if host.node in seen:
            problems.append(f"{host.node!r} is listed twice")
        seen.add(host.node)
    return problems


#: Remote phases of ``apply`` (for the default deadline): a fresh gather, then the changes.
APPLY_PHASES = 2


def run_apply(
    plan_path: Optional[Path],
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword] = None,
    inventory_path: Optional[Path] = None,
    timeout: Optional[float] = None,
    hosts_pattern: Optional[str] = None,
    local: bool = False,
    node: Optional[str] = None,
) -> int:

    out = report_console()
    err = report_console(stderr=True)
    path = plan_path or DEFAULT_PLAN
    checked_output_cap_override()
    saved = read_plan(path, owned=inventory_path is None)  # --inventory: the plan only selects and confirms
    journal = ApplyJournal(path, saved.cluster)  # its folder is held to the plan's rule in any case
    try:
        with _sigterm_unwinds():
            return _apply(
                out,
                err,
                path,
                saved,
                journal,
                accept_new_host_keys,
                forks,
                sudo_password,
                inventory_path,
                timeout,
                hosts_pattern,
                local,
                node,
            )
    except Refused as refused:
        journal.finish("refused", "\n".join([refused.heading, *refused.lines]))
        err.print(f"[red]{markup_safe(refused.heading)}[/]", soft_wrap=True)
        for line in refused.lines:
            err.print(f"  {markup_safe(line)}", soft_wrap=True)
        err.print(refused.footer, markup=False)
        return exitcodes.FAILED
    except InputError as error:
        journal.finish("refused", "; ".join(str(p) for p in error.problems))
        raise
    except click.UsageError as error:  # --hosts naming no node of the inventory: exit 2
        journal.finish("refused", error.format_message())
        raise
    except KeyboardInterrupt:
        journal.finish("interrupted", "Ctrl-C")
        err.print(f"Interrupted; journal: {journal.path}", markup=False)
        return INTERRUPTED
    except Terminated:
        journal.finish("interrupted", "SIGTERM")
        err.print(f"Terminated; journal: {journal.path}", markup=False)
        return TERMINATED
    except BaseException as exc:
        journal.finish("failed", f"internal error: {type(exc).__name__}")
        raise
    finally:
        journal.finish("finished")


def _apply(
    out: Console,
    err: Console,
    path: Path,
    saved: PlanFile,
    journal: ApplyJournal,
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword],
    inventory_path: Optional[Path],
    timeout: Optional[float],
    hosts_pattern: Optional[str] = None,
    local: bool = False,
    node: Optional[str] = None,
) -> int:

    inventory = _load_inventory(path, saved, inventory_path)
    if inventory_path is None:
        err.print(
            f"Inventory: {inventory.source} (named by the plan; --inventory names it yourself)",
            markup=False,
            soft_wrap=True,
        )
    desired = build_desired(inventory)
    journal.record["inventory"] = {"path": inventory.source, "sha256": saved.inventory_sha256}
    foreign = _check_hosts(saved, desired)
    if foreign:
        raise Refused(
            "The plan names hosts that are not this inventory's nodes; nothing was changed:",
            foreign,
            "Run 'ascendprep plan' again, review, then apply the new plan.",
        )
    this = _local_node(inventory, node) if local else None
    chosen = {this.name} if this is not None else {n.name for n in select_nodes(inventory, hosts_pattern)}
    left_out = [h.node for h in saved.hosts if h.node not in chosen]
    if this is not None:
        journal.record["local_node"] = this.name
        err.print(
            f"--local: only {markup_safe(this.name)} (this machine) is read and changed, without SSH.", soft_wrap=True
        )
    elif left_out:
        err.print(
            f"--hosts: {markup_safe(compressed(left_out))} of the plan left out; nothing will be done there.",
            soft_wrap=True,
        )
    skipped = [h for h in saved.hosts if not h.reachable and h.node in chosen]
    planned = {h.node: h.changes for h in saved.hosts if h.reachable and h.changes and h.node in chosen}
    if not planned:
        journal.finish("finished", "no changes in the plan")
        for host in skipped:
            err.print(
                f"[yellow]{markup_safe(host.node)}: not in this plan ({markup_safe(host.error)}); nothing will be done there.[/]"
            )
        out.print("No changes in this plan. Nothing to do.")
        return exitcodes.FAILED if skipped else exitcodes.OK

    # Ascend 950: the rank table 2.0 is built from every node's EIDs, so writing it anywhere
    # means reading them all again and confirming the table is the one the plan showed.
    table_v2 = inventory.product.is_950 and any(
        change.key == f"file:{RANK_TABLE}" for changes in planned.values() for change in changes
    )
    nodes = [n for n in inventory.nodes if n.name in planned or (table_v2 and this is None)]
    deadline = hosts_deadline(inventory, timeout, forks, APPLY_PHASES, hosts=len(nodes))
    with _session(inventory, this, accept_new_host_keys, forks, sudo_password, deadline, nodes) as session:
        # Re-read only what the planned changes depend on: the areas (NPUs, kernel settings,
        # files, firewall) their values come from, and of the NPUs only the planned kinds (and
        # the address they need); a change elsewhere since planning is not this plan's business
        # (the next plan shows it).
        areas = {name: {area_of(change) for change in changes} for name, changes in planned.items()}
        npu_kinds = {name: npu_kinds_for(changes) for name, changes in planned.items()}
        npus_of = {node.name: node.npus for node in nodes}
        units = {name: units_for_changes(changes, npus_of.get(name)) for name, changes in planned.items()}
        if table_v2:
            units = {node.name: with_rank_table_v2_reads(units.get(node.name)) for node in nodes}
        gathered = gather_facts(
            session,
            inventory,
            progress_for_terminal("re-reading hosts"),
            only={node.name for node in nodes},
            phase=PLAN,
            units=units,
        )
        if table_v2:
            rebuild_rank_table_v2(desired, gathered, this is not None)
        to_apply: dict[str, list[Change]] = {}
        stale: list[str] = []
        tampered: list[str] = []
        done: dict[str, list[Change]] = {}
        for name, changes in planned.items():
            outcome = gathered.get(name)
            if outcome is None or not outcome.ok or outcome.value is None:
                stale.append(f"{name}: cannot be read now ({outcome.error if outcome else 'not contacted'})")
                continue
            fresh = diff_host(desired, name, outcome.value.facts, areas=areas[name], npu_kinds=npu_kinds[name])
            stale.extend(f"{name}: {reason}" for reason in fresh.incomplete)
            result = reconcile(changes, fresh.changes, managed_keys(desired, name))
            stale.extend(f"{name}: {line}" for line in result.stale)
            tampered.extend(f"{name}: {line}" for line in result.tampered)
            to_apply[name] = result.to_apply
            done[name] = result.already_done
        if tampered:
            raise Refused(
                "The plan file holds changes that this inventory does not produce (was it edited?); nothing was changed:",
                tampered,
                "Run 'ascendprep plan' again, review, then apply the new plan.",
            )
        if stale:
            raise Refused(
                "The plan is stale; nothing was changed. What moved since planning:",
                stale,
                "Run 'ascendprep plan' again, review, then apply the new plan.",
            )
        if not any(to_apply.values()):
            journal.finish("finished", "every host already matches the plan")
            for host in skipped:
                err.print(
                    f"[yellow]{markup_safe(host.node)}: not in this plan ({markup_safe(host.error)}); nothing will be done there.[/]"
                )
            out.print("No changes: every host already matches this plan. Nothing was touched.")
            return exitcodes.FAILED if skipped else exitcodes.OK
        tools = {name: gathered[name].value.facts.hccn_tool for name in to_apply if gathered[name].value is not None}
        journal.intend(to_apply, done)
        outcomes = apply_changes(session, to_apply, tools, progress_for_terminal("applying"))

    rows, failed = _record_results(journal, to_apply, outcomes)
    journal.finish("finished", "some changes failed" if failed else None)
    for host in skipped:
        err.print(
            f"[yellow]{markup_safe(host.node)}: not in this plan ({markup_safe(host.error)}); nothing was done there.[/]"
        )
    return _report(out, path, saved, rows, failed, journal.path)


def _local_node(inventory: "Inventory", wanted: Optional[str]) -> "Node":
    """``--local``: the inventory node this machine is (``--node``, or matched; else exit 2)."""

    return match_node(inventory, machine_identity(), wanted)


def _session(
    inventory: "Inventory",
    this: Optional["Node"],
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword],
    deadline: Any,
    nodes: list["Node"],
) -> Any:
    """The hosts' session: SSH to ``nodes``, or with --local this machine alone (no SSH)."""
    if this is None:
        return open_session(inventory, accept_new_host_keys, forks, sudo_password, deadline, nodes)

    return local_session(inventory, this, deadline)


def _record_results(
    journal: ApplyJournal, to_apply: dict[str, list[Change]], outcomes: dict[str, HostOutcome[AppliedHost]]
) -> tuple[list[tuple[str, Change, Optional[int], str]], bool]:
    """Each change's result, as table rows, written into the journal (before any printing)."""

    rows: list[tuple[str, Change, Optional[int], str]] = []
    failed = False
    for name, changes in to_apply.items():
        if not changes:
            continue
        outcome = outcomes.get(name)
        steps: list[dict[str, Any]] = []
        error: Optional[str] = None
        if outcome is None or not outcome.ok or outcome.value is None:
            failed = True
            error = (outcome.error if outcome is not None else None) or "not run"
            for change in changes:
                rows.append((name, change, None, error))
        else:
            applied = outcome.value
            if applied.locked:
                error = "another apply holds the lock"
            elif applied.rc != 0 and not applied.steps:
                error = applied.stderr.strip() or f"the apply script exited with status {applied.rc}"
            for change in changes:
                step = applied.steps.get(change.key)
                rc = step.rc if step else None
                message = step.message if step else (applied.stderr.strip() or "the script stopped before this step")
                rows.append((name, change, rc, message))
                steps.append(
                    {**public_change(change), "rc": rc, "tries": step.tries if step else None, "output": message}
                )
            if error is not None or any(s["rc"] != 0 for s in steps):
                failed = True
                error = error or "a step failed"
        journal.host_result(name, "failed" if error is not None else "done", steps, error)
    return rows, failed


def _report(
    out: Console,
    path: Path,
    saved: PlanFile,
    rows: list[tuple[str, Change, Optional[int], str]],
    failed: bool,
    journal_path: Path,
) -> int:

    out.print(apply_table(rows))
    ok_steps = sum(1 for r in rows if r[2] == 0)
    out.print(f"Applied {ok_steps} of {len(rows)} changes; journal: {journal_path}", markup=False)
    if failed:
        out.print(
            "[red]Some changes failed: fix the cause shown above, then run 'ascendprep plan' and 'ascendprep apply' again.[/]"
        )
        return exitcodes.FAILED
    saved.applied_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_plan(saved, path)
    return exitcodes.OK
