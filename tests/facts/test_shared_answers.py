"""Answers a fleet prints alike are parsed once (ProbeUnit.shared_answers), and nothing else changes.

A 4,096-host verify parses ``-speed -g``, ``-fec -g``, npu-smi's health ... 32,768 times
each, and on a healthy fleet they read the same words on every port (issue 12, pa2). Each distinct
answer is parsed once and its value shared; the facts are those of a parse per host, a refusal is
worded for every host that printed it, the kept answers are bounded, and the units whose answers
hold a host's own values (addresses, certificates, neighbours, readings, counters, times) never
share.
"""

from __future__ import annotations

import pytest

from ascendprep.base.limits import SHARED_ANSWER_MAX_CHARS, SHARED_ANSWERS_PER_UNIT
from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.unit import NPU, ProbeUnit, fixed, shared_reading, text_only, update_npu
from ascendprep.facts.units import UNITS, by_section


def _counting(parse):
    calls = []

    def counted(text):
        calls.append(text)
        return parse(text)

    return counted, calls


def _mtu(text: str):
    if not text.startswith("mtu:"):
        raise ValueError(f"expected 'mtu:<n>', got {text!r}")
    return {"speed_mbps": int(text[4:])}


def _shared_unit(parse) -> ProbeUnit:
    return ProbeUnit(
        section="demo.mtu",
        scope=NPU,
        command=lambda ctx: 'ap_hccn -i "$ap_dev" -mtu -g',
        describe=lambda where: f"hccn_tool -i {where.npu} -mtu -g",
        parse=text_only(parse),
        fill=update_npu,
        fact="npus[devid].speed_mbps",
        shared_answers=True,
    )


def test_an_answer_many_hosts_print_is_parsed_once_and_each_host_gets_its_facts(transcript):
    parse, calls = _counting(_mtu)
    units = UNITS + (_shared_unit(parse),)
    hosts = [
        transcript("gather", [{"name": "demo.mtu", "attrs": {"npu": npu}, "stdout": "mtu:9000\n"} for npu in range(4)])
        for _ in range(3)
    ]
    facts = [parse_gather_output(text, units=units) for text in hosts]
    assert calls == ["mtu:9000\n"]  # 12 sections, one parse
    for host in facts:
        assert {devid: npu.speed_mbps for devid, npu in host.npus.items()} == {0: 9000, 1: 9000, 2: 9000, 3: 9000}
        assert host.errors == ()
    other = parse_gather_output(transcript("gather", [{"name": "demo.mtu", "attrs": {"npu": 0}, "stdout": "mtu:1500\n"}]), units=units)
    assert other.npus[0].speed_mbps == 1500 and calls == ["mtu:9000\n", "mtu:1500\n"]


def test_a_refusal_is_not_kept_and_is_worded_for_every_host(transcript):
    parse, calls = _counting(_mtu)
    units = UNITS + (_shared_unit(parse),)
    text = transcript("gather", [{"name": "demo.mtu", "attrs": {"npu": 3}, "stdout": "garbage\n"}])
    for _ in range(2):
        facts = parse_gather_output(text, units=units)
        assert [(e.probe, e.kind, e.npu, e.message) for e in facts.errors] == [
            ("demo.mtu", "error", 3, "hccn_tool -i 3 -mtu -g: expected 'mtu:<n>', got 'garbage\\n'")
        ]
        assert facts.npus[3].speed_mbps is None
    assert calls == ["garbage\n", "garbage\n"]


def test_the_kept_answers_are_bounded_in_number_and_length():
    parse, calls = _counting(len)
    read = shared_reading(parse)
    long_text = "x" * (SHARED_ANSWER_MAX_CHARS + 1)
    assert read(long_text) == read(long_text) == SHARED_ANSWER_MAX_CHARS + 1
    assert calls == [long_text, long_text] and read.answers == {}  # type: ignore[attr-defined]
    texts = [f"answer {i}" for i in range(SHARED_ANSWERS_PER_UNIT + 10)]
    for text in texts + texts:
        assert read(text) == len(text)
    assert len(read.answers) == SHARED_ANSWERS_PER_UNIT  # type: ignore[attr-defined]
    assert len(calls) == 2 + SHARED_ANSWERS_PER_UNIT + 2 * 10  # the ones not kept are read each time


def test_an_answer_whose_value_is_none_is_kept_too():
    parse, calls = _counting(lambda text: None)
    read = shared_reading(parse)
    assert read("NA\n") is None and read("NA\n") is None
    assert calls == ["NA\n"]


def test_only_a_text_only_parser_may_share_its_answers():
    with pytest.raises(ValueError, match="shared_answers needs a text-only parser"):
        ProbeUnit(
            section="demo.where",
            command=fixed("x"),
            describe=fixed("x"),
            parse=lambda stdout, where: (stdout, where.npu),
            fill=update_npu,
            fact="x",
            shared_answers=True,
        )


#: Units whose answers hold a host's (or a port's) own values: sharing them would be right (the key
#: is the whole text) but pointless on a real fleet, and would make a benchmark that replays one
#: recording on every simulated host lie.
_HOST_OWN = (
    "hostname", "hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.lldp", "hccn.tls", "hccn.link_stat",
    "hccn.optical", "hccn.stat", "hccn.stat2", "file.hccn_conf", "net.addrs", "hostname.resolve", "managed",
    "npu_smi.info", "net.links", "net.route", "ports.ss",
    # some products print each NPU's serial number in these (docs/ascend-reference.md §4.2)
    "npu_smi.list", "npu_smi.board",
)


def test_units_whose_answers_are_a_hosts_own_never_share_them():
    table = by_section()
    assert [name for name in _HOST_OWN if name in table and table[name].shared_answers] == []
    shared = {unit.section for unit in UNITS if unit.shared_answers}
    assert shared == {"hccn.link", "hccn.net_health", "hccn.speed", "hccn.duplex", "hccn.fec", "os_release", "job.visible"}


def test_each_host_keeps_its_own_os_release_map(transcript):
    text = transcript("gather", [{"name": "os_release", "stdout": 'ID=ubuntu\nVERSION_ID="22.04"\n'}])
    first, second = parse_gather_output(text), parse_gather_output(text)
    assert first.os_release == second.os_release == {"ID": "ubuntu", "VERSION_ID": "22.04"}
    assert first.os_release is not second.os_release
    first.os_release["ID"] = "changed"  # a reader that changes its copy changes no other host's
    assert second.os_release["ID"] == "ubuntu"


def test_npu_health_words_are_shared_but_each_chip_is_named(transcript):
    health = "\tHealth Status                  : OK\n\tError Code                     : NA\n\tError Information              : NA\n"
    text = transcript("gather", [{"name": "npu_smi.health", "attrs": {"npu": npu, "chip": 0}, "stdout": health} for npu in range(3)])
    facts = parse_gather_output(text)
    assert [(h.npu_id, h.chip, h.health, h.error_code) for h in facts.npu_health] == [(0, 0, "OK", None), (1, 0, "OK", None), (2, 0, "OK", None)]
