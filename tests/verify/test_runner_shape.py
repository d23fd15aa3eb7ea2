"""The runner's shared rules (issue 12, ck2) give what the plain rules give.

The runner asks a node's rules (failed prerequisite, no facts) once per node and NPU check and
calls each check function itself; the checks share one NpuPort per NPU. A reference
implementation of the earlier per-call stale keys is kept here, and random inputs hold the new
code to it.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import List

import pytest
from verify_cluster_facts import healthy_facts, judge, with_npu

from ascendprep.base.findings import Severity
from ascendprep.facts.model import HccnConf, ProbeError
from ascendprep.plan import drift
from ascendprep.verify.checks import registry
from ascendprep.verify.checks.model import Check, passed


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
        Check(
            "network.broken",
            ("network",),
            "npu",
            Severity.ERROR,
            "raises on NPU 5",
            "",
            _broken,
            requires=("node.reachable",),
        ),
        Check(
            "network.broken_gen",
            ("network",),
            "npu",
            Severity.WARNING,
            "raises while listed on NPU 2",
            "",
            _broken_generator,
        ),
    )
    results = judge(desired)
    broken = [r for r in results if r.check == "network.broken" and r.node == "node1"]
    assert [(r.npu, r.status.value) for r in broken] == [(npu, "failed" if npu == 5 else "passed") for npu in range(8)]
    assert broken[5].message == "could not check: the check itself failed: KeyError: 'lane 9'"
    assert broken[5].severity is Severity.ERROR
    generated = [(r.npu, r.message) for r in results if r.check == "network.broken_gen" and r.node == "node1"]
    # a generator that raises while it is listed gives one "could not check", not half its verdicts
    assert (2, "could not check: the check itself failed: ZeroDivisionError: division by zero") in generated
    assert [m for npu, m in generated if npu == 2] == [
        "could not check: the check itself failed: ZeroDivisionError: division by zero"
    ]
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
    assert all(
        r.message.startswith("not checked: node.hccn_tool failed (hccn_tool is not installed")
        for r in ip
        if r.node == "node2"
    )
    assert all(r.status.value == "passed" for r in ip if r.node != "node2")
    # npu.health does not need hccn_tool: it ran on node2
    assert all(r.status.value == "passed" for r in results if r.check == "npu.health" and r.node == "node2")


def test_a_probe_error_on_one_npu_makes_only_that_npu_could_not_check(desired) -> None:
    facts = {name: healthy_facts(desired, name) for name in ("node1", "node2", "node3", "node4")}
    facts["node3"] = replace(
        with_npu(facts["node3"], 6, ip=None),
        errors=(
            ProbeError("hccn.ip", "timeout", "hccn_tool -i 6 -ip -g timed out", npu=6),
            ProbeError("hccn.tls", "unsupported", "no -tls on this driver", npu=1),
        ),
    )
    results = judge(desired, facts)
    on_node3 = {(r.check, r.npu): r for r in results if r.node == "node3"}
    assert on_node3[("network.ip", 6)].message == "could not check: hccn_tool -i 6 -ip -g timed out"
    assert on_node3[("network.ip", 6)].evidence == {
        "probe_errors": [{"probe": "hccn.ip", "kind": "timeout", "message": "hccn_tool -i 6 -ip -g timed out"}]
    }
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
                facts = with_npu(
                    facts,
                    npu,
                    ip=rng.choice(values),
                    netmask=rng.choice(values),
                    gateway=rng.choice(values),
                    netdetect=rng.choice(values),
                )
        devices = {
            npu: {key: value for key, value in entry.items() if rng.random() < 0.9}
            for npu, entry in facts.hccn_conf.devices.items()
            if rng.random() < 0.9
        }
        conf = rng.choice((None, HccnConf(raw="", devices=devices)))
        npus = {npu: live for npu, live in facts.npus.items() if rng.random() < 0.95}
        facts = replace(facts, hccn_conf=conf, npus=npus)
        for npu in range(9):
            port = drift.npu_port(facts, npu)
            assert list(port.stale) == _stale_reference(facts, npu)
            assert port.live == drift.npu_live(facts, npu)


# -- node.host_nic's subnet test ---------------------------------------------------------------


@pytest.mark.parametrize(
    "address, holder, inside",
    [
        ("10.0.0.1", ("10.0.0.7", 24), True),
        ("10.0.1.7", ("10.0.0.7", 24), False),
        ("10.0.1.7", ("10.0.0.7", 23), True),
        ("192.168.3.4", ("10.0.0.7", 0), True),
        ("10.0.0.1", ("10.0.0.1", 32), True),
        ("10.0.0.2", ("10.0.0.1", 32), False),
        ("10.0.0.1", ("10.0.0.7", 33), False),  # no such prefix length
        ("10.0.0.1", ("10.0.0.7", -1), False),
        ("10.0.0.1", ("fe80::1", 64), False),  # not an IPv4 holder
        ("10.0.0.1", ("10.0.0.01", 24), False),  # not an address ipaddress reads
        ("10.0.0.1", ("", 24), False),
    ],
)
def test_in_subnet_answers_whether_the_master_is_on_the_holders_network(address, holder, inside) -> None:
    from ascendprep.facts.model import InterfaceAddress
    from ascendprep.verify.checks.blockers import _in_subnet

    assert _in_subnet(address, InterfaceAddress("eth0", "inet", *holder)) is inside


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
