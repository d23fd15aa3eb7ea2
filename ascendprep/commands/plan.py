"""``ascendprep plan INVENTORY``: read every host, diff against the desired state, save the plan.

With ``--offline`` no host is contacted: the desired state per node and NPU, as text, JSON or
the per-NPU address table (CSV).

The core (inventory, desired state, diff, reports) is imported inside the flow, and the SSH
session only by :func:`~ascendprep.commands.common.open_session`, so that registering the
command in ``cli.py`` costs ``ascendprep --help`` nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import click

from ascendprep.base import exitcodes
from ascendprep.commands.common import (
    hosts_option,
    select_nodes,
    accept_new_host_keys_option,
    ask_sudo_password_option,
    fail_input,
    forks_option,
    hosts_deadline,
    open_session,
    print_invalid_inventory,
    prompt_sudo_password,
    stderr_console,
    timeout_option,
)
from ascendprep.base.findings import Severity
from ascendprep.remote.deadline import Deadline
from ascendprep.remote.sudo import SudoPassword
from ascendprep.base.hostrange import compressed
from ascendprep.facts.shell import checked_output_cap_override, remote_call_output_cap
from ascendprep.report import SCHEMA_VERSION
from ascendprep.report import console as report_console
from ascendprep.report.findings import findings_table
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState
    from ascendprep.inventory.model import Node
    from ascendprep.plan.diff import HostPlan

#: Remote phases of ``plan`` (for the default deadline): one gather per host.
PLAN_PHASES = 1


@click.command("plan")
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--offline", is_flag=True, help="Compute the desired state only; contact no host.")
@click.option("-o", "--out", "output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Where to save the plan (default .ascendprep/plan.json).")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 when nothing would change, 3 when changes are pending, 1 on errors.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True, help="Output for people (text) or machines (json, with schema_version); with --offline also csv: the per-NPU address table (node,host,npu,ip,netmask,gateway,detect).")
@click.option("--nodes", "node_limit", default="8", show_default=True, metavar="N|all", help="--offline text output: per-node tables to show.")
@accept_new_host_keys_option
@forks_option
@timeout_option()
@ask_sudo_password_option
@hosts_option
def plan_command(inventory: Path, offline: bool, output: Optional[Path], detailed_exitcode: bool, output_format: str, node_limit: str, accept_new_host_keys: bool, forks: Optional[int], timeout: Optional[float], ask_sudo_password: bool, hosts_pattern: Optional[str]) -> None:
    """Show what must change so that every host matches INVENTORY, and save that plan.

    Reads every host (one SSH connection and one script each), diffs per host and NPU — device
    IP, netmask, gateway, detect IP, TLS, sysctl, env files, rank table, firewall — and saves
    the plan for 'ascendprep apply'. Nothing is changed on any host.

    With --hosts PATTERN only the nodes it names are read and planned (the desired state is still
    computed for the whole inventory, so addresses and ranks do not move); the saved plan holds
    only them.

    With --offline: no host is contacted; shows the desired state per node and NPU, the files
    that will be written, expected software versions and every rule violation. With
    --format csv it writes only the per-NPU address table to stdout (findings go to stderr;
    nothing is written when the inventory breaks an addressing rule).
    """
    if output_format == "csv" and not offline:
        raise click.UsageError("--format csv is the offline address table: add --offline")
    if offline:
        if hosts_pattern is not None:
            raise click.UsageError("--hosts chooses the hosts a live plan reads; --offline reads none")
        plan_offline(inventory, output_format, node_limit)
        return
    try:
        code = run_plan(inventory, output, output_format, detailed_exitcode, accept_new_host_keys, forks, prompt_sudo_password(ask_sudo_password), timeout, hosts_pattern)
    except InputError as error:
        fail_input(error)
    sys.exit(code)


def _positive_int(text: str, option: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"'{text}' is not a positive number or 'all'", param_hint=option)
    return int(text)


# -- --offline: the desired state, no host ---------------------------------------------------------


def plan_offline(inventory: Path, output_format: str, node_limit: str) -> None:
    """Print the desired state of ``inventory``; exit 2 when it breaks a rule, 1 on error findings."""
    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.model import load_inventory
    from ascendprep.report.plan import print_plan, render_json

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
    from ascendprep.report.addresses import write_address_csv

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


# -- the live plan: gather, diff, save ---------------------------------------------------------------


def plan_deadline(desired: "DesiredState", forks: Optional[int], timeout: Optional[float]) -> Deadline:
    """``--timeout``, or the default for this fleet (see fleet.deadline.default_timeout)."""
    return hosts_deadline(desired.inventory, timeout, forks, PLAN_PHASES)


def plan_hosts(desired: "DesiredState", accept_new_host_keys: bool, forks: Optional[int], sudo_password: Optional[SudoPassword] = None, deadline: Optional[Deadline] = None, limits_hit: Optional[list] = None, nodes: Optional[Sequence["Node"]] = None) -> list["HostPlan"]:
    """Gather facts on every node (or on ``nodes``) and diff each against its desired state.

    ``limits_hit``: when given, the limits the run hit are appended to it (see report.limits_hit).
    """
    from ascendprep.run.hosts import gather_facts
    from ascendprep.plan.reads import units_for_plan
    from ascendprep.run.progress import progress_for_terminal
    from ascendprep.plan.diff import diff_host, unreachable_host
    from ascendprep.facts.unit import PLAN
    from ascendprep.report.limits_hit import collect_limits_hit

    inventory = desired.inventory
    chosen = list(inventory.nodes) if nodes is None else list(nodes)
    with open_session(inventory, accept_new_host_keys, forks, sudo_password, deadline, chosen) as session:
        units = {node.name: units_for_plan(desired, node.name) for node in chosen}  # no gateway/TLS/firewall query the diff would not look at
        outcomes = gather_facts(session, inventory, progress_for_terminal("reading hosts"), only={node.name for node in chosen}, phase=PLAN, units=units)
    if limits_hit is not None:
        facts = {name: o.value.facts if o.ok and o.value is not None else None for name, o in outcomes.items()}
        limits_hit.extend(collect_limits_hit(session.limits_hit, facts, remote_call_output_cap()))
    plans = []
    for node in chosen:
        outcome = outcomes[node.name]
        if outcome.ok and outcome.value is not None:
            plans.append(diff_host(desired, node.name, outcome.value.facts))
        else:
            plans.append(unreachable_host(desired, node.name, outcome.error or "unknown error"))
    return plans


def run_plan(inventory_path: Path, output: Optional[Path], output_format: str, detailed_exitcode: bool, accept_new_host_keys: bool, forks: Optional[int], sudo_password: Optional[SudoPassword] = None, timeout: Optional[float] = None, hosts_pattern: Optional[str] = None) -> int:
    """The live ``plan``: returns the exit code; raises InputError for a bad inventory."""
    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.model import load_inventory
    from ascendprep.plan.planfile import DEFAULT_PLAN, from_host_plans, write_plan
    from ascendprep.report.changes import changes_table, plan_document

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
        from ascendprep.report.jsondoc import write_json

        write_json(document, sys.stdout)  # compact, in slices: 4,096 hosts in seconds, not minutes
    else:
        out = report_console()
        out.print(changes_table(plans))
        if findings:
            out.print(findings_table(findings))
        hosts_with_changes = sum(1 for p in plans if p.changes)
        out.print(f"Plan: {saved.change_count} changes on {hosts_with_changes} of {len(plans)} hosts, saved to {markup_safe(path)}")
        for hit in limits_hit:
            if hit["limit"] == "command_timeout":
                out.print(f"[yellow]The command's deadline ({hit['seconds']:g}s) passed in {markup_safe(hit['step'])}: {markup_safe(compressed(hit['hosts']))} were given up on.[/]", soft_wrap=True)
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
