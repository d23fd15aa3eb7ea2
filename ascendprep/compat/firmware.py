"""Driver <-> firmware compatibility from the ranges the installed packages declare themselves.

The compatibility data names at most one firmware per CANN, but each installed package says what
it accepts (docs/compat-notes.md §2, docs/ascend-reference.md §4.6):

* ``driver/version.info``: ``compatible_version_fw=[7.0.0,7.7.99]``, sometimes several ranges
  (``[6.4.0,6.4.99],[7.0.0,8.9.9]``). Bounds are inclusive; an upper bound also admits its own
  builds (``7.7.99`` admits ``7.7.99.1.2``).
* ``firmware/version.info``: ``compatible_version_drv=[23.0.rc3,23.0.rc3.],[24.1,24.1.]``. The
  notes call these prefix ranges, but the exact semantics are undocumented, and a strict prefix
  reading contradicts the one real sample (docs/ascend-reference.md §4.6: firmware 7.1.0.11.220 of
  package 23.0.7 declares ``[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]`` next to driver 23.0.7). So a
  range whose upper element ends in ``.`` is read at the driver-line level: it admits every
  driver of the same YY.N line as its lower element (``[23.0.0,23.0.0.]`` admits 23.0.7). That
  still catches the case that matters, a driver from another line entirely. An upper element
  without the dot is an ordinary inclusive bound.

A firmware outside the driver's ranges, or a driver outside the firmware's, is an error: the
packages on the host say themselves that they do not go together.
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Tuple

from ascendprep.compat.context import ERROR, WARNING, CompatIssue
from ascendprep.compat.versions import Version, VersionError, parse_version

_RANGE = re.compile(r"\[\s*([^\[\],]+?)\s*,\s*([^\[\],]+?)\s*\]")
_SOURCES = ("host_version_info",)


def parse_ranges(text: str) -> List[Tuple[str, str]]:
    """``[a,b],[c,d]`` -> ``[("a", "b"), ("c", "d")]``; ValueError when anything else is there."""
    stripped = text.strip()
    pairs = _RANGE.findall(stripped)
    leftover = _RANGE.sub("", stripped).replace(",", "").strip()
    if not pairs or leftover:
        raise ValueError(f"expected ranges like [7.0.0,7.7.99], got {text!r}")
    return pairs


def firmware_in_driver_ranges(firmware: Version, compatible_version_fw: str) -> bool:
    """Is ``firmware`` inside any ``[lo,hi]`` of the driver's compatible_version_fw?"""
    for low_text, high_text in parse_ranges(compatible_version_fw):
        low, high = parse_version("firmware", low_text), parse_version("firmware", high_text)
        if low <= firmware and (firmware <= high or high.covers(firmware)):
            return True
    return False


def driver_in_firmware_ranges(driver: Version, compatible_version_drv: str) -> bool:
    """Is ``driver`` inside any range of the firmware's compatible_version_drv?"""
    for low_text, high_text in parse_ranges(compatible_version_drv):
        if high_text.endswith("."):
            if driver.line == _line_of(low_text):
                return True
            continue
        low, high = parse_version("driver", low_text), parse_version("driver", high_text)
        if low <= driver and (driver <= high or high.covers(driver)):
            return True
    return False


def _line_of(text: str) -> Tuple[int, int]:
    """(YY, N) of a driver spelling, including the two-part ``24.1`` the ranges use."""
    parts = text.strip().split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"expected a driver version like 24.1 or 23.0.rc3, got {text!r}")
    return int(parts[0]), int(parts[1])


def check_driver_firmware(
    driver: Optional[str],
    firmware: Optional[str],
    *,
    compatible_version_fw: Optional[str] = None,
    compatible_version_drv: Optional[str] = None,
) -> List[CompatIssue]:
    """Issues (id ``compat.driver_firmware``) for a driver and firmware installed together.

    Pass the raw ``compatible_version_fw`` / ``compatible_version_drv`` values read from the
    host's version.info files; a missing value skips that direction. Unreadable range text or
    versions give a warning, never a pass.
    """
    issues: List[CompatIssue] = []
    if firmware and compatible_version_fw:
        issues += _one_direction(
            "firmware",
            firmware,
            "driver",
            driver,
            compatible_version_fw,
            "compatible_version_fw",
            firmware_in_driver_ranges_text,
        )
    if driver and compatible_version_drv:
        issues += _one_direction(
            "driver",
            driver,
            "firmware",
            firmware,
            compatible_version_drv,
            "compatible_version_drv",
            driver_in_firmware_ranges_text,
        )
    return issues


def firmware_in_driver_ranges_text(firmware: str, ranges: str) -> bool:
    return firmware_in_driver_ranges(parse_version("firmware", firmware), ranges)


def driver_in_firmware_ranges_text(driver: str, ranges: str) -> bool:
    return driver_in_firmware_ranges(parse_version("driver", driver), ranges)


def _one_direction(
    subject_kind: str,
    subject: str,
    owner_kind: str,
    owner: Optional[str],
    ranges: str,
    field: str,
    contains: Callable[[str, str], bool],
) -> List[CompatIssue]:
    owner_label = f"{owner_kind} {owner}" if owner else f"the installed {owner_kind}"
    try:
        inside = contains(subject, ranges)
    except (ValueError, VersionError) as exc:
        return [
            CompatIssue(
                id="compat.driver_firmware",
                severity=WARNING,
                message=f"cannot check {subject_kind} {subject} against {owner_label}'s {field}={ranges}: {exc}",
                fix=f"read {field} in /usr/local/Ascend/{owner_kind}/version.info and compare by hand",
                sources=_SOURCES,
            )
        ]
    if inside:
        return []
    return [
        CompatIssue(
            id="compat.driver_firmware",
            severity=ERROR,
            message=f"{subject_kind} {subject} is outside {owner_label}'s {field}={ranges}",
            fix=f"install the {subject_kind} from the same Ascend HDK release as the {owner_kind}",
            sources=_SOURCES,
        )
    ]
