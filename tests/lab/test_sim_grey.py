"""Issue 20's lab behaviours: -stat -g counters that grow under fcs-errors / pfc-storm and sit still
(or grow slowly) on a clean port, in both driver forms; health faults with a known and an unknown code."""

from __future__ import annotations

import pytest

from ascendprep.facts.npu_smi import parse_health
from ascendprep.facts.port_stats import parse_stat
from ascendprep.lab.sim import counters, state
from ascendprep.verify.checks.counters import counter_rate
from ascendprep.verify.checks.health_codes import decode

T0 = 1_780_000_000.0


@pytest.fixture
def mixed_lab(make_lab):
    """node1 with the current driver, node2 with the legacy one."""
    return make_lab(driver_profiles={"node2": "legacy"})


def _doc(lab, node="node1"):
    return state.read_node(lab.state_dir, node)


def test_a_clean_port_keeps_its_errors_since_boot_and_grows_slowly(lab):
    doc = _doc(lab)
    before, after = counters.counters_at(doc, 3, T0), counters.counters_at(doc, 3, T0 + 5)
    assert before["mac_rx_fcs_err_pkt_num"] == after["mac_rx_fcs_err_pkt_num"] == 3
    assert after["mac_rx_pfc_pkt_num"] - before["mac_rx_pfc_pkt_num"] == 10  # 2/s: far below a storm
    assert after["mac_tx_total_pkt_num"] > before["mac_tx_total_pkt_num"]


def test_fcs_errors_grow_50_a_second_on_the_faulty_npu_only(lab):
    state.set_fault(lab.state_dir, "node1", "fcs-errors", npu=2)
    doc = _doc(lab)
    since = doc["faults"][0]["since"]
    first, second = counters.counters_at(doc, 2, since + 10), counters.counters_at(doc, 2, since + 15)
    assert counter_rate("x", first["mac_rx_fcs_err_pkt_num"], second["mac_rx_fcs_err_pkt_num"], 5.0).rate_per_s == 50.0
    assert counters.counters_at(doc, 1, since + 15)["mac_rx_fcs_err_pkt_num"] == 3
    assert counters.counters_at(_doc(lab, "node2"), 2, since + 15)["mac_rx_fcs_err_pkt_num"] == 3
    # injecting it again does not restart its growth
    state.set_fault(lab.state_dir, "node1", "fcs-errors", npu=2)
    assert _doc(lab)["faults"] == doc["faults"]


def test_a_pfc_storm_on_every_npu_of_a_node(lab):
    state.set_fault(lab.state_dir, "node2", "pfc-storm")
    doc = _doc(lab, "node2")
    since = doc["faults"][0]["since"]
    for devid in (0, 7):
        grown = (
            counters.counters_at(doc, devid, since + 2)["mac_rx_pfc_pkt_num"]
            - counters.counters_at(doc, devid, since + 1)["mac_rx_pfc_pkt_num"]
        )
        assert grown == 20_002


def test_the_tool_prints_the_grown_counters_in_both_forms(mixed_lab):
    for node in ("node1", "node2"):
        state.set_fault(mixed_lab.state_dir, node, "fcs-errors", npu=0)
    current = parse_stat(mixed_lab.ok("node1", "-i", "0", "-stat", "-g"))
    assert current["mac_rx_fcs_err_pkt_num"] >= 3 and len(current) > 40
    legacy = parse_stat(mixed_lab.ok("node2", "-i", "0", "-stat", "-g"))
    assert set(legacy) == {"roce_rx_err_pkt_num", "roce_tx_err_pkt_num"}


def test_clearing_the_counters_starts_them_from_zero(lab):
    assert parse_stat(lab.ok("node1", "-i", "4", "-stat", "-g"))["mac_rx_fcs_err_pkt_num"] == 3
    lab.ok("node1", "-i", "4", "-stat", "-c")
    cleared = parse_stat(lab.ok("node1", "-i", "4", "-stat", "-g"))
    assert cleared["mac_rx_fcs_err_pkt_num"] == 0 and cleared["mac_rx_pfc_pkt_num"] < 100


