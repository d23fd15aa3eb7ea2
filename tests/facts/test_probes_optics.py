"""``-optical -g``, ``-duplex -g``, ``-fec -g`` and ``npu-smi info -t board``: every parser branch.

Fixtures: tests/fixtures/probes/hccn/optical_* (driver format, see the README there) and the
published captures among the data cases in tests/fixtures/probes/hccn.optical/ (the 910A "not
present but readings" form and the MindCluster docs' unnumbered form; test_probe_fixtures.py runs
every case there through the unit too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendprep.facts.optics import flagged_lanes, parse_optical, parse_optical_info
from ascendprep.facts.port_state import parse_board_firmware, parse_duplex, parse_fec
from ascendprep.facts.text import UnexpectedOutput

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"


def text(name: str) -> str:
    return (FIXTURES / "hccn" / name).read_text()


def capture(name: str) -> str:
    """The output of a published capture case (tests/fixtures/probes/hccn.optical/)."""
    return json.loads((FIXTURES / "hccn.optical" / name).read_text())["output"]


def test_four_lanes_with_the_modules_thresholds():
    info = parse_optical_info(text("optical_get_thresholds.out"))
    assert (info.present, info.medium, info.indexed) == (True, "optical", True)
    assert [lane.rx_power_mw for lane in info.lanes] == [0.7943, 0.804, 0.8137, 0.8234]
    assert [lane.tx_bias_ma for lane in info.lanes] == [7.5, 7.625, 7.75, 7.875]
    t = info.thresholds
    assert (t.rx_power_low_mw, t.rx_power_high_mw, t.tx_power_low_mw, t.temp_high_c, t.temp_low_c, t.vcc_low_mv) == (
        0.1445,
        3.5481,
        0.2818,
        70.0,
        0.0,
        3135.0,
    )
    assert (info.temperature_c, info.vcc_mv, info.identifier, info.wavelength_nm) == (45.0, 3262.9, "QSFP56", 850)
    assert info.flags == {"tx_los": 0, "rx_los": 0, "tx_lol": 0, "rx_lol": 0}
    assert all(lane.rx_los is False and lane.rx_lol is False for lane in info.lanes)


def test_flag_masks_are_decoded_per_lane():
    healthy = text("optical_get_thresholds.out")
    info = parse_optical_info(healthy.replace("Rx Los Flag          : 0x0", "Rx Los Flag          : 0x6"))
    assert [lane.rx_los for lane in info.lanes] == [False, True, True, False]
    assert [lane.tx_los for lane in info.lanes] == [False] * 4
    assert flagged_lanes(0x6, 4) == [1, 2] and flagged_lanes(0, 4) == [] and flagged_lanes(None, 4) == []


def test_older_driver_without_lol_lines_leaves_lol_unknown():
    assert parse_optical_info(text("optical_get.out")).flags["rx_lol"] == 0  # printed here; drop them
    trimmed = "".join(line + "\n" for line in text("optical_get.out").splitlines() if "LoL" not in line)
    info = parse_optical_info(trimmed)
    assert "rx_lol" not in info.flags and all(lane.rx_lol is None for lane in info.lanes)


def test_copper_port_is_present_with_no_readings():
    info = parse_optical_info(text("optical_get_copper.out"))
    assert (info.present, info.medium, info.indexed) == (True, "electrical", False)
    assert (info.temperature_c, info.temperature_note, info.vcc_mv) == (None, "not supported", None)
    assert info.thresholds.rx_power_low_mw is None
    assert parse_optical(text("optical_get_copper.out"))["optical_present"] is True


def test_empty_cage_is_absent():
    info = parse_optical_info(text("optical_get_not_present_invalid.out"))
    assert (info.present, info.medium, info.has_readings) == (False, "absent", False)
    assert parse_optical(capture("optical_not_present.json"))["optical_present"] is False


def test_not_present_line_with_readings_is_a_present_module():
    """Real capture (MindCluster 910A npu_info_before.txt): the readings win over the line."""
    fields = parse_optical(capture("atlas800_optical_not_present_with_readings.json"))
    info = fields["optics"]
    assert fields["optical_present"] is True and info.present_line is False and info.medium == "optical"
    assert (info.lanes[0].rx_power_mw, info.flags["rx_los"]) == (1.0189, 0xFF)


def test_unnumbered_single_reading_form():
    info = parse_optical_info(capture("mindcluster_doc_optical_unnumbered_lanes.json"))
    (lane,) = info.lanes
    assert (lane.lane, lane.tx_power_mw, lane.rx_power_mw, lane.tx_bias_ma, info.indexed) == (
        None,
        4.4035,
        1.0189,
        7.936,
        False,
    )
    assert lane.rx_los is True and lane.tx_los is False  # any bit of the mask flags the module
    assert info.thresholds.rx_power_low_mw == 0.1445


def test_dr4_die_shows_two_lanes_with_values():
    info = parse_optical_info(text("optical_get_dr4_die.out"))
    assert [lane.has_readings for lane in info.lanes] == [True, True, False, False]
    assert info.thresholds.temp_low_c == -5.0 and info.medium == "optical"


def test_temperature_words_are_kept_not_guessed():
    info = parse_optical_info(text("optical_get_temp_get_failed.out"))
    assert (info.temperature_c, info.temperature_note, info.present) == (None, "get failed", True)


@pytest.mark.parametrize(
    "stdout, message",
    [
        (text("optical_get_v2_table.out"), "'v2' table form"),
        ("optical info:\ntemperature          : 47 C\n", "present"),
        ("optical info:\npresent              : maybe\n", "present value"),
        ("optical info:\npresent              : present\nRx Power0            : 0.7 dBm\n", "is not a number in mw"),
        ("optical info:\npresent              : present\nRx Power0            : lots mW\n", "is not a number in mw"),
        ("optical info:\npresent              : present\nRx Power8            : 0.7000 mW\n", "at most 8 lanes"),
        ("optical info:\npresent              : present\nRx Los Flag          : zero\n", "hex mask"),
        (
            "optical info:\npresent              : present\nRx Los Flag          : 0x" + "f" * 400 + "\n",
            "wider than a lane mask",
        ),
        (
            "optical info:\npresent              : present\nTx Power             : 1.0000 mW\nTx Power0            : 1.0000 mW\n",
            "mix lane-numbered",
        ),
        ("optical info:\npresent              : present\nsomething odd\n", "unrecognised optical line"),
    ],
)
def test_unexpected_optical_output_is_refused(stdout, message):
    with pytest.raises(UnexpectedOutput, match=message):
        parse_optical_info(stdout)


@pytest.mark.parametrize(
    "fixture, parse, expected",
    [
        ("duplex_full.out", parse_duplex, {"duplex": "full"}),
        ("duplex_unknown.out", parse_duplex, {"duplex": None}),
        ("fec_rs.out", parse_fec, {"fec": "rs"}),
        ("fec_no.out", parse_fec, {"fec": "no"}),
        ("fec_auto.out", parse_fec, {"fec": "auto"}),
    ],
)
def test_port_state_answers(fixture, parse, expected):
    assert parse(text(fixture)) == expected


@pytest.mark.parametrize(
    "parse, stdout",
    [
        (parse_duplex, "Speed: 200000 Mb/s\n"),
        (parse_fec, "fec mode: unknown\n"),
        (parse_fec, "+------+------+\n| port | fec  |\n+------+------+\n| 0    | RS   |\n"),
        (parse_duplex, ""),
    ],
)
def test_unexpected_port_state_output_is_refused(parse, stdout):
    with pytest.raises(UnexpectedOutput):
        parse(stdout)


def test_board_firmware_version():
    board = (FIXTURES / "npu_smi" / "board_910b.out").read_text()
    assert parse_board_firmware(board) == "7.1.0.7.220"
    assert parse_board_firmware(board.replace("7.1.0.7.220", "NA")) is None
    with pytest.raises(UnexpectedOutput):
        parse_board_firmware(board.replace("7.1.0.7.220", "7.1; rm -rf /"))
    with pytest.raises(UnexpectedOutput):
        parse_board_firmware("Health Status : OK\n")


def test_line_names_are_read_whatever_their_padding_case_and_inner_spaces() -> None:
    from ascendprep.facts import optics

    text = "optical info:\npresent              : present\nTX  power0 : 1.5 mW\nrx\tPOWER 0   : 0.5 mW\nVcc High Thres : 3465.00 mV\n"
    text += "".join(f"vendor note {i} : x\n" for i in range(200))  # names not judged are skipped
    info = optics.parse_optical_info(text)
    assert info.present_line is True
    assert [(lane.lane, lane.tx_power_mw, lane.rx_power_mw) for lane in info.lanes] == [(0, 1.5, 0.5)]
    assert info.thresholds.vcc_high_mv == 3465.0
