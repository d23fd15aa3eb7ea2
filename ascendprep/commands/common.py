"""What the commands share: the host options, bad-input errors, and opening the hosts' session.

``cli.py`` imports every command module to assemble the group, so this module (and the top of
each command module) stays light: ``ascendprep --help`` and ``plan --offline`` must not load
paramiko and fabric. The SSH session is imported in :func:`open_session`, when a command is
about to contact hosts.

``--ask-sudo-password`` reads the sudo password once, from the terminal, for this run only. It
is kept in a :class:`~ascendprep.remote.sudo.SudoPassword` (it never prints itself) and handed to
the session; it is never written anywhere and leaves this process only on the stdin of
``sudo -S`` on hosts that ask for it.
"""

from __future__ import annotations

import getpass
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, NoReturn, Optional, Sequence

import click
from rich.console import Console

from ascendprep.base import exitcodes
from ascendprep.remote.deadline import Deadline, command_deadline
from ascendprep.remote.sudo import SudoPassword
from ascendprep.base.limits import COMMAND_DEADLINE_MIN_S
from ascendprep.report import console as report_console
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState
    from ascendprep.run.fanout import Session
    from ascendprep.inventory.model import Inventory, Node


accept_new_host_keys_option = click.option("--accept-new-host-keys", is_flag=True, help="Trust and record host keys not yet in known_hosts (a changed key is always refused).")
forks_option = click.option("--forks", type=click.IntRange(1, 1024), default=None, help="Hosts worked on at once (default: the inventory's ssh.forks).")
ask_sudo_password_option = click.option(
    "--ask-sudo-password",
    is_flag=True,
    help="Prompt once for the sudo password (for ssh.sudo hosts without NOPASSWD); else ASCENDPREP_SUDO_PASSWORD is used.",
)
hosts_option = click.option(
    "--hosts",
    "hosts_pattern",
    default=None,
    metavar="PATTERN",
    help="Only these nodes: host ranges or globs, comma-separated (node[01-08], rack2-*), matched against node names; a pattern naming no node is an error (exit 2).",
)


def select_nodes(inventory: "Inventory", pattern: Optional[str]) -> list["Node"]:
    """The inventory's nodes that ``--hosts`` names (all of them without it), in inventory order.

    A malformed pattern or one that names no node is a usage error (exit 2), saying which nodes
    there are, so a typo never turns into a run over nothing."""
    from ascendprep.base.hostrange import HostRangeError, compressed, select

    if pattern is None:
        return list(inventory.nodes)
    names = [node.name for node in inventory.nodes]
    try:
        chosen = set(select(pattern, names))
    except HostRangeError as error:
        raise click.BadParameter(f"{markup_free(pattern)}: {error}", param_hint="--hosts") from None
    if not chosen:
        raise click.BadParameter(f"{markup_free(pattern)} names no node of the inventory (its nodes: {compressed(names)})", param_hint="--hosts")
    return [node for node in inventory.nodes if node.name in chosen]


def markup_free(value: str) -> str:
    """A user's pattern in an error message: quoted, control characters spelled out."""
    from ascendprep.base.text import visible

    return repr(visible(value))


#: ``--timeout`` of plan and apply; verify words it for its report, bundle and all-reduce.
TIMEOUT_HELP = (
    "Seconds the whole command may take; hosts still at work then are reported as timed out and the "
    "rest is reported as usual, exit 1 (default: per phase and wave of --forks hosts, ssh.connect_timeout + "
    "ssh.command_timeout, plus 30)."
)


def timeout_option(help_text: str = TIMEOUT_HELP):  # type: ignore[no-untyped-def]
    """``--timeout SECONDS``: the whole command's deadline (see :mod:`ascendprep.remote.deadline`)."""
    return click.option("--timeout", type=click.FloatRange(min=COMMAND_DEADLINE_MIN_S), default=None, metavar="SECONDS", help=help_text)


def prompt_sudo_password(ask: bool) -> Optional[SudoPassword]:
    """The prompted password when ``ask``; None otherwise (the environment's is used, if set)."""
    if not ask:
        return None
    if not sys.stdin.isatty():
        raise click.UsageError("--ask-sudo-password needs a terminal; set ASCENDPREP_SUDO_PASSWORD instead")
    value = getpass.getpass("sudo password: ")
    if not value:
        raise click.UsageError("no sudo password given")
    try:
        return SudoPassword(value)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


# -- bad input: located messages and exit 2, never a traceback ---------------------------------


def stderr_console() -> Console:
    return report_console(stderr=True)


def print_input_errors(error: InputError, console: Console) -> int:
    """Each located problem as ``error: file:line: where: what``; the exit code for bad input."""
    for problem in error.problems:
        console.print(f"[bold red]error:[/] {markup_safe(problem)}", soft_wrap=True)
    return exitcodes.INVALID


def fail_input(error: InputError) -> NoReturn:
    """Print the problems of ``error`` and exit 2."""
    sys.exit(print_input_errors(error, stderr_console()))


def print_invalid_inventory(desired: "DesiredState", console: Console) -> int:
    """The device-IP and rank-table rules the inventory breaks, as one table; the exit code for bad input."""
    from ascendprep.base.findings import Severity
    from ascendprep.report.findings import findings_table

    console.print(findings_table([f for f in desired.findings if f.severity is Severity.ERROR], "The inventory breaks device-IP or rank-table rules"))
    return exitcodes.INVALID


# -- the hosts: the command's deadline and its one session ----------------------------------------


def hosts_deadline(inventory: "Inventory", timeout: Optional[float], forks: Optional[int], phases: int, hosts: Optional[int] = None) -> Deadline:
    """``--timeout``, or the default for ``hosts`` nodes (all) over ``phases`` remote phases
    (see :func:`ascendprep.remote.deadline.default_timeout`)."""
    ssh = inventory.model.ssh
    count = len(inventory.nodes) if hosts is None else hosts
    return command_deadline(timeout, count, forks or ssh.forks, ssh.connect_timeout, ssh.command_timeout, phases)


@contextmanager
def open_session(
    inventory: "Inventory",
    accept_new_host_keys: bool,
    forks: Optional[int],
    sudo_password: Optional[SudoPassword],
    deadline: Optional[Deadline],
    nodes: Optional[Sequence["Node"]] = None,
) -> Iterator["Session"]:
    """One connection per host (``nodes``, default every node) for the whole command, closed at
    the end; ``forks`` defaults to the inventory's ``ssh.forks``."""
    from ascendprep.run.fanout import Session
    from ascendprep.run.hosts import host_accesses

    accesses = host_accesses(inventory, accept_new_host_keys, list(nodes) if nodes is not None else None)
    with Session(accesses, forks or inventory.model.ssh.forks, sudo_password=sudo_password, deadline=deadline) as session:
        yield session
