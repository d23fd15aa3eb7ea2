"""Turn a section that did not yield a value into a :class:`ProbeError` with a readable message.

hccn_tool collapses unrelated failures onto the same exit status (docs/ascend-reference.md §1.2), so the
kind is decided from the text where the text is specific, and from the status otherwise.
"""

from __future__ import annotations

import re
from typing import Optional

from ascendprep.facts.model import ProbeError
from ascendprep.facts.sections import NOT_FOUND_RC, Section
from ascendprep.facts.text import first_line

BUSY_TEXT = "hccn_tool is busy"
UNSUPPORTED_TEXT = "not supported on this product"
NO_SUCH_FILE_TEXT = "no such file or directory"
#: What the scripts' ap_hccn says for calls it skipped after hccn_tool hung.
NOT_RUN_TEXT = "not run: hccn_tool hung earlier"

#: npu-smi's DCMI start-up failures, e.g. ``dcmi module initialize failed. ret is -8005`` or
#: ``dcmi model initialized failed, because the device is used. ret is -8020`` (often after a
#: ``DrvMngGetConsoleLogLevel failed.`` line that says nothing useful).
_DCMI_RET_RE = re.compile(r"ret is (-?\d{1,6})")
#: What the common DCMI codes mean for the user (public troubleshooting notes; -8005 is
#: DCMI_ERR_CODE_INNER_ERR in the DCMI headers).
DCMI_HINTS = {
    "-8005": "the driver's management interface did not start: driver not loaded or not matching the kernel, or no access to /dev/davinci*",
    "-8020": "the NPUs are held by another container or process (DCMI is exclusive)",
}


def dcmi_failure(text: str) -> Optional[str]:
    """The DCMI failure line of npu-smi's output with what its code means, or None.

    Line by line with plain substring tests first, so a hostile megabyte of output costs one pass;
    most answers (every healthy npu-smi read) hold no "dcmi " at all and are passed at once.
    """
    if "dcmi " not in text.lower():  # lower-casing is per character: no line would hold it either
        return None
    for raw in text.splitlines():
        lowered = raw.lower()
        if "dcmi " not in lowered or "initiali" not in lowered or "fail" not in lowered:
            continue
        match = _DCMI_RET_RE.search(raw)
        if match is None:
            continue
        line = first_line(raw)
        hint = DCMI_HINTS.get(match.group(1))
        return f"{line} ({hint})" if hint else line
    return None


#: The probe error kind of a tool output the node-side script cut (see probes/shell.py ap_run).
OVER_CAP_KIND = "over_cap"


def size_text(count: int) -> str:
    """``256 KB`` for whole KiB, else ``100 bytes``: how messages name a cap."""
    return f"{count // 1024} KB" if count >= 1024 and count % 1024 == 0 else f"{count} bytes"


def over_cap_error(section: Section, probe: str, what: str, npu: Optional[int] = None) -> Optional[ProbeError]:
    """The error of a section whose output the node cut (``over=`` attribute), else None.

    A cut output is never parsed: half a table could read as a wrong but plausible value.
    """
    streams = section.attrs.get("over")
    if not streams:
        return None
    cap = section.int_attr("cap")
    limit = size_text(cap) if cap else "the cap"
    where = "" if streams == "stdout" else f" ({streams.replace('+', ' and ')})"
    return ProbeError(
        probe=probe, kind=OVER_CAP_KIND, message=f"could not read {what}: output over {limit}{where}", npu=npu
    )


def classify_failure(
    section: Section, probe: str, what: str, npu: Optional[int] = None, timeout_s: Optional[int] = None
) -> ProbeError:
    """Why ``what`` (e.g. ``hccn_tool -i 3 -ip -g``) gave no value, as a ProbeError."""

    def error(kind: str, message: str) -> ProbeError:
        return ProbeError(probe=probe, kind=kind, message=message, npu=npu)

    text = section.text.lower()
    if section.rc is None:
        return error("error", f"{what}: output ended inside this probe (the script was cut off)")
    if section.timed_out and NOT_RUN_TEXT in section.stderr:
        return error("timeout", f"{what}: {first_line(section.stderr)}")
    if section.timed_out:
        limit = f" after {timeout_s}s" if timeout_s else ""
        return error("timeout", f"{what} timed out{limit} and was killed")
    if section.rc == NOT_FOUND_RC:
        return error("missing", first_line(section.stderr) or f"{what}: command not found")
    if UNSUPPORTED_TEXT in text:
        return error("unsupported", f"{what}: {first_line(section.text)}")
    if BUSY_TEXT in text:
        return error("error", f"{what}: hccn_tool was still busy after {section.tries} tries")
    if NO_SUCH_FILE_TEXT in text:
        return error("missing", first_line(section.stderr) or f"{what}: no such file")
    dcmi = dcmi_failure(section.text)
    if dcmi is not None:
        return error("error", f"{what} failed: {dcmi}")
    detail = first_line(section.stderr) or first_line(section.stdout) or "no output"
    return error("error", f"{what} exited with status {section.rc}: {detail}")
