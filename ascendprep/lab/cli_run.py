"""Run the ``ascendprep`` CLI as a child process and measure it: wall time and peak RSS.

For the tests and the benchmark of bounded resources (issue 19): the controller's memory must be
measured in its own process (``ru_maxrss`` of the child, from ``os.wait4``), not in the test
runner, which holds pytest and the lab besides. The child runs this checkout's package
(``PYTHONPATH``), so a test of a worktree measures that worktree's code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

#: The package root this module belongs to (the directory holding ``ascendprep/``).
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliRun:
    """One finished child: exit status, what it printed, how long, how much memory at most."""

    argv: Sequence[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    max_rss_mb: float
    killed: bool


def run_cli(args: Sequence[str], cwd: Path, timeout: float, env: Optional[Mapping[str, str]] = None) -> CliRun:
    """``python -m ascendprep ARGS`` in ``cwd``; killed (``killed=True``) after ``timeout`` s."""
    argv = [sys.executable, "-m", "ascendprep", *args]
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), child_env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(argv, cwd=cwd, env=child_env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        killed = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid == child.pid:
                break
            if time.monotonic() - started > timeout and not killed:
                os.kill(child.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.05)
        wall = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return CliRun(argv, child.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                      wall, usage.ru_maxrss / 1024.0, killed)
