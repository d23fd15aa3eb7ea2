"""``ascendprep plan INVENTORY``: read every host, diff against the desired state, save the plan.

With ``--offline`` no host is contacted: the desired state per node and NPU, as text, JSON or
the per-NPU address table (CSV).

The core (inventory, desired state, diff, reports) is imported inside the flow, and the SSH
session only by :func:`~ascendprep.run.common.open_session`, so that registering the
command in ``cli.py`` costs ``ascendprep --help`` nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from ascendprep.base.yamlsource import InputError
from ascendprep.commands.common import (
    accept_new_host_keys_option,
    ask_sudo_password_option,
    forks_option,
    hosts_option,
    prompt_sudo_password,
    timeout_option,
)
from ascendprep.run.common import fail_input
from ascendprep.run.plan import plan_offline, run_plan

if TYPE_CHECKING:  # pragma: no cover
    pass


@click.command("plan")
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--offline", is_flag=True, help="Compute the desired state only; contact no host.")
@click.option(
    "-o",
    "--out",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to save the plan (default .ascendprep/plan.json).",
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 0 when nothing would change, 3 when changes are pending, 1 on errors.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "csv"]),
    default="text",
    show_default=True,
    help="Output for people (text) or machines (json, with schema_version); with --offline also csv: the per-NPU address table (node,host,npu,ip,netmask,gateway,detect).",
)
@click.option(
    "--nodes",
    "node_limit",
    default="8",
    show_default=True,
    metavar="N|all",
    help="--offline text output: per-node tables to show.",
)
@accept_new_host_keys_option
@forks_option
@timeout_option()
@ask_sudo_password_option
@hosts_option
def plan_command(
    inventory: Path,
    offline: bool,
    output: Optional[Path],
    detailed_exitcode: bool,
    output_format: str,
    node_limit: str,
    accept_new_host_keys: bool,
    forks: Optional[int],
    timeout: Optional[float],
    ask_sudo_password: bool,
    hosts_pattern: Optional[str],
) -> None:
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
        code = run_plan(
            inventory,
            output,
            output_format,
            detailed_exitcode,
            accept_new_host_keys,
            forks,
            prompt_sudo_password(ask_sudo_password),
            timeout,
            hosts_pattern,
        )
    except InputError as error:
        fail_input(error)
    sys.exit(code)


# -- --offline: the desired state, no host ---------------------------------------------------------


# -- the live plan: gather, diff, save ---------------------------------------------------------------
