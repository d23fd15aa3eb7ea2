"""The tests' script runner kills what a timed-out script started, not only its shell."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from nodescript import run_node_script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"


def test_a_timed_out_scripts_pipeline_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pidfile}; wait\n"
    with pytest.raises(subprocess.TimeoutExpired):
        run_node_script(["sh", "-s"], input=script, text=True, timeout=1)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the script's background sleep outlived the timeout"


def test_subprocess_run_leaves_it_running(tmp_path: Path) -> None:
    """The unlike case, and why the helper exists: subprocess.run kills only the shell."""
    pidfile = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pidfile}; wait\n"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["sh", "-s"], input=script, text=True, capture_output=True, timeout=1)
    pid = int(pidfile.read_text())
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, 9)


def test_a_finished_script_gives_what_subprocess_run_gives() -> None:
    done = run_node_script(["sh", "-s"], input="echo out; echo err >&2; exit 3\n", text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        run_node_script(["sh", "-s"], input="exit 1\n", text=True, check=True)
