"""``ascendprep apply [PLANFILE]``: carry out exactly a saved plan, or nothing.

1. The inventory must be the one the plan was computed from (sha256), else: plan again.
2. Every host with planned changes is read again and diffed afresh. A change the host no longer
   needs is already done (second apply, rerun after an interruption); a difference the plan did
   not foresee makes the plan stale, and then nothing is changed anywhere.
3. Each host runs one script with its remaining changes; results and the previous values go to a
   journal next to the plan file.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from rich.console import Console

from ascendprep.report import console as report_console

from ascendprep import exitcodes
from ascendprep.desired import build_desired
from ascendprep.hosts import AppliedHost, apply_changes, gather_facts, host_accesses
from ascendprep.inventory import load_inventory
from ascendprep.plan import Change, diff_host, reconcile
from ascendprep.planfile import DEFAULT_PLAN, PlanFile, file_sha256, read_plan, write_plan
from ascendprep.probes.shell import checked_output_cap_override
from ascendprep.remote.deadline import command_deadline
from ascendprep.remote.fanout import HostOutcome, Session
from ascendprep.remote.progress import progress_for_terminal
from ascendprep.remote.sudo import SudoPassword
from ascendprep.report.changes import apply_table
from ascendprep.yamlsource import InputError, Located


def _journal(plan_path: Path, record: dict[str, Any]) -> Path:
    folder = plan_path.parent / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"apply-{stamp}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def _public(change: Change) -> dict[str, Any]:
    """A change for the journal: values before/after, never file contents."""
    data = change.to_dict()
    data["action"] = {k: v for k, v in change.action.items() if k != "content"}
    return data


#: Remote phases of ``apply`` (for the default deadline): a fresh gather, then the changes.
APPLY_PHASES = 2


def run_apply(plan_path: Optional[Path], accept_new_host_keys: bool, forks: Optional[int], sudo_password: Optional[SudoPassword] = None, timeout: Optional[float] = None) -> int:
    out = report_console()
    err = report_console(stderr=True)
    path = plan_path or DEFAULT_PLAN
    checked_output_cap_override()
    saved: PlanFile = read_plan(path)
    inventory_path = Path(saved.inventory_path)
    if not inventory_path.exists():
        raise InputError([Located(str(path), None, "inventory", f"the plan's inventory {inventory_path} no longer exists")])
    if file_sha256(inventory_path) != saved.inventory_sha256:
        err.print(f"[red]The inventory {inventory_path} changed since this plan was made: run 'ascendprep plan' again.[/]")
        return exitcodes.FAILED
    inventory = load_inventory(inventory_path)
    desired = build_desired(inventory)
    skipped = [h for h in saved.hosts if not h.reachable]
    for host in skipped:
        err.print(f"[yellow]{host.node}: not in this plan ({host.error}); nothing will be done there.[/]")
    planned = {h.node: h.changes for h in saved.hosts if h.reachable and h.changes}
    if not planned:
        out.print("No changes in this plan. Nothing to do.")
        return exitcodes.FAILED if skipped else exitcodes.OK

    nodes = [n for n in inventory.nodes if n.name in planned]
    accesses = host_accesses(inventory, accept_new_host_keys, nodes)
    ssh = inventory.model.ssh
    deadline = command_deadline(timeout, len(nodes), forks or ssh.forks, ssh.connect_timeout, ssh.command_timeout, APPLY_PHASES)
    with Session(accesses, forks or ssh.forks, sudo_password=sudo_password, deadline=deadline) as session:
        gathered = gather_facts(session, inventory, progress_for_terminal("re-reading hosts"))
        to_apply: dict[str, list[Change]] = {}
        problems: list[str] = []
        done: dict[str, list[Change]] = {}
        for name, changes in planned.items():
            outcome = gathered[name]
            if not outcome.ok or outcome.value is None:
                problems.append(f"{name}: cannot be read now ({outcome.error})")
                continue
            fresh = diff_host(desired, name, outcome.value.facts)
            if fresh.incomplete:
                problems.extend(f"{name}: {reason}" for reason in fresh.incomplete)
            result = reconcile(changes, fresh.changes)
            problems.extend(f"{name}: {line}" for line in result.stale)
            to_apply[name] = result.to_apply
            done[name] = result.already_done
        if problems:
            err.print("[red]The plan is stale; nothing was changed. What moved since planning:[/]")
            for line in problems:
                err.print(f"  {line}", soft_wrap=True)
            err.print("Run 'ascendprep plan' again, review, then apply the new plan.")
            return exitcodes.FAILED
        if not any(to_apply.values()):
            out.print("No changes: every host already matches this plan. Nothing was touched.")
            return exitcodes.OK
        tools = {name: gathered[name].value.facts.hccn_tool for name in to_apply if gathered[name].value is not None}
        outcomes = apply_changes(session, to_apply, tools, progress_for_terminal("applying"))

    return _report(out, path, saved, to_apply, done, outcomes)


def _report(out: Console, path: Path, saved: PlanFile, to_apply: dict[str, list[Change]], done: dict[str, list[Change]], outcomes: dict[str, HostOutcome[AppliedHost]]) -> int:
    rows = []
    failed = False
    journal_hosts = []
    for name, changes in to_apply.items():
        if not changes:
            continue
        outcome = outcomes.get(name)
        host_record: dict[str, Any] = {"node": name, "already_done": [c.key for c in done.get(name, [])], "steps": []}
        if outcome is None or not outcome.ok or outcome.value is None:
            failed = True
            message = outcome.error if outcome is not None else "not run"
            host_record["error"] = message
            for change in changes:
                rows.append((name, change, None, message or ""))
        else:
            applied = outcome.value
            if applied.locked:
                failed = True
                host_record["error"] = "another apply holds the lock"
            for change in changes:
                step = applied.steps.get(change.key)
                rc = step.rc if step else None
                message = step.output if step else (applied.stderr.strip() or "the script stopped before this step")
                if rc != 0:
                    failed = True
                rows.append((name, change, rc, message))
                host_record["steps"].append({**_public(change), "rc": rc, "output": message})
        journal_hosts.append(host_record)
    out.print(apply_table(rows))
    journal = _journal(path, {"schema_version": 1, "kind": "apply-journal", "plan": str(path), "cluster": saved.cluster, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "user": os.environ.get("USER"), "hosts": journal_hosts})
    ok_steps = sum(1 for r in rows if r[2] == 0)
    out.print(f"Applied {ok_steps} of {len(rows)} changes; journal: {journal}")
    if failed:
        out.print("[red]Some changes failed: fix the cause shown above, then run 'ascendprep plan' and 'ascendprep apply' again.[/]")
        return exitcodes.FAILED
    saved.applied_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_plan(saved, path)
    return exitcodes.OK
