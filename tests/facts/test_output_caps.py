"""Node-side output caps: a tool that prints megabytes costs the controller a marked excerpt.

The gather script is run for real (dash and bash) against the fake tools of
test_probes_gather, with one hccn_tool call flooding (escape sequences, 5,000-digit numbers, a
NUL as the last byte). That probe must become "could not read ...: output over N KB" for that
NPU only, with the tool's own exit status, while every other probe is read as usual; and no
parser may take more than linear time on hostile text that stays under the cap.
"""

from __future__ import annotations

import sys
import time

import pytest
from test_probes_gather import SHELLS, _fake_host, _run

from ascendprep.base import limits
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import ProbeError
from ascendprep.facts.ping import parse_ping_output, parse_ping_summary
from ascendprep.facts.sections import parse_transcript
from ascendprep.facts.shell import UnsafeValue, remote_call_output_cap
from ascendprep.facts.unit import NPU
from ascendprep.facts.units import UNITS

FLOOD = 3 * 1024 * 1024


def _section(output: str, name: str, npu: int):
    return next(s for s in parse_transcript(output, "gather").sections if s.name == name and s.npu == npu)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_flooding_call_is_cut_on_the_node_and_only_that_probe_fails(tmp_path, fixtures_dir, shell):
    home, env = _fake_host(tmp_path, fixtures_dir)
    env["FAKE_FLOOD"] = f"0:-lldp:{FLOOD}:5"
    script = render_gather_script(2, sys.executable, per_command_timeout=20, ascend_home=str(home))

    output = _run(shell, script, env)
    facts = parse_gather_output(output)

    # What came back is the excerpt of stdout and the stderr (under the cap), not the megabytes.
    assert len(output.encode()) < FLOOD // 16 + 64 * 1024
    lldp = _section(output, "hccn.lldp", 0)
    assert lldp.attrs["over"] == "stdout" and lldp.attrs["cap"] == str(limits.REMOTE_CALL_OUTPUT_CAP)
    assert lldp.rc == 5, "the tool's exit status must survive the cut"
    assert 0 < len(lldp.stdout.encode()) <= limits.REMOTE_CUT_EXCERPT + 1
    assert (lldp.stderr, lldp.tries) == ("err\n" * (FLOOD // 16 // 4), 1)

    (error,) = facts.errors_for("hccn.lldp", npu=0)
    assert error == ProbeError(
        probe="hccn.lldp", kind="over_cap", npu=0, message="could not read hccn_tool -i 0 -lldp -g: output over 256 KB"
    )
    # Everything else on the host was read: the other probes of NPU 0, and NPU 1's LLDP.
    assert facts.npus[0].lldp is None
    assert facts.npus[0].ip == "10.20.0.10" and facts.npus[0].link == "UP"
    assert facts.npus[1].lldp.system_name == "LEAF-A-01"
    assert facts.firewall.ufw.active is True and facts.versions.driver_version == "23.0.7"
    assert {(e.probe, e.npu) for e in facts.errors if e.kind == "over_cap"} == {("hccn.lldp", 0)}


@pytest.mark.parametrize("shell", SHELLS)
def test_the_cap_can_be_lowered_and_a_flood_under_it_reaches_the_parser_as_unexpected(
    tmp_path, fixtures_dir, shell, monkeypatch
):
    """The unlike variant: under the cap the text is parsed, and refused as not hccn_tool's."""
    home, env = _fake_host(tmp_path, fixtures_dir)
    monkeypatch.setenv(limits.REMOTE_CALL_OUTPUT_CAP_ENV, "65536")
    assert remote_call_output_cap() == 65536
    script = render_gather_script(2, sys.executable, per_command_timeout=20, ascend_home=str(home))
    env["FAKE_FLOOD"] = "0:-link:1200000:0"  # 1.2 MB on stdout, 75 KB on stderr: both over 64 KB
    over = parse_gather_output(_run(shell, script, env))
    (error,) = over.errors_for("hccn.link", npu=0)
    assert (error.kind, error.message) == (
        "over_cap",
        "could not read hccn_tool -i 0 -link -g: output over 64 KB (stdout and stderr)",
    )

    env["FAKE_FLOOD"] = "0:-link:30000:0"  # under 64 KB: parsed, and not a link state
    under = parse_gather_output(_run(shell, script, env))
    (error,) = under.errors_for("hccn.link", npu=0)
    assert error.kind == "error" and error.message.startswith("hccn_tool -i 0 -link -g: ")
    assert under.npus[0].link is None and under.npus[1].link == "UP"


def test_a_nul_as_the_last_byte_does_not_swallow_the_next_marker(tmp_path, fixtures_dir):
    home, env = _fake_host(tmp_path, fixtures_dir)
    env["FAKE_FLOOD"] = "1:-tls:5000:0"  # 5,000 bytes ending in NUL, under the cap
    script = render_gather_script(2, sys.executable, per_command_timeout=20, ascend_home=str(home))
    output = _run("sh", script, env)
    tls = _section(output, "hccn.tls", 1)
    assert tls.rc == 0 and "over" not in tls.attrs
    assert tls.stdout.endswith("\0\n") and tls.stderr == "err\n" * 78
    assert parse_transcript(output, "gather").complete


def test_a_bad_cap_override_is_refused_with_its_name(monkeypatch):
    monkeypatch.setenv(limits.REMOTE_CALL_OUTPUT_CAP_ENV, "lots")
    with pytest.raises(UnsafeValue, match=limits.REMOTE_CALL_OUTPUT_CAP_ENV):
        render_gather_script(1, sys.executable)


def test_a_cut_ping_is_a_failed_pair_not_a_parse(transcript):
    text = transcript(
        "ping",
        [
            {"name": "settings", "stdout": "timeout=15\n"},
            {"name": "pairs", "stdout": "0 10.0.0.2\n1 10.0.0.3\n"},
            {
                "name": "ping",
                "attrs": {"npu": 0, "target": "10.0.0.2", "over": "stdout", "cap": 262144},
                "stdout": "3 packets transmitted, 3 received, 0% packet loss\n",
            },
            {
                "name": "ping",
                "attrs": {"npu": 1, "target": "10.0.0.3"},
                "stdout": "3 packets transmitted, 3 received, 0% packet loss\n",
            },
        ],
    )
    cut, fine = parse_ping_output(text)
    assert (cut.ok, cut.error) == (False, "could not read hccn_tool -i 0 -ping -g address 10.0.0.2: output over 256 KB")
    assert fine.ok and fine.received == 3


HCCN_SECTIONS = [unit.section for unit in UNITS if unit.scope == NPU]


def _under_cap_junk() -> str:
    """Hostile text just under the cap: long digit runs that almost match the parsers' patterns."""
    block = "ipaddr:" + "7" * 5000 + " packets transmitted, " + "9" * 5000 + "\x1b[31m\n"
    return (block * (limits.REMOTE_CALL_OUTPUT_CAP // len(block)))[: limits.REMOTE_CALL_OUTPUT_CAP - 1] + "\n"


def test_parsing_hostile_text_under_the_cap_takes_linear_time(transcript):
    junk = _under_cap_junk()
    sections = [{"name": "settings", "stdout": "timeout=10\n"}, {"name": "npus", "stdout": "0\n1\n"}]
    sections += [{"name": probe, "attrs": {"npu": npu}, "stdout": junk} for npu in (0, 1) for probe in HCCN_SECTIONS]
    text = transcript("gather", sections)

    started = time.monotonic()
    facts = parse_gather_output(text)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"parsing {len(text) // 1024} KB took {elapsed:.1f}s"
    assert {e.npu for e in facts.errors} == {0, 1}

    # 20,000 digits: ~8 s with a pattern that retries the run from every digit, ~1 ms without.
    started = time.monotonic()
    assert parse_ping_summary("1" * 20000) is None
    assert time.monotonic() - started < 1, "the ping summary pattern backtracks over digit runs"
    started = time.monotonic()
    assert parse_ping_summary(junk) is None
    assert (
        parse_ping_summary("1" * limits.REMOTE_CALL_OUTPUT_CAP + " packets transmitted, 1 received, 0% packet loss")
        is None
    )
    assert time.monotonic() - started < 2


def test_numbers_too_long_for_int_fail_their_probe_not_the_host(transcript, fixture_text):
    """Python refuses int() of over 4,300 digits (ValueError): that must stay one probe's error."""
    digits = "7" * 5000
    text = transcript(
        "gather",
        [
            {"name": "settings", "stdout": "timeout=10\n"},
            {"name": "npu_smi.list", "stdout": f"NPU ID : {digits}\nChip Count : 1\n"},
            {"name": "npus", "stdout": "0\n"},
            {"name": "hccn.ip", "attrs": {"npu": 0}, "stdout": fixture_text("hccn/ip_get.out")},
            {"name": "hccn.tls", "attrs": {"npu": 0}, "stdout": f"tls switch[{digits}]\ntls preconfigured[1]\n"},
            {"name": "hccn.speed", "attrs": {"npu": 0}, "stdout": f"Speed: {digits} Mb/s\n"},
        ],
    )
    facts = parse_gather_output(text)
    assert {(e.probe, e.npu, e.kind) for e in facts.errors} == {
        ("npu_smi.list", None, "error"),
        ("hccn.tls", 0, "error"),
        ("hccn.speed", 0, "error"),
    }
    assert all("unreadable output" in e.message or "5000 digits" in e.message for e in facts.errors), [
        e.message for e in facts.errors
    ]
    assert facts.npus[0].ip is not None
    assert parse_ping_summary(f"{digits} packets transmitted, 3 received, 0% packet loss") is None
