"""What the command flows share: the console, input errors printed, node selection, the deadline
and the SSH session over the selected hosts."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, NoReturn, Optional, Sequence

import click
from rich.console import Console

from ascendprep.base import exitcodes
from ascendprep.base.findings import Severity
from ascendprep.base.hostrange import HostRangeError, compressed, select
from ascendprep.base.text import markup_safe, visible
from ascendprep.base.yamlsource import InputError
from ascendprep.remote.deadline import Deadline, command_deadline
from ascendprep.remote.sudo import SudoPassword
from ascendprep.report import console as report_console
from ascendprep.report.findings import findings_table
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState
    from ascendprep.inventory.load import Inventory
    from ascendprep.inventory.model import Node
    from ascendprep.run.fanout import Session


def select_nodes(inventory: "Inventory", pattern: Optional[str]) -> list["Node"]:
    """The inventory's nodes that ``--hosts`` names (all of them without it), in inventory order.

    A malformed pattern or one that names no node is a usage error (exit 2), saying which nodes
    there are, so a typo never turns into a run over nothing."""

    if pattern is None:
        return list(inventory.nodes)
    names = [node.name for node in inventory.nodes]
    try:
        chosen = set(select(pattern, names))
    except HostRangeError as error:
        raise click.BadParameter(f"{markup_free(pattern)}: {error}", param_hint="--hosts") from None
    if not chosen:
        raise click.BadParameter(
            f"{markup_free(pattern)} names no node of the inventory (its nodes: {compressed(names)})",
            param_hint="--hosts",
        )
    return [node for node in inventory.nodes if node.name in chosen]


def markup_free(value: str) -> str:
    """A user's pattern in an error message: quoted, control characters spelled out."""

    return repr(visible(value))


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

    console.print(
        findings_table(
            [f for f in desired.findings if f.severity is Severity.ERROR],
            "The inventory breaks device-IP or rank-table rules",
        )
    )
    return exitcodes.INVALID


def hosts_deadline(
    inventory: "Inventory", timeout: Optional[float], forks: Optional[int], phases: int, hosts: Optional[int] = None
) -> Deadline:
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

    accesses = host_accesses(inventory, accept_new_host_keys, list(nodes) if nodes is not None else None)
    with Session(
        accesses, forks or inventory.model.ssh.forks, sudo_password=sudo_password, deadline=deadline
    ) as session:
        yield session