def _backdate(lab, node, seconds):
    """Make the node's growing faults look ``seconds`` old (as if injected that long ago)."""
    with state.edit_node(lab.state_dir, node) as doc:
        for fault in doc["faults"]:
            fault["since"] -= seconds


def test_a_healed_fault_stops_growing_but_keeps_its_count(lab):
    state.set_fault(lab.state_dir, "node1", "fcs-errors", npu=2)
    _backdate(lab, "node1", 100)  # 100 s at 50/s: about 5,000 FCS errors
    grown = parse_stat(lab.ok("node1", "-i", "2", "-stat", "-g"))["mac_rx_fcs_err_pkt_num"]
    assert grown >= 3 + 5_000
    state.clear_faults(lab.state_dir, "node1", "fcs-errors")
    after_heal = counters.counters_at(_doc(lab), 2, 1e12)["mac_rx_fcs_err_pkt_num"]  # far in the future
    assert grown <= after_heal <= grown + 50  # kept, and no longer growing (at most the heal's own second)
    # the unlike case: only -stat -c zeroes it
    lab.ok("node1", "-i", "2", "-stat", "-c")
    assert parse_stat(lab.ok("node1", "-i", "2", "-stat", "-g"))["mac_rx_fcs_err_pkt_num"] == 0


def test_a_heal_after_a_clear_keeps_only_what_grew_since_the_clear(lab):
    state.set_fault(lab.state_dir, "node2", "pfc-storm")
    _backdate(lab, "node2", 1_000)  # 20 million PFC frames before the clear
    lab.ok("node2", "-i", "5", "-stat", "-c")
    state.clear_faults(lab.state_dir, "node2")
    doc = _doc(lab, "node2")
    assert counters.counters_at(doc, 5, doc["devices"][5]["counters_cleared_at"] + 1)["mac_rx_pfc_pkt_num"] < 100_000
    assert counters.counters_at(doc, 4, 1e12)["mac_rx_pfc_pkt_num"] >= 20_000_000  # not cleared: kept


def _health(lab, node, npu):
    return parse_health(lab.npu_smi(node, "info", "-t", "health", "-i", str(npu), "-c", "0").stdout)


def test_a_sub_health_fault_raises_a_code_the_vendor_table_knows(lab):
    state.set_fault(lab.state_dir, "node1", "npu-subhealth", npu=5)
    health, code, info = _health(lab, "node1", 5)
    assert (health, code) == ("Warning", "81078605") and "npu-subhealth" in (info or "")
    assert [m.level for m in decode(code)] == ["SubHealth"]
    assert _health(lab, "node1", 4)[:2] == ("OK", None)
    assert "| Warning" in lab.npu_smi("node1", "info").stdout


def test_an_unknown_code_fault_in_hex_and_in_the_legacy_decimal_form(mixed_lab):
    for node in ("node1", "node2"):
        state.set_fault(mixed_lab.state_dir, node, "npu-unknown-code", npu=1)
    current = _health(mixed_lab, "node1", 1)
    legacy = _health(mixed_lab, "node2", 1)
    assert current[:2] == ("Alarm", "8FFF0001") and legacy[:2] == ("Alarm", "2415853569")
    assert [(m.code, m.level) for m in decode(current[1])] == [("8FFF0001", "unknown")]
    assert [(m.code, m.level) for m in decode(legacy[1])] == [("8FFF0001", "unknown")]


def test_npu_alarm_outranks_a_code_fault(lab):
    state.set_fault(lab.state_dir, "node1", "npu-subhealth", npu=2)
    state.set_fault(lab.state_dir, "node1", "npu-alarm", npu=2)
    assert _health(lab, "node1", 2)[:2] == ("Alarm", "80E18402")
