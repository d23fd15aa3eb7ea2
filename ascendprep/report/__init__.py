"""Output for people (rich tables) and machines (JSON with a schema_version, JUnit XML)."""

import sys

SCHEMA_VERSION = 1


def console(stderr: bool = False):
    """A rich Console for command output; 120 columns when not a terminal (CI logs, pipes),
    where rich would otherwise wrap tables at 80."""

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 120
    return Console(stderr=stderr, highlight=False, width=width)
