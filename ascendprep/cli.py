"""The ``ascendprep`` command line: argument parsing and output formats only.

Logic worth testing lives in the modules the commands call; this file wires them to click and
turns known failures (bad input, unreachable hosts) into messages and exit codes, never tracebacks.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click
from rich.console import Console

from ascendprep import __version__, exitcodes
from ascendprep.lab.cli import lab_group
from ascendprep.yamlsource import InputError


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def fail_input(error: InputError) -> "NoReturn":  # noqa: F821 - typing only
    console = _stderr()
    for problem in error.problems:
        console.print(f"[bold red]error:[/] {problem}", markup=True, soft_wrap=True)
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


@main.command("plan")
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--offline", is_flag=True, help="Compute the desired state only; contact no host.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output for people (text) or machines (json, with schema_version).")
@click.option("--nodes", "node_limit", default="8", show_default=True, metavar="N|all", help="Text output: per-node tables to show.")
def plan_command(inventory: Path, offline: bool, output_format: str, node_limit: str) -> None:
    """Show what INVENTORY wants every node and NPU to look like.

    With --offline: device IPs, netmasks, gateways and detect IPs per NPU, sysctl values, the files
    that will be written (env.sh, set_env.sh, the HCCL rank table), expected software versions and
    every rule violation. Nothing is contacted and nothing is changed.
    """
    from ascendprep.desired import build_desired
    from ascendprep.inventory import load_inventory
    from ascendprep.report.plan import print_plan, render_json

    if not offline:
        raise click.UsageError("reading live hosts is not available yet: use --offline")
    try:
        inv = load_inventory(inventory)
    except InputError as error:
        fail_input(error)
    desired = build_desired(inv)
    if output_format == "json":
        sys.stdout.write(render_json(desired))
    else:
        limit: Optional[int] = None if node_limit == "all" else _positive_int(node_limit, "--nodes")
        print_plan(Console(highlight=False), desired, node_limit=limit)
    if desired.invalid:
        sys.exit(exitcodes.INVALID)
    if any(f.severity.value == "error" for f in desired.findings):
        sys.exit(exitcodes.FAILED)


def _positive_int(text: str, option: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise click.BadParameter(f"'{text}' is not a positive number or 'all'", param_hint=option)
    return int(text)


main.add_command(lab_group)
