"""Grey failures (issue 20): optics, port state and NPU firmware, on the healthy 4-node A2 cluster.

Each case changes one fact the way the real fault shows up in the tool's output (the text is
edited, then parsed, so the parser and the check are exercised together) and asserts which
(check, node, NPU) fail at which severity, and what the evidence shows.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Dict, Optional

from verify_cluster_facts import HEALTHY_OPTICAL_TEXT, INVENTORY, desired_state, healthy_facts, judge, with_npu

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import HostFacts
from ascendprep.facts.optics import parse_optical
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.optics import DEFAULT_MARGINS
from ascendprep.verify.checks.runner import no_errors

GREY = ("optics.", "ports.", "firmware.")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn"


def grey(desired: DesiredState, facts: Optional[Dict[str, HostFacts]] = None):
    results = judge(desired, facts)
    failed = [r for r in results if r.failed]
    return failed, results


def optical(**lines: str) -> Dict[str, object]:
    """NpuFacts fields of the healthy -optical -g text with some lines' values replaced."""
    text = HEALTHY_OPTICAL_TEXT
    for name, value in lines.items():
        key = name.replace("_", " ")
        out = []
        for line in text.splitlines():
            if line.split(":")[0].strip() == key:
                line = f"{key:<21}: {value}"
            out.append(line)
        text = "\n".join(out) + "\n"
    return parse_optical(text)


def with_optics(desired: DesiredState, npu: int, **lines: str) -> Dict[str, HostFacts]:
    return {"node2": with_npu(healthy_facts(desired, "node2"), npu, **optical(**lines))}


def only(failed, check: str):
    found = [r for r in failed if r.check == check]
    assert [(r.check, r.node, r.npu) for r in failed] == [(r.check, r.node, r.npu) for r in found], [
        r.message for r in failed
    ]
    return found


def test_healthy_cluster_reports_the_figures_and_no_grey_finding(desired):
    failed, results = grey(desired)
    assert failed == [] and no_errors(results)
    power = next(r for r in results if r.check == "optics.power" and (r.node, r.npu) == ("node1", 0))
    assert power.status is Status.PASSED
    metrics = power.evidence["metrics"]
    assert metrics["npu_chip_optical_rx_power_0"] == 0.7943 and metrics["npu_chip_optical_temp"] == 45.0
    assert power.evidence["thresholds"]["rx_power_low_mw"] == 0.1445
    speed = next(r for r in results if r.check == "ports.speed" and (r.node, r.npu) == ("node1", 0))
    assert speed.evidence["npu_chip_link_speed"] == 200000 and speed.status is Status.PASSED
    assert {r.check for r in results if r.check.startswith(GREY)} == {
        "optics.power",
        "optics.signal",
        "optics.module",
        "ports.speed",
        "ports.duplex",
        "ports.speed_fleet",
        "ports.fec",
        "firmware.npus",
    }


def test_lane_under_the_modules_low_alarm_is_an_error_with_lane_reading_and_threshold(desired):
    failed, _ = grey(desired, with_optics(desired, 5, Rx_Power1="0.0500 mW"))
    (finding,) = only(failed, "optics.power")
    assert (finding.node, finding.npu, finding.severity) == ("node2", 5, Severity.ERROR)
    assert (
        finding.evidence["lane"] == 1
        and finding.evidence["reading_mw"] == 0.05
        and finding.evidence["low_alarm_mw"] == 0.1445
    )
    assert "lane 1" in finding.message and "0.1445 mW" in finding.message
    assert finding.evidence["metrics"]["npu_chip_optical_rx_power_0"] == 0.7943  # the siblings' figures too


def test_threshold_is_the_modules_own_not_a_fixed_number(desired):
    # the same 0.05 mW is fine for a module whose own low alarm is 0.0200 mW ...
    failed, _ = grey(desired, with_optics(desired, 5, Rx_Power1="0.0500 mW", RxPower_Low_Thres="0.0200 mW"))
    # ... but still far below its sibling lanes (0.79-0.82 mW): a warning, not an error
    (finding,) = only(failed, "optics.power")
    assert finding.severity is Severity.WARNING and finding.evidence["below_db"] > DEFAULT_MARGINS.lane_spread_db


def test_dark_lane_is_an_error(desired):
    failed, _ = grey(desired, with_optics(desired, 2, Tx_Power3="0.0000 mW"))
    (finding,) = only(failed, "optics.power")
    assert finding.severity is Severity.ERROR and "Tx power of lane 3 is 0.0000 mW: the lane is dark" == finding.message


