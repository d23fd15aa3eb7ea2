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
from typing import TYPE_CHECKING, Optional

import click

from ascendprep.base.limits import COMMAND_DEADLINE_MIN_S
from ascendprep.remote.sudo import SudoPassword

if TYPE_CHECKING:  # pragma: no cover
    pass


accept_new_host_keys_option = click.option(
    "--accept-new-host-keys",
    is_flag=True,
    help="Trust and record host keys not yet in known_hosts (a changed key is always refused).",
)
forks_option = click.option(
    "--forks",
    type=click.IntRange(1, 1024),
    default=None,
    help="Hosts worked on at once (default: the inventory's ssh.forks).",
)
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


#: ``--timeout`` of plan and apply; verify words it for its report, bundle and all-reduce.
TIMEOUT_HELP = (
    "Seconds the whole command may take; hosts still at work then are reported as timed out and the "
    "rest is reported as usual, exit 1 (default: per phase and wave of --forks hosts, ssh.connect_timeout + "
    "ssh.command_timeout, plus 30)."
)


def timeout_option(help_text: str = TIMEOUT_HELP):  # type: ignore[no-untyped-def]
    """``--timeout SECONDS``: the whole command's deadline (see :mod:`ascendprep.remote.deadline`)."""
    return click.option(
        "--timeout", type=click.FloatRange(min=COMMAND_DEADLINE_MIN_S), default=None, metavar="SECONDS", help=help_text
    )


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


# -- the hosts: the command's deadline and its one session ----------------------------------------
