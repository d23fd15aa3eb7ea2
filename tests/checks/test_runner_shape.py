"""The runner's shared rules and the checks' shortcuts (issue 12, ck2) give what the plain rules give.

The runner asks a node's rules (failed prerequisite, no facts) once per node and NPU check and
calls each check function itself; the checks share one NpuPort per NPU, and optics.power tells
the usual module from its dimmest and brightest lane. Reference implementations of the earlier
code are kept here, and random inputs hold the new code to them.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from statistics import median
from typing import List, Optional

import pytest

from ascendprep.plan import drift
from ascendprep.verify.checks import optics, registry
from ascendprep.verify.checks.model import Check, failed, passed
from ascendprep.facts.model import HccnConf, OpticalInfo, OpticalLane, OpticalThresholds, ProbeError
from ascendprep.base.findings import Severity

from verify_cluster_facts import healthy_facts, judge, with_npu


def _with_checks(monkeypatch: pytest.MonkeyPatch, *extra: Check) -> None:
    checks = registry.CHECKS + extra
    monkeypatch.setattr(registry, "CHECKS", checks)
    monkeypatch.setattr(registry, "BY_ID", {check.id: check for check in checks})


def _broken(ctx, npu):
    if npu == 5:
        raise KeyError("lane 9")
    return passed("fine")


def _broken_generator(ctx, npu):
    yield passed("first")
    if npu == 2:
        raise ZeroDivisionError("division by zero")
    yield passed("second")


def test_a_check_that_raises_fails_as_could_not_check_on_that_npu_and_the_others_run(monkeypatch, desired) -> None:
    _with_checks(
        monkeypatch,
        Check("network.broken", ("network",), "npu", Severity.ERROR, "raises on NPU 5", "", _broken, requires=("node.reachable",)),
        Check("network.broken_gen", ("network",), "npu", Severity.WARNING, "raises while listed on NPU 2", "", _broken_generator),
    )
    results = judge(desired)
    broken = [r for r in results if r.check == "network.broken" and r.node == "node1"]
    assert [(r.npu, r.status.value) for r in broken] == [(npu, "failed" if npu == 5 else "passed") for npu in range(8)]
    assert broken[5].message == "could not check: the check itself failed: KeyError: 'lane 9'"
    assert broken[5].severity is Severity.ERROR
    generated = [(r.npu, r.message) for r in results if r.check == "network.broken_gen" and r.node == "node1"]
    # a generator that raises while it is listed gives one "could not check", not half its verdicts
    assert (2, "could not check: the check itself failed: ZeroDivisionError: division by zero") in generated
    assert [m for npu, m in generated if npu == 2] == ["could not check: the check itself failed: ZeroDivisionError: division by zero"]
    assert [m for npu, m in generated if npu == 3] == ["first", "second"]
    # the other checks still ran on every node
    assert sum(1 for r in results if r.check == "network.ip" and r.status.value == "passed") == 32


def test_a_failed_prerequisite_skips_each_npu_check_on_every_npu_of_that_node_only(desired) -> None:
    facts = {name: healthy_facts(desired, name) for name in ("node1", "node2", "node3", "node4")}
    facts["node2"] = replace(facts["node2"], hccn_tool=None)
    results = judge(desired, facts)
    ip = [r for r in results if r.check == "network.ip"]
    skipped_here = [(r.node, r.npu) for r in ip if r.status.value == "skipped"]
    assert skipped_here == [("node2", npu) for npu in range(8)]
    assert all(r.message.startswith("not checked: node.hccn_tool failed (hccn_tool is not installed") for r in ip if r.node == "node2")
    assert all(r.status.value == "passed" for r in ip if r.node != "node2")
    # npu.health does not need hccn_tool: it ran on node2
    assert all(r.status.value == "passed" for r in results if r.check == "npu.health" and r.node == "node2")


def test_a_probe_error_on_one_npu_makes_only_that_npu_could_not_check(desired) -> None:
    facts = {name: healthy_facts(desired, name) for name in ("node1", "node2", "node3", "node4")}
    facts["node3"] = replace(with_npu(facts["node3"], 6, ip=None), errors=(ProbeError("hccn.ip", "timeout", "hccn_tool -i 6 -ip -g timed out", npu=6),
                                                                          ProbeError("hccn.tls", "unsupported", "no -tls on this driver", npu=1)))
    results = judge(desired, facts)
    on_node3 = {(r.check, r.npu): r for r in results if r.node == "node3"}
    assert on_node3[("network.ip", 6)].message == "could not check: hccn_tool -i 6 -ip -g timed out"
    assert on_node3[("network.ip", 6)].evidence == {"probe_errors": [{"probe": "hccn.ip", "kind": "timeout", "message": "hccn_tool -i 6 -ip -g timed out"}]}
    assert on_node3[("network.ip", 5)].status.value == "passed"
    assert on_node3[("network.tls", 1)].message == "not supported on this product: no -tls on this driver"
    assert on_node3[("network.tls", 0)].status.value == "passed"


# -- drift.npu_port against the stale keys as they were worked out per call --------------------


def _stale_reference(facts, npu) -> List[str]:
    in_file = facts.hccn_conf.devices.get(npu, {}) if facts.hccn_conf else {}
    live = drift.npu_live(facts, npu)
    return [key for key, attribute in drift.HCCN_CONF_KEYS if in_file.get(key) != getattr(live, attribute)]


def test_npu_port_finds_the_stale_keys_the_per_call_reading_found(desired) -> None:
    rng = random.Random(3)
    values = ("10.20.0.1", "10.20.0.9", "255.255.255.0", "10.20.0.254", None)
    for _ in range(400):
        facts = healthy_facts(desired, "node1")
        for npu in range(8):
            if rng.random() < 0.4:
                facts = with_npu(facts, npu, ip=rng.choice(values), netmask=rng.choice(values), gateway=rng.choice(values), netdetect=rng.choice(values))
        devices = {npu: {key: value for key, value in entry.items() if rng.random() < 0.9} for npu, entry in facts.hccn_conf.devices.items() if rng.random() < 0.9}
        conf = rng.choice((None, HccnConf(raw="", devices=devices)))
        npus = {npu: live for npu, live in facts.npus.items() if rng.random() < 0.95}
        facts = replace(facts, hccn_conf=conf, npus=npus)
        for npu in range(9):
            port = drift.npu_port(facts, npu)
            assert list(port.stale) == _stale_reference(facts, npu)
            assert port.live == drift.npu_live(facts, npu)


# -- optics.power's usual-module shortcut against the function as it was -----------------------


def _db(ratio: float) -> float:
    return 10 * math.log10(ratio)


def _power_findings_reference(info: OpticalInfo, direction: str, margins: optics.OpticsMargins):
    """optics._power_findings before the usual module was told from its dimmest and brightest
    lane (kept verbatim: the reference the shortcut must agree with)."""
    attr = f"{direction}_power_mw"
    low = getattr(info.thresholds, f"{direction}_power_low_mw")
    high = getattr(info.thresholds, f"{direction}_power_high_mw")
    word = direction.capitalize()
    read = [(lane, value) for lane in info.lanes if (value := getattr(lane, attr)) is not None]
    verdicts = []
    margin_db = margins.power_margin_db
    values = [value for _, value in read]
    to_judge = read if values and not optics._all_within(min(values), max(values), low, high, margin_db) else []
    for lane, value in to_judge:
        severity: Optional[Severity] = None
        if value <= 0:
            what = "the lane is dark"
        elif low is not None and value < low:
            what = f"under the module's low alarm {low:.4f} mW"
        elif high is not None and value > high:
            what = f"over the module's high alarm {high:.4f} mW (overload: add an attenuator or check the module type)"
        elif low is not None and low > 0 and _db(value / low) < margin_db:
            what, severity = f"within {margin_db:g} dB of the module's low alarm {low:.4f} mW", Severity.WARNING
        elif high is not None and high > 0 and _db(high / value) < margin_db:
            what, severity = f"within {margin_db:g} dB of the module's high alarm {high:.4f} mW", Severity.WARNING
        else:
            continue
        where = optics._lane_name(lane)
        evidence = {"lane": lane.lane, "reading_mw": value, "reading_dbm": optics._dbm(value), "low_alarm_mw": low, "high_alarm_mw": high}
        if severity is not None:
            evidence["margin_db"] = margin_db
        message = f"{word} power of {where} is {value:.4f} mW" + (": " if value <= 0 else ", ") + what
        verdicts.append(failed(message, evidence, fix=optics._FIX_POWER, severity=severity, subject=f"{where} {direction}"))
    positive = [value for _, value in read if value > 0]
    if len(positive) < 3:
        return verdicts
    top = max(positive)
    if _db(top / min(positive)) < margins.lane_spread_db - 1e-9:
        return verdicts
    flagged = {v.subject for v in verdicts}
    for lane, value in read:
        if value <= 0 or _db(top / value) < margins.lane_spread_db - 1e-9:
            continue
        siblings = [other for peer, other in read if peer is not lane and other > 0]
        if len(siblings) < 2 or f"{optics._lane_name(lane)} {direction}" in flagged:
            continue
        reference = median(siblings)
        below = _db(reference / value)
        if below >= margins.lane_spread_db:
            verdicts.append(failed(
                f"{word} power of {optics._lane_name(lane)} is {value:.4f} mW, {below:.1f} dB below its sibling lanes (median {reference:.4f} mW)",
                {"lane": lane.lane, "reading_mw": value, "siblings_median_mw": round(reference, 4), "below_db": round(below, 2), "spread_db": margins.lane_spread_db},
                fix=optics._FIX_POWER, severity=Severity.WARNING, subject=f"{optics._lane_name(lane)} {direction} spread",
            ))
    return verdicts


def _shown(verdicts) -> list:
    return [(v.status, v.message, v.severity, v.subject, repr(v.evidence)) for v in verdicts]


def test_power_names_the_same_lanes_with_the_same_words_as_before_on_random_modules() -> None:
    """Alarms, margins and the sibling spread together, with dark, negative and NaN lanes
    anywhere (first or later), lanes without a reading, and thresholds missing or zero."""
    rng = random.Random(21)
    for _ in range(6000):
        lanes = rng.choice((1, 2, 3, 4, 8))
        base = rng.uniform(0.2, 2.0)
        choices = (base, base, base / 2, base / 1.995, base * rng.uniform(0.3, 1.2), 0.0, -1.0, float("nan"), None)
        tx = tuple(rng.choice(choices) if rng.random() < 0.3 else base * rng.uniform(0.9, 1.1) for _ in range(lanes))
        rx = tuple(rng.choice(choices) if rng.random() < 0.3 else base * rng.uniform(0.5, 1.1) for _ in range(lanes))
        thresholds = OpticalThresholds(
            rx_power_low_mw=rng.choice((None, 0.0, 1e-6, base / 4, base / 2)), rx_power_high_mw=rng.choice((None, 0.0, base * 1.5, base * 4)),
            tx_power_low_mw=rng.choice((None, 1e-6, base / 3)), tx_power_high_mw=rng.choice((None, base * 1.2, base * 4)),
        )
        info = OpticalInfo(True, lanes=tuple(OpticalLane(i, tx_power_mw=t, rx_power_mw=r) for i, (t, r) in enumerate(zip(tx, rx))), thresholds=thresholds)
        margins = optics.OpticsMargins(power_margin_db=rng.choice((0.0, 1.0, 3.0)), lane_spread_db=rng.choice((1.0, 3.0, 3.0103, 20.0)),
                                       temp_margin_c=5, vcc_margin_pct=2, bias_spread_ratio=0.5)
        for direction in ("rx", "tx"):
            assert _shown(optics._power_findings(info, direction, margins)) == _shown(_power_findings_reference(info, direction, margins)), (info, margins)


# -- node.host_nic's subnet test against ip_interface ------------------------------------------


def test_in_subnet_answers_as_ip_interface_did() -> None:
    import ipaddress

    from ascendprep.verify.checks.blockers import _in_subnet
    from ascendprep.facts.model import InterfaceAddress

    def reference(address: str, holder: InterfaceAddress) -> bool:
        try:
            return ipaddress.ip_address(address) in ipaddress.ip_interface(f"{holder.address}/{holder.prefixlen}").network
        except ValueError:
            return False

    rng = random.Random(8)
    addresses = ("10.0.0.1", "10.0.1.7", "10.0.0.255", "192.168.3.4", "0.0.0.0", "255.255.255.255", "::1", "fe80::1", "10.0.0", "10.0.0.01", "", "x")
    for _ in range(5000):
        holder = InterfaceAddress("eth0", "inet", rng.choice(addresses), rng.choice((0, 1, 8, 16, 23, 24, 31, 32, 33, 64, 128, -1)))
        address = rng.choice(addresses[:6])  # host_nic asks for MASTER_ADDR as ip_literal gives it: IPv4
        assert _in_subnet(address, holder) == reference(address, holder), (address, holder)


# -- software: the inventory's expected version is parsed once ----------------------------------


@pytest.mark.parametrize(
    "key, installed, expected, same",
    [
        ("torch", "2.13.0+cpu", "2.13.0", True),  # the parser decides (a local tag)
        ("torch", "2.12.0", "2.13.0", False),
        ("torch", "2.13.0", "2.13.0.0", True),
        ("torch", "2.13.0", "not a version", False),
        ("torch", "garbage", "2.13.0", False),
        ("torch_npu", "2.1.0.post3", "2.1.0.post3", True),
        ("cann", "8.0.RC3", "8.0.rc3", True),
        ("cann", "8.0.RC3", "8.0.RC2", False),
        ("python", "3.11.7", "3.11", True),
    ],
)
def test_same_version_parses_what_a_node_has_against_the_expected_version(key, installed, expected, same) -> None:
    from ascendprep.verify.checks.software import same_version

    for _ in range(2):  # the second answer comes with the expected version already parsed
        assert same_version(key, installed, expected) is same