def test_overload_over_the_high_alarm_is_an_error(desired):
    failed, _ = grey(desired, with_optics(desired, 2, Rx_Power0="4.0000 mW"))
    (finding,) = only(failed, "optics.power")
    assert finding.severity is Severity.ERROR and finding.evidence["high_alarm_mw"] == 3.5481


def test_power_close_to_the_low_alarm_is_a_warning(desired):
    # 0.16 mW is 0.44 dB above 0.1445 mW: inside the 1 dB margin; the siblings are 7 dB higher,
    # but a lane already named for its threshold is not named twice
    failed, _ = grey(desired, with_optics(desired, 0, Rx_Power2="0.1600 mW"))
    (finding,) = only(failed, "optics.power")
    assert finding.severity is Severity.WARNING and finding.evidence["margin_db"] == DEFAULT_MARGINS.power_margin_db
    assert "within 1 dB of the module's low alarm 0.1445 mW" in finding.message


def test_the_inventory_moves_the_power_margin_and_the_evidence_says_so(desired):
    # 0.20 mW is 1.4 dB above the 0.1445 mW alarm: outside the default 1 dB margin, inside 2 dB
    facts = with_optics(
        desired, 0, Rx_Power2="0.2000 mW", Rx_Power0="0.2000 mW", Rx_Power1="0.2000 mW", Rx_Power3="0.2000 mW"
    )
    failed, results = grey(desired, facts)
    assert not [r for r in failed if r.check == "optics.power"]
    passed = next(r for r in results if r.check == "optics.power" and r.node == "node2" and r.npu == 0)
    assert passed.evidence["margins"]["power_margin_db"] == {
        "name": "power_margin_db",
        "value": 1.0,
        "unit": "dB",
        "source": "default",
    }
    tighter = desired_state(INVENTORY + "thresholds:\n  power_margin_db: 2\n")
    failed, _ = grey(
        tighter,
        with_optics(
            tighter, 0, Rx_Power2="0.2000 mW", Rx_Power0="0.2000 mW", Rx_Power1="0.2000 mW", Rx_Power3="0.2000 mW"
        ),
    )
    findings = only(failed, "optics.power")
    assert {(f.node, f.npu, f.severity) for f in findings} == {("node2", 0, Severity.WARNING)}
    assert all(
        "within 2 dB of the module's low alarm" in f.message and f.evidence["margin_db"] == 2.0 for f in findings
    )


def test_lane_far_below_its_siblings_is_a_warning(desired):
    failed, _ = grey(desired, with_optics(desired, 0, Rx_Power2="0.3500 mW"))  # 3.6 dB below, 3.8 dB over the alarm
    (finding,) = only(failed, "optics.power")
    assert finding.severity is Severity.WARNING and finding.evidence["lane"] == 2
    assert "below its sibling lanes" in finding.message


def test_rx_los_and_lol_on_a_lane_are_errors_naming_the_lane(desired):
    failed, _ = grey(desired, with_optics(desired, 3, Rx_Los_Flag="0x4", Rx_LoL_Flag="0x4"))
    found = only(failed, "optics.signal")
    assert sorted(r.subject for r in found) == ["rx_lol", "rx_los"]
    assert all(
        r.severity is Severity.ERROR and r.evidence["lanes"] == [2] and (r.node, r.npu) == ("node2", 3) for r in found
    )
    assert "Rx loss of signal (LoS) on lane 2 (flag 0x4)" in {r.message for r in found}


def test_flags_of_lanes_this_die_does_not_show_are_not_its_faults(desired):
    # A3 DR4: each die prints two lanes with values, the other two NA; the mask's upper bits
    # belong to the other die
    lines = {"Tx_Power2": "NA", "Rx_Power2": "NA", "Tx_Power3": "NA", "Rx_Power3": "NA", "Rx_Los_Flag": "0xc"}
    failed, results = grey(desired, with_optics(desired, 3, **lines))
    assert failed == []
    power = next(r for r in results if (r.check, r.node, r.npu) == ("optics.power", "node2", 3))
    assert power.message == "Tx/Rx power of 2 lanes within the module's thresholds"


def test_hot_module_is_an_error_and_a_warm_one_a_warning(desired):
    failed, _ = grey(desired, with_optics(desired, 6, temperature="76 C"))
    (hot,) = only(failed, "optics.module")
    assert hot.severity is Severity.ERROR and hot.evidence == {"temperature_c": 76.0, "high_c": 70.0, "low_c": 0.0}
    failed, _ = grey(desired, with_optics(desired, 6, temperature="67 C"))
    (warm,) = only(failed, "optics.module")
    assert warm.severity is Severity.WARNING and warm.evidence["margin_c"] == DEFAULT_MARGINS.temp_margin_c


