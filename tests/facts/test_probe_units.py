"""The probe unit interface: the gather script and its parser are driven by the registered units."""

from __future__ import annotations

import re

import pytest

from ascendprep.facts.blockers import JobProbes
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.ports import PortQuery
from ascendprep.facts.unit import CHIP, NPU, VERIFY, VERIFY_ONLY, ProbeUnit, fixed, set_field, text_only, update_npu
from ascendprep.facts.units import NPU_SECTIONS_950, UNITS, by_section


def _sections_in(script: str):
    return set(re.findall(r"ap_run ([a-z0-9_.-]+) ", script)) | (
        {"tool.hccn_tool"} if "\nap_hccn_tool\n" in script else set()
    )


def test_every_section_the_script_prints_has_a_unit_and_every_unit_runs():
    jobs = JobProbes(PortQuery(((60000, 60031), (29500, 29500))), "10.0.0.1")  # issue 17's units need their settings
    script = render_gather_script(None, "python3", job_probes=jobs)
    # npu_smi.map and job.topology (the factory topology folder) are read on 950 only
    assert _sections_in(script) == set(by_section()) - {"npu_smi.map", "job.topology"}
    # the Ascend 950 script adds npu-smi's map (the NPUs' bond slots) and keeps, per NPU, only
    # the queries with a 950 form
    on_950 = render_gather_script(None, "python3", job_probes=jobs, generation="950")
    without_950_form = {u.section for u in UNITS if u.scope == "npu" and u.section not in NPU_SECTIONS_950}
    # (the counters' shell helpers still name hccn.stat; without a first read nothing calls them)
    assert "\tap_stat_first\n" not in on_950
    assert _sections_in(on_950) - {"hccn.stat"} == set(by_section()) - without_950_form


def test_two_units_with_one_section_are_refused():
    with pytest.raises(ValueError, match="two probe units print section 'hostname'"):
        by_section(UNITS + (UNITS[1],))


def test_units_name_the_phases_that_read_them():
    table = by_section()
    assert table["hccn.ip"].phases == {"plan", "verify"}
    assert table["hccn.link_stat"].phases == VERIFY_ONLY
    with pytest.raises(ValueError, match="phases"):
        ProbeUnit(
            section="x",
            command=fixed("x"),
            parse=text_only(str),
            fill=set_field("x"),
            fact="x",
            describe=fixed("x"),
            phases=frozenset({"apply"}),
        )


_WORD = ProbeUnit(
    section="demo.word",
    command=lambda ctx: "ap_tool cat /etc/demo",
    describe=fixed("cat /etc/demo"),
    parse=text_only(lambda text: text.strip()),
    fill=set_field("hostname"),
    fact="hostname",
    phases=frozenset({VERIFY}),
)


def _per_npu_parse(text: str):
    if not text.startswith("mtu:"):
        raise ValueError(f"expected 'mtu:<n>', got {text!r}")
    return {"speed_mbps": int(text[4:])}


_PER_NPU = ProbeUnit(
    section="demo.mtu",
    scope=NPU,
    command=lambda ctx: 'ap_hccn -i "$ap_dev" -mtu -g',
    describe=lambda where: f"hccn_tool -i {where.npu} -mtu -g",
    parse=text_only(_per_npu_parse),
    fill=update_npu,
    fact="npus[devid].speed_mbps",
)

_PER_CHIP = ProbeUnit(
    section="demo.chip",
    scope=CHIP,
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -i "$ap_id" -c "$ap_c" -t temp',
    describe=lambda where: f"npu-smi info -i {where.npu} -c {where.chip} -t temp",
    parse=text_only(str),
    fill=lambda draft, where, value: None,
    fact="(nothing)",
)


def test_a_new_unit_is_one_declaration_rendered_in_its_loop():
    units = UNITS + (_WORD, _PER_NPU, _PER_CHIP)
    script = render_gather_script(2, "python3", units=units)
    lines = script.splitlines()
    assert "ap_run demo.word '' ap_tool cat /etc/demo" in lines
    # per-NPU and per-chip units run in the functions ap_each_npu runs once per device id / chip
    npu_body = lines.index("ap_npu_probes() {")
    mtu = lines.index('\tap_run demo.mtu " npu=$ap_dev" ap_hccn -i "$ap_dev" -mtu -g')
    assert npu_body < mtu < lines.index("\tap_each_npu ap_npu_probes")
    chip_body = lines.index("ap_chip_probes() {")
    temp = lines.index(
        '\tap_run demo.chip " npu=$ap_id chip=$ap_c" ap_tool "$AP_NPUSMI" info -i "$ap_id" -c "$ap_c" -t temp'
    )
    assert chip_body < temp < lines.index('ap_each_npu ap_chip_probes "$ap_chip_list"')
    assert "demo.word" not in render_gather_script(2, "python3")


