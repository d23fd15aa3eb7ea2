"""NPU health event codes: each mapped to the vendor's level and what to do; unknown ones shown, never dropped."""

from __future__ import annotations

import pytest

from ascendprep.base.findings import Severity
from ascendprep.verify.checks import health_codes
from ascendprep.verify.checks.health_codes import HealthCodesError, decode, parse_table, severity_of, worst


def test_the_packaged_table_covers_every_level_with_sourced_codes() -> None:
    table = health_codes.table()
    assert len(table.codes) > 700
    assert {level for level, _ in table.codes.values()} == set(health_codes.LEVEL_ORDER)
    assert table.codes["81078603"] == ("NotHandle", "Network port link status change (Up >Down)")


def test_a_known_code_says_its_level_cause_and_action_for_that_chip() -> None:
    (meaning,) = decode("80E18402", npu=3, chip=0)
    assert (meaning.code, meaning.level, meaning.severity) == ("80E18402", "SeparateNPU", Severity.ERROR)
    assert "multi-bit ECC" in (meaning.cause or "")
    assert meaning.action.startswith("isolate the NPU")
    (reset,) = decode("8C03A000", npu=5, chip=1)
    assert "npu-smi set -t reset -i 5 -c 1" in reset.action


def test_several_codes_are_all_kept_and_the_worst_decides() -> None:
    meanings = decode("A4025021 8C03A000 8C084E00")
    assert [m.level for m in meanings] == ["NotHandle", "RestartNPU", "FreeRestartNPU"]
    assert worst(meanings).code == "8C03A000"  # type: ignore[union-attr]


def test_an_unknown_hex_code_is_shown_as_unknown() -> None:
    (meaning,) = decode("8FFF0001")
    assert (meaning.code, meaning.level, meaning.severity) == ("8FFF0001", "unknown", Severity.ERROR)
    assert meaning.to_dict() == {"code": "8FFF0001", "level": "unknown", "action": meaning.action}


def test_a_decimal_code_is_read_as_the_driver_prints_undescribed_codes() -> None:
    (known,) = decode("2164753925")  # 0x81078605
    assert (known.code, known.level, known.printed) == ("81078605", "SubHealth", "2164753925")
    assert known.to_dict()["printed"] == "2164753925"
    (unknown,) = decode("2415919105")  # 0x90000001
    assert (unknown.code, unknown.level) == ("90000001", "unknown")


def test_a_word_that_is_no_code_is_kept_verbatim() -> None:
    meanings = decode("80E18402 bogus!")
    assert [(m.printed, m.code, m.level) for m in meanings] == [
        ("80E18402", "80E18402", "SeparateNPU"),
        ("bogus!", None, "unknown"),
    ]


def test_too_many_codes_are_named_not_silently_cut() -> None:
    meanings = decode(" ".join(["80E18402"] * 40))
    assert len(meanings) == health_codes.MAX_CODES + 1 and meanings[-1].printed == "(+8 more)"


@pytest.mark.parametrize(
    "health, codes, severity",
    [
        ("Warning", "81078605", Severity.WARNING),
        ("Alarm", "A4025021", Severity.WARNING),
        ("Alarm", "A4025021 8C03A000", Severity.ERROR),
        ("Critical", "81078605", Severity.ERROR),
        ("Alarm", None, Severity.ERROR),
        ("Warning", "81078605 8FFF0001", Severity.ERROR),
    ],
)
def test_severity_of_a_not_ok_health(health: str, codes: str, severity: Severity) -> None:
    assert severity_of(health, decode(codes)) is severity


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("codes: {}", "schema_version"),
        ("schema_version: 1\nlevels: {}\ncodes: {}", "levels.NotHandle"),
    ],
)
def test_a_malformed_table_is_refused(text: str, fragment: str) -> None:
    with pytest.raises(HealthCodesError, match=fragment):
        parse_table(text)


def test_a_code_with_an_unknown_level_is_refused() -> None:
    text = health_codes.resources.files("ascendprep").joinpath("data/health_codes.yaml").read_text()
    with pytest.raises(HealthCodesError, match="codes.ABC: level"):
        parse_table(text + '  "ABC": {level: Reboot}\n')
    with pytest.raises(HealthCodesError, match="not upper-case hex"):
        parse_table(text + '  "0xabc": {level: NotHandle}\n')
