"""The ``ascendprep`` command line: the group, assembled from the commands.

Each command lives in :mod:`ascendprep.commands` (``plan``, ``apply``, ``verify``: the click
command and its flow; ``common``: what they share) and the lab's in :mod:`ascendprep.lab.cli`.
Importing them loads only click and the commands' options: the core, the probes and SSH are
imported when a command runs, so ``ascendprep --help`` stays quick and loads no paramiko. The
lab's commands (namespaces, the simulated tools: a large part of the CLI's own import time) are
imported only when ``lab`` is named or listed, not for ``plan``, ``apply`` or ``verify``.
"""

from __future__ import annotations

import importlib
from typing import Optional

import click

from ascendprep import __version__
from ascendprep.commands.apply import apply_command
from ascendprep.commands.plan import plan_command
from ascendprep.commands.verify import verify_command

#: Commands imported on first use: name -> (module, attribute).
LAZY_COMMANDS = {"lab": ("ascendprep.lab.cli", "lab_group")}


class _Group(click.Group):
    """The top-level group: the commands of :data:`LAZY_COMMANDS` load when named or listed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, attribute = LAZY_COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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


main.add_command(plan_command)
main.add_command(apply_command)
main.add_command(verify_command)
