"""The ``plan`` flow: the desired state offline, or read every host and diff it, then save the plan."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import click

from ascendprep.base import exitcodes
from ascendprep.base.findings import Severity
from ascendprep.base.hostrange import compressed
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError
from ascendprep.desired.state import build_desired, plan_rank_table_v2
from ascendprep.facts.shell import checked_output_cap_override, remote_call_output_cap
from ascendprep.facts.unit import PLAN
from ascendprep.inventory.load import load_inventory
from ascendprep.plan.diff import diff_host, unreachable_host
from ascendprep.plan.planfile import DEFAULT_PLAN, from_host_plans, write_plan
from ascendprep.plan.reads import units_for_plan
from ascendprep.remote.deadline import Deadline
from ascendprep.remote.sudo import SudoPassword
from ascendprep.report import SCHEMA_VERSION
from ascendprep.report import console as report_console
from ascendprep.report.addresses import write_address_csv
from ascendprep.report.changes import changes_table, plan_document
from ascendprep.report.findings import findings_table
from ascendprep.report.jsondoc import write_json
from ascendprep.report.limits_hit import collect_limits_hit
from ascendprep.report.plan import print_plan, render_json
from ascendprep.run.common import (
    fail_input,
    hosts_deadline,
    open_session,
    print_invalid_inventory,
    select_nodes,
    stderr_console,
)
from ascendprep.run.hosts import gather_facts
from ascendprep.run.progress import progress_for_terminal

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState
    from ascendprep.inventory.model import Node
    from ascendprep.plan.diff import HostPlan


#: Remote phases of ``plan`` (for the default deadline): one gather per host.
PLAN_PHASES = 1


def _positive_int(text: str, option: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"'{text}' is not a positive number or 'all'", param_hint=option)
    return int(text)


def plan_offline(inventory: Path, output_format: str, node_limit: str) -> None:
    """Print the desired state of ``inventory``; exit 2 when it breaks a rule, 1 on error findings."""

    limit: Optional[int] = None if node_limit == "all" else _positive_int(node_limit, "--nodes")
    try:
        inv = load_inventory(inventory)
    except InputError as error:
        fail_input(error)
    desired = build_desired(inv)
    if output_format == "csv":
        _write_csv(desired)
    elif output_format == "json":
        sys.stdout.write(render_json(desired))
    else:
        print_plan(report_console(), desired, node_limit=limit)
    if desired.invalid:
        sys.exit(exitcodes.INVALID)
    if any(f.severity.value == "error" for f in desired.findings):
        sys.exit(exitcodes.FAILED)


def _write_csv(desired: "DesiredState") -> None:
    """The address table on stdout, findings on stderr; no table when an addressing rule broke."""

    if desired.findings:
        stderr_console().print(findings_table(desired.findings))
    if desired.invalid:
        sys.exit(exitcodes.INVALID)
    try:
        write_address_csv(desired, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, a closed pager) went away: stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(exitcodes.FAILED)


def plan_deadline(desired: "DesiredState", forks: Optional[int], timeout: Optional[float]) -> Deadline:
    """``--timeout``, or the default for this fleet (see fleet.deadline.default_timeout)."""
    return hosts_deadline(desired.inventory, timeout, forks, PLAN_PHASES)


def plan_hosts(
    desired: "DesiredState",
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword] = None,
    deadline: Optional[Deadline] = None,
    limits_hit: Optional[list] = None,
    nodes: Optional[Sequence["Node"]] = None,
) -> list["HostPlan"]:
    """Gather facts on every node (or on ``nodes``) and diff each against its desired state.

    ``limits_hit``: when given, the limits the run hit are appended to it (see report.limits_hit).
    """

    inventory = desired.inventory
    chosen = list(inventory.nodes) if nodes is None else list(nodes)
    with open_session(inventory, accept_new_host_keys, forks, sudo_password, deadline, chosen) as session:
        units = {
            node.name: units_for_plan(desired, node.name) for node in chosen
        }  # no gateway/TLS/firewall query the diff would not look at
        outcomes = gather_facts(
            session,
            inventory,
            progress_for_terminal("reading hosts"),
            only={node.name for node in chosen},
            phase=PLAN,
            units=units,
        )
    if limits_hit is not None:
        facts = {name: o.value.facts if o.ok and o.value is not None else None for name, o in outcomes.items()}
        limits_hit.extend(collect_limits_hit(session.limits_hit, facts, remote_call_output_cap()))
    if inventory.product.is_950:
        # The rank table 2.0 is one file built from every node's EIDs: planned before any node's
        # diff, so each node's plan writes it, or (a node's EIDs unread) none does.
        facts = {name: o.value.facts if o.ok and o.value is not None else None for name, o in outcomes.items()}
        # what the offline plan says in its place ("the live plan builds it") is replaced by the outcome
        desired.findings[:] = [f for f in desired.findings if f.id != "ranktable.v2_from_hosts"]
        desired.findings.extend(plan_rank_table_v2(desired, facts))
    plans = []
    for node in chosen:
        outcome = outcomes[node.name]
        if outcome.ok and outcome.value is not None:
            plans.append(diff_host(desired, node.name, outcome.value.facts))
        else:
            plans.append(unreachable_host(desired, node.name, outcome.error or "unknown error"))
    return plans


def run_plan(
    inventory_path: Path,
    output: Optional[Path],
    output_format: str,
    detailed_exitcode: bool,
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword] = None,
    timeout: Optional[float] = None,
    hosts_pattern: Optional[str] = None,
) -> int:
    """The live ``plan``: returns the exit code; raises InputError for a bad inventory."""

    err = report_console(stderr=True)
    checked_output_cap_override()
    inventory = load_inventory(inventory_path)
    desired = build_desired(inventory)
    nodes = select_nodes(inventory, hosts_pattern)
    if desired.invalid:
        return print_invalid_inventory(desired, err)
    limits_hit: list = []
    deadline = plan_deadline(desired, forks, timeout)
    plans = plan_hosts(desired, accept_new_host_keys, forks, sudo_password, deadline, limits_hit, nodes)
    path = output or DEFAULT_PLAN
    saved = from_host_plans(inventory_path, inventory.name, plans)
    write_plan(saved, path)

    findings = list(desired.findings) + [f for p in plans for f in p.findings]
    if output_format == "json":
        document = plan_document(plans, str(path), SCHEMA_VERSION)
        document["findings"] = [f.to_dict() for f in findings]
        document["limits_hit"] = limits_hit

        write_json(document, sys.stdout)  # compact, in slices: 4,096 hosts in seconds, not minutes
    else:
        out = report_console()
        out.print(changes_table(plans))
        if findings:
            out.print(findings_table(findings))
        hosts_with_changes = sum(1 for p in plans if p.changes)
        out.print(
            f"Plan: {saved.change_count} changes on {hosts_with_changes} of {len(plans)} hosts, saved to {markup_safe(path)}"
        )
        for hit in limits_hit:
            if hit["limit"] == "command_timeout":
                out.print(
                    f"[yellow]The command's deadline ({hit['seconds']:g}s) passed in {markup_safe(hit['step'])}: {markup_safe(compressed(hit['hosts']))} were given up on.[/]",
                    soft_wrap=True,
                )
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
