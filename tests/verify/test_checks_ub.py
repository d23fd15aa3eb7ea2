"""The Ascend 950 UB checks: what a user reads in their messages (the port named, the lanes, the
counter and its rate), that a 910 NPU is skipped, and that a probe failure is "could not check".
The fault cases as data are under tests/fixtures/checks/ub.*."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ascendprep.facts.model import ProbeError
from ascendprep.facts.ub_model import (
    SioInfo,
    UbConnect,
    UbCounterRead,
    UbFacts,
    UbLinkEvent,
    UbLinkStat,
    UbPortFacts,
    UbPortInfo,
    UbSpeed,
)
from ascendprep.verify.checks import registry
from ascendprep.verify.checks.registry import Selection


def _port(port: int, width: int = 4, tx: int = 4, crc: tuple = (0, 0)) -> UbPortFacts:
    return UbPortFacts(
        udie=0,
        port=port,
        speed=UbSpeed(speed_gbps=400, cap_lanes=4, width_lanes=width, status="normal" if width == 4 else "downgraded"),
        port_info=UbPortInfo(lane_num=4, cur_tx_lane_num=tx, cur_rx_lane_num=4, lstm_state="LINK_ACTIVE"),
        link_stat=UbLinkStat(up_count=1, down_count=0, current_time="2026-02-09T22:00:00"),  # never flapped
        stat_samples=(
            UbCounterRead(1, 10.0, {"port_id": port, "crc_error_sum": crc[0], "retry_req_sum": 0}),
            UbCounterRead(2, 15.0, {"port_id": port, "crc_error_sum": crc[1], "retry_req_sum": 0}),
        ),
    )


@pytest.fixture(autouse=True)
def _lift_the_950_gate(monkeypatch):
    """The atlas-a2 test cluster stands in for 950 nodes: the UB checks' product gate is lifted."""
    lifted = tuple(replace(c, applies=None) if c.id.startswith("ub.") else c for c in registry.CHECKS)
    monkeypatch.setattr(registry, "CHECKS", lifted)


def _judge(verify_cluster, ub=None, errors=()):
    facts = verify_cluster.healthy("node1")
    npus = dict(facts.npus)
    npus[2] = replace(npus[2], ub=ub)
    facts = replace(facts, npus=npus, errors=facts.errors + tuple(errors))
    results = verify_cluster.judge({"node1": facts}, selection=Selection.parse(only=["ub"]))
    return [r for r in results if r.node == "node1" and r.npu == 2]


def _by_check(results):
    return {r.check: r for r in results}


def test_910_npus_skip_the_ub_checks(verify_cluster):
    """With the gate lifted, facts without UB ports (a 910 NPU's) still skip rather than fail."""
    results = _by_check(_judge(verify_cluster))
    assert {r.status.value for r in results.values()} == {"skipped"}
    assert "not an Ascend 950 NPU" in results["ub.link"].message


def test_down_and_partial_ports_are_named_each(verify_cluster):
    ub = UbFacts(
        connect=UbConnect("PARTIAL LINK", {4: "UP", 5: "DOWN", 6: "PARTIAL UP"}),
        ports={f"0/{p}": _port(p) for p in (4, 5, 6)},
        sio=SioInfo(0, 0),
    )
    failed = [r for r in _judge(verify_cluster, ub) if r.failed]
    assert sorted((r.check, r.subject) for r in failed) == [("ub.link", "0/5"), ("ub.link", "0/6")]
    messages = {r.subject: r.message for r in failed}
    assert messages["0/5"] == "UB port 0/5 is DOWN (link status PARTIAL LINK)"
    assert "PARTIAL UP" in messages["0/6"] and "fewer lanes" in messages["0/6"]
    assert "-link_stat -i 2 -u 0 -p 5" in next(r.fix for r in failed if r.subject == "0/5")


def test_lane_loss_and_growing_crc_name_port_and_figures(verify_cluster):
    ub = UbFacts(
        connect=UbConnect("UP", {4: "UP", 5: "UP", 6: "UP"}),
        ports={"0/4": _port(4, tx=2), "0/5": _port(5, width=2), "0/6": _port(6, crc=(10, 510))},
        sio=SioInfo(0, 2),
    )
    results = _judge(verify_cluster, ub)
    failed = {(r.check, r.subject): r for r in results if r.failed}
    assert set(failed) == {
        ("ub.lanes", "0/4"),
        ("ub.lanes", "0/5"),
        ("ub.counters", "0/6 crc_error_sum"),
        ("ub.sio", None),
    }
    assert "trained tx X2 rx X4 of X4" in failed[("ub.lanes", "0/4")].message
    assert "Width X2 of Cap X4 (downgraded)" in failed[("ub.lanes", "0/5")].message
    crc = failed[("ub.counters", "0/6 crc_error_sum")]
    assert "grows 100.0/s over 5.0s (threshold 1/s, ub_crc_errors_per_s)" in crc.message
    assert crc.evidence["first"] == 10 and crc.evidence["second"] == 510
    assert failed[("ub.sio", None)].severity.value == "warning" and "RX 2" in failed[("ub.sio", None)].message


