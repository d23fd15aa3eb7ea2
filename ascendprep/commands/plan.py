"""``ascendprep plan INVENTORY``: read every host, diff against the desired state, save the plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional


from ascendprep.report import console as report_console

from ascendprep import exitcodes
from ascendprep.desired import DesiredState, build_desired
from ascendprep.findings import Severity
from ascendprep.fleet.hosts import gather_facts, host_accesses
from ascendprep.inventory import load_inventory
from ascendprep.plan import HostPlan, diff_host, unreachable_host
from ascendprep.planfile import DEFAULT_PLAN, from_host_plans, write_plan
from ascendprep.fleet.deadline import Deadline, command_deadline
from ascendprep.fleet.fanout import Session
from ascendprep.fleet.progress import progress_for_terminal
from ascendprep.fleet.sudo import SudoPassword
from ascendprep.report import SCHEMA_VERSION
from ascendprep.report.changes import changes_table, plan_document
from ascendprep.report.findings import findings_table
from ascendprep.report.text import markup_safe
from ascendprep.report.limits_hit import collect_limits_hit
from ascendprep.probes.shell import checked_output_cap_override, remote_call_output_cap


#: Remote phases of ``plan`` (for the default deadline): one gather per host.
PLAN_PHASES = 1


def plan_deadline(desired: DesiredState, forks: Optional[int], timeout: Optional[float]) -> Deadline:
    """``--timeout``, or the default for this fleet (see remote.deadline.default_timeout)."""
    inventory = desired.inventory
    ssh = inventory.model.ssh
    return command_deadline(timeout, len(inventory.nodes), forks or ssh.forks, ssh.connect_timeout, ssh.command_timeout, PLAN_PHASES)


def plan_hosts(desired: DesiredState, accept_new_host_keys: bool, forks: Optional[int], sudo_password: Optional[SudoPassword] = None, deadline: Optional[Deadline] = None, limits_hit: Optional[list] = None) -> list[HostPlan]:
    """Gather facts on every node and diff each against its desired state.

    ``limits_hit``: when given, the limits the run hit are appended to it (see report.limits_hit).
    """
    inventory = desired.inventory
    accesses = host_accesses(inventory, accept_new_host_keys)
    with Session(accesses, forks or inventory.model.ssh.forks, sudo_password=sudo_password, deadline=deadline) as session:
        outcomes = gather_facts(session, inventory, progress_for_terminal("reading hosts"))
    if limits_hit is not None:
        facts = {name: o.value.facts if o.ok and o.value is not None else None for name, o in outcomes.items()}
        limits_hit.extend(collect_limits_hit(session.limits_hit, facts, remote_call_output_cap()))
    plans = []
    for node in inventory.nodes:
        outcome = outcomes[node.name]
        if outcome.ok and outcome.value is not None:
            plans.append(diff_host(desired, node.name, outcome.value.facts))
        else:
            plans.append(unreachable_host(desired, node.name, outcome.error or "unknown error"))
    return plans


def run_plan(inventory_path: Path, output: Optional[Path], output_format: str, detailed_exitcode: bool, accept_new_host_keys: bool, forks: Optional[int], sudo_password: Optional[SudoPassword] = None, timeout: Optional[float] = None) -> int:
    err = report_console(stderr=True)
    checked_output_cap_override()
    inventory = load_inventory(inventory_path)
    desired = build_desired(inventory)
    if desired.invalid:
        err.print(findings_table([f for f in desired.findings if f.severity is Severity.ERROR], "The inventory breaks device-IP rules"))
        return exitcodes.INVALID
    limits_hit: list = []
    deadline = plan_deadline(desired, forks, timeout)
    plans = plan_hosts(desired, accept_new_host_keys, forks, sudo_password, deadline, limits_hit)
    path = output or DEFAULT_PLAN
    saved = from_host_plans(inventory_path, inventory.name, plans)
    write_plan(saved, path)

    findings = list(desired.findings) + [f for p in plans for f in p.findings]
    if output_format == "json":
        document = plan_document(plans, str(path), SCHEMA_VERSION)
        document["findings"] = [f.to_dict() for f in findings]
        document["limits_hit"] = limits_hit
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    else:
        out = report_console()
        out.print(changes_table(plans))
        if findings:
            out.print(findings_table(findings))
        hosts_with_changes = sum(1 for p in plans if p.changes)
        out.print(f"Plan: {saved.change_count} changes on {hosts_with_changes} of {len(plans)} hosts, saved to {markup_safe(path)}")
        for hit in limits_hit:
            if hit["limit"] == "command_timeout":
                out.print(f"[yellow]The command's deadline ({hit['seconds']:g}s) passed in {markup_safe(hit['step'])}: {markup_safe(', '.join(hit['hosts']))} were given up on.[/]", soft_wrap=True)
        if not saved.complete:
            out.print("[yellow]The plan is incomplete: the hosts above marked as such were not (fully) read.[/]")
        elif saved.change_count:
            out.print(f"Run 'ascendprep apply {markup_safe(path)}' to carry it out.")
        else:
            out.print("[green]No changes: every host matches the inventory.[/]")
    if not saved.complete or any(f.severity is Severity.ERROR for f in findings):
        return exitcodes.FAILED
    if detailed_exitcode and saved.change_count:
        return exitcodes.CHANGES
    return exitcodes.OK