def test_a_new_unit_fills_its_fact_and_reports_its_failures(transcript):
    units = UNITS + (_WORD, _PER_NPU)
    text = transcript(
        "gather",
        [
            {"name": "demo.word", "stdout": "node7\n"},
            {"name": "demo.mtu", "attrs": {"npu": 0}, "stdout": "mtu:9000\n"},
            {"name": "demo.mtu", "attrs": {"npu": 1}, "stdout": "garbage\n"},
            {"name": "demo.mtu", "attrs": {"npu": 2}, "rc": 124},
        ],
    )
    facts = parse_gather_output(text, units=units)
    assert facts.hostname == "node7"
    assert facts.npus[0].speed_mbps == 9000
    assert set(facts.npus) == {0, 1, 2} and facts.npus[1].speed_mbps is None
    assert [(e.probe, e.kind, e.npu, e.message) for e in facts.errors] == [
        ("demo.mtu", "error", 1, "hccn_tool -i 1 -mtu -g: expected 'mtu:<n>', got 'garbage\\n'"),
        ("demo.mtu", "timeout", 2, "hccn_tool -i 2 -mtu -g timed out and was killed"),
    ]
    # Without the unit registered, its section is unknown output, not silently dropped.
    unknown = parse_gather_output(text)
    assert [e.message for e in unknown.errors][0] == "unknown section 'demo.word' in the gather output"


def test_a_settle_for_failures_only_is_consulted_for_failed_commands_and_any_other_settle_always():
    """``on_failure`` (issue 12): the unit skips the settle for a section that exited 0."""
    from ascendprep.facts.sections import Section
    from ascendprep.facts.unit import Given, Where, on_failure

    seen = []

    def settle(section):
        seen.append(section.rc)
        return Given("settled")

    def unit(settle_function):
        return ProbeUnit(
            section="demo.settle",
            command=fixed("x"),
            describe=fixed("x"),
            parse=text_only(str.strip),
            fill=set_field("hostname"),
            fact="hostname",
            settle=settle_function,
        )

    where = Where()
    failures_only = unit(on_failure(lambda section: settle(section)))
    assert failures_only.evaluate(Section("demo.settle", stdout="node1\n", rc=0), where).value == "node1"
    assert failures_only.evaluate(Section("demo.settle", rc=2), where).value == "settled"
    assert failures_only.evaluate(Section("demo.settle", rc=None), where).value == "settled"
    assert seen == [2, None]
    always = unit(settle)
    assert always.evaluate(Section("demo.settle", stdout="node1\n", rc=0), where).value == "settled"
    assert seen == [2, None, 0]


def test_sections_without_their_ids_are_refused_by_npu_chip_and_late_npu_units(transcript):
    text = transcript(
        "gather",
        [
            {"name": "hccn.ip", "stdout": "ipaddr:10.0.0.1\n"},
            {"name": "npu_smi.health", "attrs": {"npu": 0}, "stdout": "Health : OK\n"},
            {"name": "hccn.stat2", "attrs": {"pass": 2}, "stdout": "packet statistics:\nmac_tx_pkt_num:1\n"},
        ],
    )
    errors = [(e.probe, e.message) for e in parse_gather_output(text).errors]
    assert ("hccn.ip", "hccn_tool -i None -ip -g: section without an NPU id") in errors
    assert ("npu_smi.health", "npu-smi info -i 0 -c None -t health: section without npu/chip") in errors
    assert ("hccn.stat", "hccn_tool -i None -stat -g: section without an NPU id") in errors


def test_sections_after_the_settings_are_read_with_them_even_when_their_attributes_are_the_same(transcript):
    """The gather loop reuses one Where while the attributes and settings stay the same (issue
    12); a ``settings`` section between two attribute-less sections still changes what the
    second is read with."""
    text = transcript(
        "gather",
        [
            {"name": "hostname", "stdout": "node1\n"},
            {"name": "settings", "stdout": "timeout=10\nascend_home=/opt/Ascend\npython=/opt/venv/bin/python3\n"},
            {
                "name": "python",
                "stdout": '{"python": "3.11.7", "executable": "/opt/venv/bin/python3", "packages": {}}\n',
            },
        ],
    )
    facts = parse_gather_output(text)
    assert facts.hostname == "node1" and facts.ascend_home == "/opt/Ascend"
    assert facts.python.interpreter == "/opt/venv/bin/python3"
