"""The ``ascendprep`` command line: the group, assembled from the commands.

Each command lives in :mod:`ascendprep.commands` (``plan``, ``apply``, ``verify``: the click
command and its flow; ``common``: what they share) and the lab's in :mod:`ascendprep.lab.cli`.
Importing them loads only click and the commands' options: the core, the probes and SSH are
imported when a command runs, so ``ascendprep --help`` stays quick and loads no paramiko.
"""

from __future__ import annotations

import click

from ascendprep import __version__
from ascendprep.commands.apply import apply_command
from ascendprep.commands.plan import plan_command
from ascendprep.commands.verify import verify_command
from ascendprep.lab.cli import lab_group


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


main.add_command(plan_command)
main.add_command(apply_command)
main.add_command(verify_command)
main.add_command(lab_group)
