"""The ``ascendprep`` command line: argument parsing and output formats only.

Logic worth testing lives in the modules the commands call; this file wires them to click and
turns known failures (bad input, unreachable hosts) into messages and exit codes, never tracebacks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional

import click
from rich.console import Console

from ascendprep.report import console as report_console
from ascendprep.report.text import markup_safe

from ascendprep import __version__, exitcodes
from ascendprep.limits import COMMAND_DEADLINE_MIN_S
from ascendprep.commands.sudo_prompt import ask_sudo_password_option, prompt_sudo_password
from ascendprep.commands.verify import verify_command
from ascendprep.lab.cli import lab_group
from ascendprep.yamlsource import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired import DesiredState


def _stderr() -> Console:
    return report_console(stderr=True)


def fail_input(error: InputError) -> NoReturn:
    console = _stderr()
    for problem in error.problems:
        console.print(f"[bold red]error:[/] {markup_safe(problem)}", soft_wrap=True)
    sys.exit(exitcodes.INVALID)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ascendprep")
def main() -> None:
    """Prepare Huawei Ascend NPU training clusters: plan, apply, verify, and rehearse in a lab.

    \b
    Exit codes (every command):
      0  success
      1  checks failed, a host failed or was unreachable, or a step failed
      2  invalid input (inventory, plan file) or usage
      3  plan --detailed-exitcode: changes pending
    """


_host_key_option = click.option("--accept-new-host-keys", is_flag=True, help="Trust and record host keys not yet in known_hosts (a changed key is always refused).")
_forks_option = click.option("--forks", type=click.IntRange(1, 1024), default=None, help="Hosts worked on at once (default: the inventory's ssh.forks).")
_timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=COMMAND_DEADLINE_MIN_S), default=None, metavar="SECONDS",
    help="Seconds the whole command may take; hosts still at work then are reported as timed out and the "
    "rest is reported as usual, exit 1 (default: per phase and wave of --forks hosts, ssh.connect_timeout + "
    "ssh.command_timeout, plus 30).",
)


@main.command("plan")
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--offline", is_flag=True, help="Compute the desired state only; contact no host.")
@click.option("-o", "--out", "output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Where to save the plan (default .ascendprep/plan.json).")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 when nothing would change, 3 when changes are pending, 1 on errors.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True, help="Output for people (text) or machines (json, with schema_version); with --offline also csv: the per-NPU address table (node,host,npu,ip,netmask,gateway,detect).")
@click.option("--nodes", "node_limit", default="8", show_default=True, metavar="N|all", help="--offline text output: per-node tables to show.")
@_host_key_option
@_forks_option
@_timeout_option
@ask_sudo_password_option
def plan_command(inventory: Path, offline: bool, output: Optional[Path], detailed_exitcode: bool, output_format: str, node_limit: str, accept_new_host_keys: bool, forks: Optional[int], timeout: Optional[float], ask_sudo_password: bool) -> None:
    """Show what must change so that every host matches INVENTORY, and save that plan.

    Reads every host (one SSH connection and one script each), diffs per host and NPU — device
    IP, netmask, gateway, detect IP, TLS, sysctl, env files, rank table, firewall — and saves
    the plan for 'ascendprep apply'. Nothing is changed on any host.

    With --offline: no host is contacted; shows the desired state per node and NPU, the files
    that will be written, expected software versions and every rule violation. With
    --format csv it writes only the per-NPU address table to stdout (findings go to stderr;
    nothing is written when the inventory breaks an addressing rule).
    """
    if output_format == "csv" and not offline:
        raise click.UsageError("--format csv is the offline address table: add --offline")
    if offline:
        _plan_offline(inventory, output_format, node_limit)
        return
    from ascendprep.commands.plan import run_plan

    try:
        code = run_plan(inventory, output, output_format, detailed_exitcode, accept_new_host_keys, forks, prompt_sudo_password(ask_sudo_password), timeout)
    except InputError as error:
        fail_input(error)
    sys.exit(code)


def _plan_offline(inventory: Path, output_format: str, node_limit: str) -> None:
    from ascendprep.desired import build_desired
    from ascendprep.inventory import load_inventory
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
    from ascendprep.report.findings import findings_table

    if desired.findings:
        _stderr().print(findings_table(desired.findings))
    if desired.invalid:
        sys.exit(exitcodes.INVALID)
    try:
        write_address_csv(desired, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, a closed pager) went away: stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(exitcodes.FAILED)


@main.command("apply")
@click.argument("planfile", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--inventory", "inventory_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="The inventory to apply (must be the one the plan was made from; default: the one the plan names).")
@_host_key_option
@_forks_option
@_timeout_option
@ask_sudo_password_option
def apply_command(planfile: Optional[Path], inventory_path: Optional[Path], accept_new_host_keys: bool, forks: Optional[int], timeout: Optional[float], ask_sudo_password: bool) -> None:
    """Carry out the saved plan (default .ascendprep/plan.json).

    Every host is read again first and diffed against the inventory: what runs is that fresh
    diff, never commands from the plan file. Changes already in place are skipped; if anything
    moved since planning, or the plan file holds a change the inventory does not produce, the
    plan is refused and nothing is changed. A second apply changes nothing.
    """
    from ascendprep.commands.apply import run_apply

    try:
        code = run_apply(planfile, accept_new_host_keys, forks, prompt_sudo_password(ask_sudo_password), inventory_path, timeout)
    except InputError as error:
        fail_input(error)
    sys.exit(code)


def _positive_int(text: str, option: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"'{text}' is not a positive number or 'all'", param_hint=option)
    return int(text)


main.add_command(verify_command)
main.add_command(lab_group)
