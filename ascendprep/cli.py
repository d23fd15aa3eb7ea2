"""The ``ascendprep`` command line: argument parsing and output formats only.

Logic worth testing lives in the modules the commands call; this file wires them to click.
"""

from __future__ import annotations

import click

from ascendprep import __version__
from ascendprep.lab.cli import lab_group


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ascendprep")
def main() -> None:
    """Prepare Huawei Ascend NPU training clusters: plan, apply, verify, and rehearse in a lab."""


main.add_command(lab_group)
