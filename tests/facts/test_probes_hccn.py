"""hccn_tool answers in the gather: messages and the query table. Per-output cases (this output,
exit status, stderr → this NPU fact or error) are data: tests/fixtures/probes/hccn.*/*.json."""

from __future__ import annotations

import pytest

from ascendprep.facts import hccn
from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.superpod import VNIC
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.unit import NPU
from ascendprep.facts.units import UNITS


def test_timeout_error_names_the_command_and_limit(transcript):
    text = transcript(
        "gather",
        [
            {"name": "settings", "stdout": "timeout=10\n"},
            {"name": "hccn.lldp", "attrs": {"npu": 3}, "rc": 124},
        ],
    )
    (error,) = parse_gather_output(text).errors
    assert (error.probe, error.npu, error.kind) == ("hccn.lldp", 3, "timeout")
    assert error.message == "hccn_tool -i 3 -lldp -g timed out after 10s and was killed"


def test_busy_after_retries_is_reported_with_the_number_of_tries(transcript, fixture_text):
    text = transcript(
        "gather",
        [{"name": "hccn.ip", "attrs": {"npu": 0}, "rc": 11, "stdout": fixture_text("hccn/busy.out"), "tries": 4}],
    )
    (error,) = parse_gather_output(text).errors
    assert "still busy after 4 tries" in error.message


def test_thirteen_hccn_tool_calls_per_npu():
    """Each call costs every NPU of every host a few hundred ms: a new one is a conscious choice
    (-duplex and -fec are issue 20's port state; the thirteenth is the port counters' first read,
    issue 20 too: their second read, at the end of the script, is rendered as a host unit and only
    with verify's --sample-interval). An A3 die adds a fourteenth, -vnic -g (issue 21), asked only
    when npu-smi listed a two-chip NPU."""
    per_npu = [unit for unit in UNITS if unit.scope == NPU]
    assert len(per_npu) == 14
    assert 'if [ -n "$AP_SPOD" ]; then' in VNIC.script_lines(None)  # type: ignore[arg-type]
    assert all(unit.section.startswith("hccn.") for unit in per_npu)


@pytest.mark.parametrize(
    "parser, text, message",
    [
        # the missing part is named, not the part that is there
        (
            hccn.parse_gateway,
            "default gateway:10.0.0.1\n",
            "expected ', Iface:eth<k>' after the gateway in 'default gateway:<ip>, Iface:eth<k>', got 'default gateway:10.0.0.1'",
        ),
        (
            hccn.parse_gateway,
            "gateway: who knows\n",
            "expected 'default gateway:<ip>, Iface:eth<k>', got 'gateway: who knows'",
        ),
        (
            hccn.parse_netdetect,
            "detect: 10.0.0.1\n",
            "expected 'netdetect addr: <ip>' (or 'netdetect address: <ip>'), got 'detect: 10.0.0.1'",
        ),
        (hccn.parse_link, "", "expected 'link status: UP|DOWN', got no output"),
        (
            hccn.parse_ip,
            "Get invalid parameters!\n",
            "expected 'ipaddr:<ip>' and 'netmask:<mask>' lines, got 'Get invalid parameters!'",
        ),
    ],
)
def test_unrecognised_output_message_quotes_expected_and_got(parser, text, message):
    with pytest.raises(UnexpectedOutput) as caught:
        parser(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("netdetect addr: 29.1.0.1\n", "29.1.0.1"),  # driver source (tool_ops.c)
        ("netdetect address: 11.12.165.1\n", "11.12.165.1"),  # deployment guide's sample
    ],
)
def test_netdetect_both_spellings(text, expected):
    assert hccn.parse_netdetect(text) == {"netdetect": expected}
