"""``ascendprep apply [PLANFILE] [--inventory FILE]``: carry out a saved plan, or nothing.

The plan file is data, not commands: it only selects and confirms. What runs on a host is what
a fresh diff of the inventory produces now.

1. The inventory is the one named with ``--inventory``, or the one the plan names; either way its
   bytes must hash to the plan's sha256 (read once: what is hashed is what is parsed). Without
   ``--inventory`` the plan and its inventory must be files only the caller or root can write or
   replace (``planfile.TRUST_RULE``): whoever could would choose what is pushed to the fleet.
   With it the plan only selects hosts and confirms, and need only be unwritable by others.
2. Every host of the plan must be a node of that inventory, at the same address.
3. Every host with planned changes is read again and diffed afresh. A change the host no longer
   needs is already done (second apply, rerun after an interruption); a difference the plan did
   not foresee makes the plan stale; a saved change the diff cannot have produced (another
   action, a key outside the managed set) means the file was edited. In either case nothing is
   changed anywhere.
4. Each host runs one script with its fresh changes. The journal next to the plan file is
   written before anything is printed and records each host's intent before any script starts;
   it is finished on success, refusal, Ctrl-C and SIGTERM.

The core (inventory, plan, journal, reports) is imported inside the flow, and the SSH session
only by :func:`~ascendprep.run.common.open_session`, so that registering the command in
``cli.py`` costs ``ascendprep --help`` nothing.
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
from ascendprep.run.apply import run_apply
from ascendprep.run.common import fail_input
from ascendprep.run.node_local import refuse_remote_options

if TYPE_CHECKING:  # pragma: no cover
    pass


@click.command("apply")
@click.argument("planfile", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--inventory",
    "inventory_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The inventory to apply (must be the one the plan was made from; default: the one the plan names).",
)
@accept_new_host_keys_option
@forks_option
@timeout_option()
@ask_sudo_password_option
@hosts_option
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Apply only this machine's changes, here, without SSH (one node at a time, driven by Ansible, Slurm or another engine); --node names it.",
)
@click.option(
    "--node",
    "node",
    default=None,
    metavar="NAME",
    help="--local: the plan's node this machine is (default: the node whose name or host is this machine's host name or address).",
)
def apply_command(
    planfile: Optional[Path],
    inventory_path: Optional[Path],
    accept_new_host_keys: bool,
    forks: Optional[int],
    timeout: Optional[float],
    ask_sudo_password: bool,
    hosts_pattern: Optional[str],
    local: bool,
    node: Optional[str],
) -> None:
    """Carry out the saved plan (default .ascendprep/plan.json).

    Every host is read again first and diffed against the inventory: what runs is that fresh
    diff, never commands from the plan file. Changes already in place are skipped; if anything
    moved since planning, or the plan file holds a change the inventory does not produce, the
    plan is refused and nothing is changed. A second apply changes nothing. With --hosts PATTERN
    only the plan's hosts it names are read and changed; with --local only this machine, without
    SSH, under the same checks, lock and journal.
    """
    if node is not None and not local:
        raise click.UsageError("--node only applies with --local")
    if local:
        refuse_remote_options(
            "apply",
            {
                "--accept-new-host-keys": accept_new_host_keys,
                "--forks": forks,
                "--ask-sudo-password": ask_sudo_password,
                "--hosts": hosts_pattern,
            },
        )
    try:
        code = run_apply(
            planfile,
            accept_new_host_keys,
            forks,
            prompt_sudo_password(ask_sudo_password),
            inventory_path,
            timeout,
            hosts_pattern,
            local=local,
            node=node,
        )
    except InputError as error:
        fail_input(error)
    sys.exit(code)
