"""``--ask-sudo-password``: read the sudo password once, from the terminal, for this run only.

The password is kept in a :class:`~ascendprep.fleet.sudo.SudoPassword` (it never prints itself)
and handed to the Session; it is never written anywhere and leaves this process only on the
stdin of ``sudo -S`` on hosts that ask for it.
"""

from __future__ import annotations

import getpass
import sys
from typing import Optional

import click

from ascendprep.fleet.sudo import SudoPassword

ask_sudo_password_option = click.option(
    "--ask-sudo-password",
    is_flag=True,
    help="Prompt once for the sudo password (for ssh.sudo hosts without NOPASSWD); else ASCENDPREP_SUDO_PASSWORD is used.",
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
