"""The ``ascendprep`` command line: the group, with every command loaded when it is named.

Each command lives in :mod:`ascendprep.commands` (``plan``, ``apply``, ``verify``) and the lab's in
:mod:`ascendprep.lab.cli`. The group knows them by name and one-line summary only
(:data:`COMMANDS`), so ``ascendprep --help`` imports click and this module and nothing else; naming
a command imports its module, which imports what that command needs at its top.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple, Optional

import click

from ascendprep import __version__


class LazyCommand(NamedTuple):
    """Where a command is defined, and its summary for the group's ``--help``."""

    module: str
    attribute: str
    summary: str


#: Every command: name -> where it is defined and its summary (a test holds each summary equal to
#: the first paragraph of the command's own help).
COMMANDS = {
    "plan": LazyCommand(
        "ascendprep.commands.plan",
        "plan_command",
        "Show what must change so that every host matches INVENTORY, and save that plan.",
    ),
    "apply": LazyCommand(
        "ascendprep.commands.apply", "apply_command", "Carry out the saved plan (default .ascendprep/plan.json)."
    ),
    "verify": LazyCommand(
        "ascendprep.commands.verify",
        "verify_command",
        "Check every node and the cluster against INVENTORY, and exit 0 only when nothing breaks HCCL.",
    ),
    "collect": LazyCommand(
        "ascendprep.commands.collect",
        "collect_command",
        "Fetch a failed job's logs and each node's NPU state into one folder, for 'ascendprep diagnose'.",
    ),
    "diagnose": LazyCommand(
        "ascendprep.commands.diagnose",
        "diagnose_command",
        "Name the root-cause rank, its node and NPU, the fault and the fix from a failed job's logs.",
    ),
    "inventory": LazyCommand(
        "ascendprep.commands.inventory", "inventory_group", "Write inventories: import one from a running cluster."
    ),
    "lab": LazyCommand(
        "ascendprep.lab.cli",
        "lab_group",
        "A virtual Ascend cluster on this machine (network namespaces, sshd, simulated tools).",
    ),
}


class _Group(click.Group):
    """The top-level group: a command's module is imported when the command is named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        lazy = COMMANDS.get(cmd_name)
        if lazy is None:
            return None
        command = getattr(importlib.import_module(lazy.module), lazy.attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`COMMANDS`, without importing any command."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, click.utils.make_default_short_help(COMMANDS[name].summary, limit)) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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
