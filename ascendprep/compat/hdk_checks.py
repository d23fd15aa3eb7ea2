"""Checks of CANN against the NPU driver (Ascend HDK) and firmware, from the ``cann_hdk`` table.

Sources differ in strength (see ``cann_hdk_official_sources`` in compat.yaml): a release table
lists every HDK a CANN supports, so a driver older than all of them is an error; the deployer's
"required NPU" field and the docs install page name one recommended version, so anything else
is only "unknown". Firmware has no published minimum anywhere, so it never yields an error here;
the driver's own ``compatible_version_fw`` (see ``firmware.py``) is the stronger check.
"""

from __future__ import annotations

from typing import List

from ascendprep.compat.context import ERROR, WARNING, CompatIssue, StackContext, listing, older_than
from ascendprep.compat.versions import Version


def cann_driver(ctx: StackContext) -> List[CompatIssue]:
    """The NPU driver (Ascend HDK version) against what the data names for this CANN."""
    if "cann" not in ctx.stack or "driver" not in ctx.stack:
        return []
    cann, driver = ctx.stack["cann"], ctx.stack["driver"]
    row = ctx.hdk_row(cann)
    if row is None:
        return [
            CompatIssue(
                id="compat.cann_driver",
                severity=WARNING,
                message=f"the data has no NPU driver (Ascend HDK) pairing for CANN {cann}; driver {driver} is unverified",
                fix=f"check the CANN {cann} release notes for its Ascend HDK version",
                sources=(),
            )
        ]
    named: List[Version] = list(row.hdk) + [v for _, v in row.hdk_by_product]
    if row.deployer_required_npu is not None:
        named.append(row.deployer_required_npu)
    named += [page.driver for _, page in ctx.pages(row) if page.driver is not None]
    if row.npu_package_version is not None:
        named.append(row.npu_package_version)
    if any(entry.covers(driver) for entry in named):
        return []

    official = bool(row.hdk) and bool(set(row.sources) & set(ctx.data.cann_hdk_official_sources))
    newest = max(row.hdk) if row.hdk else (max(named) if named else None)
    fix = (
        f"install Ascend HDK {newest} (driver and firmware) for CANN {row.cann}"
        if newest is not None
        else f"check the CANN {row.cann} release notes for its Ascend HDK version"
    )
    if official and all(older_than(driver, entry) for entry in row.hdk):
        return [
            CompatIssue(
                id="compat.cann_driver",
                severity=ERROR,
                message=f"NPU driver {driver} is older than every Ascend HDK listed for CANN {row.cann} ({listing(row.hdk)})",
                fix=fix,
                sources=row.sources,
            )
        ]
    strength = "the release table" if official else "the data (not a full compatibility table)"
    return [
        CompatIssue(
            id="compat.cann_driver",
            severity=WARNING,
            message=(
                f"NPU driver {driver} is not among the drivers {strength} names for CANN {row.cann} "
                f"({listing(named) if named else 'none'}); compatibility is unknown"
            ),
            fix=fix,
            sources=row.sources,
        )
    ]


def cann_firmware(ctx: StackContext) -> List[CompatIssue]:
    """Firmware against the docs install page, the only per-CANN firmware source there is."""
    if "cann" not in ctx.stack or "firmware" not in ctx.stack:
        return []
    cann, firmware = ctx.stack["cann"], ctx.stack["firmware"]
    row = ctx.hdk_row(cann)
    pages = [(chip, page) for chip, page in ctx.pages(row) if page.firmware is not None] if row else []
    if row is None or not pages:
        chip_note = f" and chip {ctx.chip}" if ctx.chip else ""
        return [
            CompatIssue(
                id="compat.cann_firmware",
                severity=WARNING,
                message=f"the data names no NPU firmware for CANN {cann}{chip_note}; firmware {firmware} is unverified",
                fix="check that the firmware lies in compatible_version_fw of /usr/local/Ascend/driver/version.info",
                sources=row.sources if row else (),
            )
        ]
    if any(page.firmware == firmware for _, page in pages):
        return []
    named = listing(f"{page.firmware} ({chip})" for chip, page in pages)
    return [
        CompatIssue(
            id="compat.cann_firmware",
            severity=WARNING,
            message=(
                f"NPU firmware {firmware} is not the firmware the Ascend docs name for CANN {row.cann} "
                f"({named}); the docs give one version, not a range, so compatibility is unknown"
            ),
            fix=f"install firmware {pages[0][1].firmware}, or confirm {firmware} is in the driver's compatible_version_fw",
            sources=row.sources,
        )
    ]


def chip_minimum(ctx: StackContext) -> List[CompatIssue]:
    """CANN and the NPU driver against the oldest the product runs on (``chip_minimums``): the
    Atlas 350 (Ascend 950PR) needs CANN 9.0.0 (its operators, HCCL and runtime) and the 25.7
    Ascend HDK line or newer; anything older predates the card."""
    minimum = ctx.data.chip_minimums.get(ctx.chip or "")
    if minimum is None:
        return []
    issues = []
    cann = ctx.stack.get("cann")
    if cann is not None and older_than(cann, minimum.cann):
        issues.append(
            CompatIssue(
                id="compat.chip_cann",
                severity=ERROR,
                message=f"CANN {cann} predates the {minimum.name}: it needs CANN {minimum.cann} or newer",
                fix=f"install CANN {minimum.cann} or newer (with the product's operator package)",
                sources=minimum.sources,
            )
        )
    driver = ctx.stack.get("driver")
    if driver is not None and older_than(driver, minimum.driver):
        issues.append(
            CompatIssue(
                id="compat.chip_driver",
                severity=ERROR,
                message=f"NPU driver {driver} predates the {minimum.name}: its Ascend HDK line starts at {minimum.driver}",
                fix=f"install the {minimum.name}'s Ascend HDK (driver and firmware), {minimum.driver} or newer",
                sources=minimum.sources,
            )
        )
    return issues
