"""Port state queries: ``hccn_tool -i N -duplex -g`` and ``-fec -g``, and the per-NPU firmware
line of ``npu-smi info -t board -i N``.

Formats (docs/ascend-reference.md §1.4, driver ``tool_ext.c``): ``Duplex: Full`` / ``Half`` /
``Unknown!``; ``fec mode: rs FEC mode`` / ``no FEC mode`` / ``auto FEC mode`` (a newer driver's
other word before ``FEC mode`` is kept as printed, lower-cased); board info (§4.5) prints
``Firmware Version : 7.1.0.7.220`` among its ``key : value`` rows. The Ascend 950 per-port ASCII
tables are refused as an unsupported format, never misread (§4.7).
"""

from __future__ import annotations

import re
import sys
from typing import Dict, Optional

from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected, split_colon

_DUPLEX_RE = re.compile(r"^Duplex:\s*(Full|Half|Unknown!?)\s*$", re.IGNORECASE)
_FEC_RE = re.compile(r"^fec mode:\s*([A-Za-z0-9_-]+) FEC mode\s*$", re.IGNORECASE)
_TABLE_RE = re.compile(r"^\s*[+|]")


def _refuse_table(stdout: str, what: str) -> None:
    if any(_TABLE_RE.match(line) for line in stdout.splitlines()):
        raise UnexpectedOutput(f"a per-port table (the Ascend 950 form of {what}) is not a supported format")


def parse_duplex(stdout: str) -> Dict[str, Optional[str]]:
    """``Duplex: Full`` → ``{"duplex": "full"}``; ``Duplex: Unknown!`` (link down) → None."""
    _refuse_table(stdout, "-duplex -g")
    for line in content_lines(stdout):
        match = _DUPLEX_RE.match(line)
        if match:
            word = match.group(1).rstrip("!").lower()
            return {"duplex": None if word == "unknown" else sys.intern(word)}
    raise not_as_expected("'Duplex: Full|Half|Unknown!'", stdout)


def parse_fec(stdout: str) -> Dict[str, Optional[str]]:
    """``fec mode: rs FEC mode`` → ``{"fec": "rs"}`` (``no``, ``auto``, or a newer word as printed)."""
    _refuse_table(stdout, "-fec -g")
    for line in content_lines(stdout):
        match = _FEC_RE.match(line)
        if match:
            return {"fec": sys.intern(match.group(1).lower())}
    raise not_as_expected("'fec mode: rs|no|auto FEC mode'", stdout)


_FIRMWARE_VERSION_RE = re.compile(r"[0-9A-Za-z._-]{1,64}")


def parse_board_firmware(stdout: str) -> Optional[str]:
    """The ``Firmware Version`` of ``npu-smi info -t board -i N``; None when it says ``NA``."""
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair and pair[0].lower() == "firmware version":
            value = pair[1]
            if not value or value.upper() == "NA":
                return None
            if not _FIRMWARE_VERSION_RE.fullmatch(value):
                raise UnexpectedOutput(f"firmware version {value!r} is not a version")
            return sys.intern(value)
    raise not_as_expected("'Firmware Version : <version>'", stdout)
