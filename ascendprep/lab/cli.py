"""``ascendprep lab``: the virtual Ascend cluster's commands (placeholder until the lab lands)."""

import click


@click.group("lab")
def lab_group() -> None:
    """A virtual Ascend cluster on this machine (network namespaces, sshd, simulated tools)."""