def test_a_failed_ub_probe_is_could_not_check(verify_cluster):
    error = ProbeError("hccn.ub_connect", "timeout", "hccn_tool -g -ub_connect -i 2 timed out after 10s", npu=2)
    results = _by_check(_judge(verify_cluster, None, [error]))
    assert results["ub.link"].failed and results["ub.link"].message.startswith("could not check: ")


def test_on_a_910_inventory_each_ub_check_is_skipped_once(verify_cluster, monkeypatch):
    monkeypatch.undo()
    results = [r for r in verify_cluster.judge(selection=Selection.parse(only=["ub"])) if r.check.startswith("ub.")]
    assert sorted(r.check for r in results) == [
        "ub.counters",
        "ub.lanes",
        "ub.link",
        "ub.link_flaps",
        "ub.ping",
        "ub.sio",
    ]
    assert {r.message for r in results} == {"atlas-a2 has no UB ports (Ascend 950 only)"}


def test_a_port_read_that_failed_is_could_not_check_for_that_port(verify_cluster):
    ub = UbFacts(
        connect=UbConnect("UP", {4: "UP", 5: "UP"}),
        ports={"0/4": _port(4), "0/5": UbPortFacts(udie=0, port=5)},
        sio=SioInfo(0, 0),
    )
    error = ProbeError("hccn.ub_speed", "timeout", "hccn_tool -g -speed -i 2 -u 0 -p 5 timed out after 10s", npu=2)
    results = _by_check(_judge(verify_cluster, ub, [error]))
    assert results["ub.lanes"].failed
    assert results["ub.lanes"].message == "could not check: hccn_tool -g -speed -i 2 -u 0 -p 5 timed out after 10s"


def _history(*events, down_count=None, now="2026-02-09T22:00:00"):
    """-link_stat of port 0/4: the documented example's rows (``Mon Feb 9 21:45:47 2026``), newest first."""
    rows = tuple(UbLinkEvent(state, when) for state, when in events)
    downs = sum(1 for e in rows if e.state == "LINK_DOWN") if down_count is None else down_count
    return UbFacts(
        ports={"0/4": replace(_port(4), link_stat=UbLinkStat(1 + downs, downs, rows, current_time=now))},
    )


_FLAP = (("LINK_UP", "Mon Feb 9 21:45:51 2026"), ("LINK_DOWN", "Mon Feb 9 21:45:47 2026"))


def test_a_recent_flap_is_named_with_its_port_and_time(verify_cluster):
    result = _by_check(_judge(verify_cluster, _history(*_FLAP)))["ub.link_flaps"]
    assert result.failed and result.severity.value == "warning" and result.subject == "0/4"
    assert result.message == "UB port 0/4 went down and back 1 time in the last 24 h (latest Mon Feb 9 21:45:47 2026)"
    assert "-down_data -i 2 -u 0 -p 4" in result.fix


def test_one_flap_long_ago_passes_and_a_count_beyond_the_history_does_not(verify_cluster):
    old = _by_check(_judge(verify_cluster, _history(*_FLAP, now="2026-02-13T09:00:00")))["ub.link_flaps"]
    assert old.status.value == "passed"
    lost = _judge(verify_cluster, _history(*_FLAP, down_count=12, now="2026-02-13T09:00:00"))
    result = _by_check(lost)["ub.link_flaps"]
    assert result.failed and "link down count is 12 but the history lists 1" in result.message


def test_a_port_down_now_is_ub_links_and_no_clock_counts_every_flap(verify_cluster):
    down_now = (("LINK_DOWN", "Mon Feb 9 21:50:00 2026"),)
    assert _by_check(_judge(verify_cluster, _history(*down_now)))["ub.link_flaps"].status.value == "passed"
    unclocked = _by_check(_judge(verify_cluster, _history(*_FLAP, now=None)))["ub.link_flaps"]
    assert unclocked.failed and "in its history (the host's clock was not read)" in unclocked.message
