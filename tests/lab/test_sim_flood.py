"""The ``hccn-flood`` lab fault: hostile text of a chosen size instead of hccn_tool's answer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ascendprep.lab.faults import parse_size
from ascendprep.lab.sim import state
from ascendprep.lab.system import LabError


def _raw(lab, node: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    command = [sys.executable, "-S", "-m", "ascendprep.lab.sim.hccn_tool", *args]
    return subprocess.run(command, capture_output=True, env=lab.env(node), timeout=timeout)


def test_a_flood_prints_its_size_of_hostile_text_ending_in_a_nul(lab):
    state.set_fault(lab.state_dir, "node1", "hccn-flood", npu=2, size=300_000)
    flooded = _raw(lab, "node1", "-i", "2", "-ip", "-g")
    assert flooded.returncode == 0
    assert (len(flooded.stdout), len(flooded.stderr)) == (300_000, 75_000)
    assert flooded.stdout.endswith(b"\0") and flooded.stderr.endswith(b"\0")
    assert b"\x1b[2J" in flooded.stdout and b"9" * 5000 in flooded.stdout and b"ipaddr:" in flooded.stdout
    # Only NPU 2 of node1 floods: its neighbours answer as usual.
    assert lab.ok("node1", "-i", "1", "-link", "-g") == "link status: UP\n"
    assert lab.ok("node2", "-i", "2", "-link", "-g") == "link status: UP\n"
    state.clear_faults(lab.state_dir, "node1", kind="hccn-flood")
    assert lab.ok("node1", "-i", "2", "-link", "-g") == "link status: UP\n"


def test_a_flood_is_listed_with_its_size_and_defaults_to_30_mb(lab):
    state.set_fault(lab.state_dir, "node2", "hccn-flood")
    state.set_fault(lab.state_dir, "node1", "hccn-flood", size=10)
    state.set_fault(lab.state_dir, "node1", "hccn-flood", size=20)  # a new size replaces the old one
    assert state.list_faults(lab.state_dir) == [
        {"node": "node1", "kind": "hccn-flood", "npu": None, "size": 20},
        {"node": "node2", "kind": "hccn-flood", "npu": None, "size": 30 * 1024 * 1024},
    ]
    assert len(_raw(lab, "node1", "-i", "0", "-lldp", "-g").stdout) == 20
    with pytest.raises(state.LabStateError, match="size"):
        state.set_fault(lab.state_dir, "node1", "hccn-flood", size=0)
    with pytest.raises(state.LabStateError, match="only applies to the hccn-flood"):
        state.set_fault(lab.state_dir, "node1", "link-down", size=10)


def test_flood_and_hang_on_one_node_hang_first(lab):
    """Together on one node the call hangs (the worse fault), and the flood is still in force."""
    state.set_fault(lab.state_dir, "node1", "hccn-flood", size=1000)
    state.set_fault(lab.state_dir, "node1", "hccn-hang", npu=0)
    with pytest.raises(subprocess.TimeoutExpired):
        _raw(lab, "node1", "-i", "0", "-ip", "-g", timeout=1.5)
    assert len(_raw(lab, "node1", "-i", "1", "-ip", "-g").stdout) == 1000


@pytest.mark.parametrize("text, size", [("30M", 30 * 1024 * 1024), ("512k", 512 * 1024), ("1G", 1024**3), ("123", 123)])
def test_sizes_read_like_people_write_them(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "3.5M", "-1", "30MB", "12345678901"])
def test_bad_sizes_are_refused_naming_the_option(text):
    with pytest.raises(LabError, match="--size"):
        parse_size(text)
