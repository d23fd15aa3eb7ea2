"""Driver <-> firmware from the ranges the installed packages declare (version.info)."""

from __future__ import annotations

import pytest

from ascendprep.compat import check_driver_firmware
from ascendprep.compat.firmware import parse_ranges


def test_the_reference_sample_pair_is_compatible() -> None:
    # ascend-reference.md §4.6: driver 23.0.7 next to firmware 7.1.0.11.220 (package 23.0.7).
    assert (
        check_driver_firmware(
            "23.0.7",
            "7.1.0.11.220",
            compatible_version_fw="[7.0.0,7.1.99]",
            compatible_version_drv="[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]",
        )
        == []
    )


def test_firmware_outside_the_drivers_ranges_is_an_error() -> None:
    (issue,) = check_driver_firmware("24.1.rc2", "7.5.0.1.129", compatible_version_fw="[6.4.0,6.4.99],[7.0.0,7.1.99]")
    assert issue.id == "compat.driver_firmware" and issue.severity == "error"
    assert "7.5.0.1.129" in issue.message and "24.1.rc2" in issue.message
    assert issue.sources == ("host_version_info",)


@pytest.mark.parametrize("firmware", ["6.4.0.4.220", "7.0.0.5.242", "7.7.0.1.231", "7.7.99.1.2"])
def test_firmware_inside_any_range_passes(firmware: str) -> None:
    assert check_driver_firmware("25.0.rc1", firmware, compatible_version_fw="[6.4.0,6.4.99],[7.0.0,7.7.99]") == []


def test_a_driver_of_a_line_the_firmware_does_not_list_is_an_error() -> None:
    (issue,) = check_driver_firmware(
        "25.2.0", "7.7.0.1.231", compatible_version_drv="[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]"
    )
    assert issue.severity == "error" and "25.2.0" in issue.message
    assert check_driver_firmware("25.0.rc1.1", "7.7.0.1.231", compatible_version_drv="[24.1,24.1.],[25.0,25.0.]") == []


def test_plain_upper_bounds_are_inclusive() -> None:
    assert check_driver_firmware("24.1.rc3", None, compatible_version_drv="[24.1.rc1,24.1.rc3]") == []
    assert check_driver_firmware("24.1.0", None, compatible_version_drv="[24.1.rc1,24.1.rc3]")[0].severity == "error"


def test_unreadable_ranges_warn_instead_of_passing() -> None:
    (issue,) = check_driver_firmware("24.1.rc2", "7.5.0.1.129", compatible_version_fw="7.0.0-7.7.99")
    assert issue.severity == "warning" and "cannot check" in issue.message


def test_missing_fields_skip_that_direction() -> None:
    assert check_driver_firmware("24.1.rc2", "7.5.0.1.129") == []
    assert check_driver_firmware(None, "7.5.0.1.129", compatible_version_drv="[23.0.0,23.0.0.]") == []


def test_parse_ranges() -> None:
    assert parse_ranges("[6.4.0,6.4.99], [7.0.0,8.9.9]") == [("6.4.0", "6.4.99"), ("7.0.0", "8.9.9")]
    for bad in ["", "[7.0.0]", "[7.0.0,7.1.99] junk", "7.0.0,7.1.99"]:
        with pytest.raises(ValueError):
            parse_ranges(bad)
