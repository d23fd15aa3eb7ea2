"""``lab down`` puts the host back as it was, also after an ``up`` killed half-way.

These tests use their own small labs (not the session lab) and compare the host before and
after: namespaces, links, mounts, and processes left in the lab's namespaces.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from labsupport import require_lab_host, start_test_lab

from ascendprep.cli import main
from ascendprep.lab.journal import Journal
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.testing import (
    HostSnapshot,
    free_test_subnet,
    lab_netns_inodes,
    session_lab_name,
    ssh,
    surviving_processes,
)

pytestmark = pytest.mark.lab


def test_down_leaves_the_host_as_it_was():
    require_lab_host()
    before = HostSnapshot.take()
    tiny = start_test_lab(nodes=2, suffix="tiny")
    paths = tiny.paths
    inodes = lab_netns_inodes(tiny.name)
    assert len(inodes) == 2
    assert ssh(tiny, "node2", "hostname").stdout == "node2\n"

    tiny.down()
    assert HostSnapshot.take().new_since(before, tiny.name) == []
    assert surviving_processes(inodes, str(paths.run_dir)) == []
    assert not paths.lab_dir.exists()
    assert not paths.run_dir.exists()


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("lab up never reached the point where the test kills it")
        time.sleep(0.001)


@pytest.mark.parametrize("kill_when", ["namespaces recorded", "first node started"])
def test_down_cleans_up_after_up_was_killed_midway(kill_when):
    require_lab_host()
    name = session_lab_name("crash")
    paths = LabPaths(name)
    before = HostSnapshot.take()
    up = subprocess.Popen(
        [sys.executable, "-c", "from ascendprep.cli import main; main()", "lab", "up",
         "--name", name, "--nodes", "2", "--subnet", free_test_subnet(offset=5)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        if kill_when == "namespaces recorded":
            _wait_for(lambda: bool(Journal(paths.journal).entries("netns")))
        else:
            _wait_for(lambda: paths.process_file("node1", "holder").exists())
        up.send_signal(signal.SIGKILL)
    finally:
        up.wait()
    assert not paths.up_marker.exists(), "up finished before it was killed: nothing half-built to test"
    inodes = lab_netns_inodes(name)

    result = CliRunner().invoke(main, ["lab", "down", "--name", name])
    assert result.exit_code == 0, result.output
    assert HostSnapshot.take().new_since(before, name) == []
    assert surviving_processes(inodes, str(paths.run_dir)) == []
    assert not paths.lab_dir.exists()
    assert not paths.run_dir.exists()


def test_down_of_a_lab_that_is_not_up_says_so():
    require_lab_host()
    result = CliRunner().invoke(main, ["lab", "down", "--name", session_lab_name("never")])
    assert result.exit_code == 0
    assert "is not up" in result.output
