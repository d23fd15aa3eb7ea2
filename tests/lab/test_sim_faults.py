"""Every lab fault kind changes what the simulated tools report, and clearing restores it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ascendprep.lab.sim import state


def test_link_down_fault(lab):
    state.set_fault(lab.state_dir, "node1", "link-down", npu=2)
    assert lab.ok("node1", "-i", "2", "-link", "-g") == "link status: DOWN\n"
    assert lab.ok("node1", "-i", "1", "-link", "-g") == "link status: UP\n"
    assert lab.ok("node1", "-i", "2", "-net_health", "-g") == "net health status: Fault\n"
    lldp = lab.hccn("node1", "-i", "2", "-lldp", "-g")  # refused on a port whose link is down
    assert (lldp.returncode, lldp.stdout, lldp.stderr) == (22, "", "Execute failed: Link status is down.\n")
    assert lab.ok("node1", "-i", "2", "-speed", "-g") == "Speed: Unknown!\n"
    assert "Rx Los Flag          : 0xf" in lab.ok("node1", "-i", "2", "-optical", "-g")
    # -link -s up cannot fix a physical fault; clearing it can, and both changes are recorded.
    lab.ok("node1", "-i", "2", "-link", "-s", "up")
    assert lab.ok("node1", "-i", "2", "-link", "-g") == "link status: DOWN\n"
    state.clear_faults(lab.state_dir, "node1")
    assert lab.ok("node1", "-i", "2", "-link", "-g") == "link status: UP\n"
    stat = lab.ok("node1", "-i", "2", "-link_stat", "-g")
    assert "link up count       : 2" in stat and "link down count     : 1" in stat


def test_net_health_fail_fault(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.set_ip("node2", 0, "10.20.0.20")
    lab.ok("node1", "-i", "0", "-netdetect", "-s", "address", "10.20.0.20")
    state.set_fault(lab.state_dir, "node1", "net-health-fail", npu=0)
    assert lab.ok("node1", "-i", "0", "-net_health", "-g") == "net health status: Receive timeout\n"
    # ping still works: only the health probe is broken
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "10.20.0.20").returncode == 0


def test_lldp_empty_fault(lab):
    state.set_fault(lab.state_dir, "node2", "lldp-empty")
    for devid in ("0", "7"):
        result = lab.hccn("node2", "-i", devid, "-lldp", "-g")
        assert (result.returncode, result.stdout) == (0, "")
    assert "Ifname:" in lab.ok("node1", "-i", "0", "-lldp", "-g")


def test_tls_mismatch_fault_flips_reported_switch(lab):
    state.set_fault(lab.state_dir, "node1", "tls-mismatch", npu=4)
    assert "tls switch[1]" in lab.ok("node1", "-i", "4", "-tls", "-g")
    assert "tls switch[0]" in lab.ok("node1", "-i", "3", "-tls", "-g")


@pytest.mark.parametrize("kind, health", [("npu-alarm", "Alarm"), ("npu-critical", "Critical")])
def test_npu_health_faults(lab, kind, health):
    state.set_fault(lab.state_dir, "node1", kind, npu=1)
    table = lab.npu_smi("node1", "info").stdout
    assert f"| 1     910B3               | {health:<14}|" in table
    assert "| 0     910B3               | OK            |" in table
    out = lab.npu_smi("node1", "info", "-t", "health", "-i", "1", "-c", "0").stdout.splitlines()
    assert out[0] == f"\tHealth Status                  : {health}"
    assert out[1].split(":")[1].strip() != "NA"


def test_hccn_busy_fault(lab):
    state.set_fault(lab.state_dir, "node1", "hccn-busy", npu=3)
    busy = lab.hccn("node1", "-i", "3", "-ip", "-g")
    assert (busy.returncode, busy.stdout, busy.stderr) == (11, "hccn_tool is busy, please try again.\n", "")
    assert lab.hccn("node1", "-i", "2", "-net_health", "-g").returncode == 0
    state.clear_faults(lab.state_dir, "node1", kind="hccn-busy")
    assert lab.hccn("node1", "-i", "3", "-ip", "-g").returncode == 13


def test_hccn_hang_fault_blocks(lab):
    state.set_fault(lab.state_dir, "node1", "hccn-hang")
    command = [sys.executable, "-S", "-m", "ascendprep.lab.sim.hccn_tool", "-i", "0", "-link", "-g"]
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(command, capture_output=True, env=lab.env("node1"), timeout=1.5)
    assert lab.ok("node2", "-i", "0", "-link", "-g") == "link status: UP\n"


def test_fault_api_lists_and_validates(lab):
    state.set_fault(lab.state_dir, "node1", "npu-alarm", npu=0)
    state.set_fault(lab.state_dir, "node1", "npu-alarm", npu=0)
    state.set_fault(lab.state_dir, "node2", "link-down")
    assert state.list_faults(lab.state_dir) == [
        {"node": "node1", "kind": "npu-alarm", "npu": 0},
        {"node": "node2", "kind": "link-down", "npu": None},
    ]
    with pytest.raises(state.LabStateError, match="unknown fault kind 'bogus'"):
        state.set_fault(lab.state_dir, "node1", "bogus")
    with pytest.raises(state.LabStateError, match="out of range"):
        state.set_fault(lab.state_dir, "node1", "link-down", npu=8)
    with pytest.raises(state.LabStateError, match="node3"):
        state.set_fault(lab.state_dir, "node3", "link-down")
    state.clear_faults(lab.state_dir)
    assert state.list_faults(lab.state_dir) == []