def test_unreadable_temperature_is_a_warning_not_a_pass(desired):
    failed, _ = grey(desired, with_optics(desired, 6, temperature="get failed"))
    (finding,) = only(failed, "optics.module")
    assert finding.severity is Severity.WARNING and "get failed" in finding.message


def test_vcc_outside_its_thresholds_is_an_error(desired):
    failed, _ = grey(desired, with_optics(desired, 1, Vcc="3100.00 mV"))
    (finding,) = only(failed, "optics.module")
    assert finding.severity is Severity.ERROR and finding.subject == "vcc" and finding.evidence["low_mv"] == 3135.0
    assert finding.message == "module supply 3100 mV is under its low threshold 3135 mV"
    # one threshold printed as NA: the other is still judged
    failed, _ = grey(desired, with_optics(desired, 1, Vcc="3500.00 mV", Vcc_Low_Thres="NA"))
    (finding,) = only(failed, "optics.module")
    assert finding.message == "module supply 3500 mV is over its high threshold 3465 mV"


def test_laser_bias_far_below_its_siblings_is_a_warning(desired):
    failed, _ = grey(desired, with_optics(desired, 1, Tx_Bias2="2.0000 mA"))
    (finding,) = only(failed, "optics.module")
    assert finding.severity is Severity.WARNING and finding.subject == "lane 2 bias"


def test_copper_port_is_never_a_failure(desired):
    facts = {
        "node2": with_npu(
            healthy_facts(desired, "node2"), 4, **parse_optical((FIXTURES / "optical_get_copper.out").read_text())
        )
    }
    failed, results = grey(desired, facts)
    assert failed == [], [r.message for r in failed]
    power = next(r for r in results if (r.check, r.node, r.npu) == ("optics.power", "node2", 4))
    assert power.status is Status.PASSED and "electrical" in power.message


def test_not_present_line_followed_by_readings_is_a_present_module(desired):
    failed, results = grey(desired, with_optics(desired, 4, present="not present"))
    assert failed == []
    optical_check = next(r for r in results if (r.check, r.node, r.npu) == ("network.optical", "node2", 4))
    assert optical_check.status is Status.PASSED


def test_flags_beside_a_false_not_present_line_are_only_a_warning(desired):
    # the real 910A capture: "not present", live readings, Rx Los Flag 0xff
    failed, _ = grey(desired, with_optics(desired, 4, present="not present", Rx_Los_Flag="0xff"))
    (finding,) = only(failed, "optics.signal")
    assert finding.severity is Severity.WARNING and "not to be trusted" in finding.message


def test_port_below_the_products_rate_is_named_once(desired):
    facts = {"node3": with_npu(healthy_facts(desired, "node3"), 7, speed_mbps=100000)}
    failed, _ = grey(desired, facts)
    (finding,) = only(failed, "ports.speed")
    assert (finding.node, finding.npu, finding.severity) == ("node3", 7, Severity.ERROR)
    assert finding.message == "port trained at 100 Gb/s, below the product's 200 Gb/s"


def test_one_port_with_another_fec_mode_is_named(desired):
    failed, _ = grey(desired, {"node4": with_npu(healthy_facts(desired, "node4"), 1, fec="auto")})
    (finding,) = only(failed, "ports.fec")
    assert (finding.node, finding.npu, finding.severity) == ("node4", 1, Severity.ERROR)
    assert finding.message == "FEC mode is 'auto', unlike 'rs' on the other 31 ports"


def test_no_fec_anywhere_is_a_warning(desired):
    facts = {
        node: replace(
            healthy_facts(desired, node),
            npus={n: replace(f, fec="no") for n, f in healthy_facts(desired, node).npus.items()},
        )
        for node in ("node1", "node2", "node3", "node4")
    }
    failed, _ = grey(desired, facts)
    (finding,) = only(failed, "ports.fec")
    assert finding.severity is Severity.WARNING and finding.node is None


def test_one_npu_behind_on_firmware_is_named(desired):
    node2 = healthy_facts(desired, "node2")
    facts = {"node2": replace(node2, npu_firmware={**node2.npu_firmware, 6: "7.1.0.7.220"})}
    failed, _ = grey(desired, facts)
    (finding,) = only(failed, "firmware.npus")
    assert (finding.node, finding.npu, finding.severity) == ("node2", 6, Severity.ERROR)
    assert finding.evidence["firmware"] == "7.1.0.7.220"
