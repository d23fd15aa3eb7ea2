"""The simulated -optical/-speed/-duplex/-fec answers: the real format, each grey fault on its own
NPU only, the copper and "not present but readings" variants, and the older driver's refusals.

Every answer is also read back with the probe parsers, so the lab prints what a real host would.
"""

from __future__ import annotations

import pytest

from ascendprep.facts.optics import parse_optical_info
from ascendprep.facts.port_state import parse_duplex, parse_fec
from ascendprep.lab.sim import state


def optical(lab, node: str, npu: int):
    return parse_optical_info(lab.ok(node, "-i", str(npu), "-optical", "-g"))


def test_healthy_port_prints_four_lanes_thresholds_and_clean_flags(lab):
    out = lab.ok("node1", "-i", "0", "-optical", "-g").splitlines()
    assert out[:2] == ["optical info:", "present              : present"]
    assert "RxPower Low Thres    : 0.1445 mW" in out and "Temp High Thres      : 70 C" in out
    assert "Rx LoL Flag          : 0x0" in out
    info = optical(lab, "node1", 0)
    assert (
        info.medium == "optical"
        and len(info.lanes) == 4
        and info.flags == {"tx_los": 0, "rx_los": 0, "tx_lol": 0, "rx_lol": 0}
    )
    assert lab.ok("node1", "-i", "0", "-duplex", "-g") == "Duplex: Full\n"
    assert lab.ok("node1", "-i", "0", "-fec", "-g") == "fec mode: rs FEC mode\n"


@pytest.mark.parametrize(
    "kind, changed",
    [
        ("optical-low-power", lambda info: info.lanes[1].rx_power_mw == 0.05),
        (
            "optical-los",
            lambda info: (info.lanes[2].rx_power_mw, info.flags["rx_los"], info.flags["rx_lol"]) == (0.0, 0x4, 0x4),
        ),
        ("optical-hot", lambda info: info.temperature_c == 76.0 and info.thresholds.temp_high_c == 70.0),
        ("optical-copper", lambda info: info.medium == "electrical" and info.temperature_note == "not supported"),
        (
            "optical-not-present-readings",
            lambda info: not info.present_line and info.medium == "optical" and info.flags["rx_los"] == 0,
        ),
    ],
)
def test_optical_fault_changes_only_its_npu(lab, kind, changed):
    healthy, healthy_neighbour = optical(lab, "node1", 3), optical(lab, "node1", 2)
    state.set_fault(lab.state_dir, "node1", kind, npu=3)
    assert changed(optical(lab, "node1", 3))
    assert optical(lab, "node1", 2) == healthy_neighbour
    assert not changed(optical(lab, "node2", 3))
    assert lab.ok("node1", "-i", "3", "-link", "-g") == "link status: UP\n"  # grey: the link stays up
    state.clear_faults(lab.state_dir, "node1", kind)
    assert optical(lab, "node1", 3) == healthy


def test_port_100g_and_fec_mismatch(lab):
    state.set_fault(lab.state_dir, "node2", "port-100g", npu=1)
    state.set_fault(lab.state_dir, "node2", "fec-mismatch", npu=5)
    assert lab.ok("node2", "-i", "1", "-speed", "-g") == "Speed: 100000 Mb/s\n"
    assert lab.ok("node2", "-i", "0", "-speed", "-g") == "Speed: 200000 Mb/s\n"
    assert parse_fec(lab.ok("node2", "-i", "5", "-fec", "-g")) == {"fec": "auto"}
    assert parse_fec(lab.ok("node2", "-i", "1", "-fec", "-g")) == {"fec": "rs"}
    state.clear_faults(lab.state_dir, "node2")
    assert lab.ok("node2", "-i", "1", "-speed", "-g") == "Speed: 200000 Mb/s\n"


def test_link_down_port_has_no_speed_or_duplex(lab):
    state.set_fault(lab.state_dir, "node1", "link-down", npu=4)
    assert parse_duplex(lab.ok("node1", "-i", "4", "-duplex", "-g")) == {"duplex": None}
    assert lab.ok("node1", "-i", "4", "-speed", "-g") == "Speed: Unknown!\n"


def test_wrong_arguments_print_the_usage(lab):
    for option in ("-duplex", "-fec"):
        result = lab.hccn("node1", "-i", "0", option, "-g", "extra")
        assert result.returncode == 4 and f"hccn_tool -i devid {option}" in result.stdout


def test_older_driver_refuses_duplex_but_answers_fec(make_lab):
    mixed = make_lab(driver_profiles={"node2": "legacy"})
    refused = mixed.hccn("node2", "-i", "0", "-duplex", "-g")
    assert (refused.returncode, refused.stdout) == (13, "The command is not supported on this product.\n")
    assert mixed.ok("node1", "-i", "0", "-duplex", "-g") == "Duplex: Full\n"
    assert parse_fec(mixed.ok("node2", "-i", "0", "-fec", "-g")) == {"fec": "rs"}
