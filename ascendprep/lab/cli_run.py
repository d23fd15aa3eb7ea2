"""Run the ``ascendprep`` CLI as a child process and measure it: wall time and peak RSS.

For the tests and the benchmark of bounded resources: the controller's memory must be
measured in its own process, not in the test runner, which holds pytest and the lab besides.
``ru_maxrss`` of a direct child is no good either: Linux counts the parent's pages the child
held between fork and exec (a test runner that imported torch makes every child "use" 350 MB).
So a small wrapper (a fresh interpreter of a few MB) forks the CLI and reports the CLI's own
``ru_maxrss`` from ``os.wait4``. The CLI runs this checkout's package (``PYTHONPATH``), so a test
of a worktree measures that worktree's code.
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


#: Forks ``argv[2:]``, waits, writes its exit status and ``ru_maxrss`` (KB) to the file argv[1].
_MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_cli(args: Sequence[str], cwd: Path, timeout: float, env: Optional[Mapping[str, str]] = None) -> CliRun:
    """``python -m ascendprep ARGS`` in ``cwd``; killed (``killed=True``) after ``timeout`` s."""
    argv = [sys.executable, "-m", "ascendprep", *args]
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), child_env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "measured"
        started = time.monotonic()
        wrapper = subprocess.Popen(
            [sys.executable, "-I", "-c", _MEASURE, str(report), *argv],
            cwd=cwd,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        killed = False
        try:
            wrapper.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(wrapper.pid, signal.SIGKILL)  # the wrapper and the CLI: one session
            killed = True
            wrapper.wait()
        wall = time.monotonic() - started
        returncode, max_rss_kb = -signal.SIGKILL, 0
        if report.exists():
            returncode, max_rss_kb = (int(field) for field in report.read_text().split())
        out.seek(0)
        err.seek(0)
        return CliRun(
            argv,
            returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            wall,
            max_rss_kb / 1024.0,
            killed,
        )
