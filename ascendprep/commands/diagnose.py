"""``ascendprep diagnose DIR...``: name the rank, the NPU and the cause of a failed job from its logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Tuple

import click

from ascendprep.run.diagnose import run_diagnose


@click.command("diagnose")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--inventory",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The inventory: device IPs in the logs resolve to its nodes and NPUs.",
)
@click.option(
    "--baseline",
    "baseline",
    type=click.Path(path_type=Path),
    default=None,
    help="A verify run made before the job (its bundle folder, or its --format json output): say whether the "
    "root rank's node and NPU already had a finding then, or drifted since.",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the diagnosis as one self-contained HTML page (verify --html's style), mode 0600.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people (the answer first), json for machines (with schema_version).",
)
def diagnose_command(
    dirs: Tuple[Path, ...],
    inventory: Optional[Path],
    baseline: Optional[Path],
    html: Optional[Path],
    output_format: str,
) -> None:
    """Name the root-cause rank, its node and NPU, the fault and the fix from a failed job's logs.

    DIR is a collect bundle or a plain tree of logs as kept: one folder per node holding CANN plogs,
    device logs, console logs (rank-N.txt, worker-N.log) and kernel messages (messages, dmesg).
    Several jobs mixed in one tree are told apart and diagnosed apart.

    \b
    Exit codes:
      0  a root-cause rank was named for every job that failed
      1  no rule decided (the suspects are listed), or no error in the logs
      2  bad input (no folder, no log in it, an unreadable inventory)
    """
    sys.exit(run_diagnose(list(dirs), inventory, output_format, baseline, html))
