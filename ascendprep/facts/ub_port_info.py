"""``hccn_tool -g -port_info -i N -u U -p P`` on Ascend 950: one UB port's link and lane state.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-the-port-status.md``):
``port_id: 0x4``, then a ``UB PORT LINK INFO`` block and a ``UB DLPHY INFO`` block of
``key: value`` lines between ``=====`` banners. What verify reads: ``lane_num`` (the lanes the port
is configured for, ``X4``), ``cur_tx_lane_num``/``cur_rx_lane_num`` (the lanes trained now: fewer
is a lane downgrade), ``lstm_state`` (``LINK_ACTIVE`` when up), ``port_link`` and
``link_down_err`` (the last link-down reason code). Some keys (``fec``, ``sds_rate``,
``port_mode``) appear in both blocks with different meanings; only the first block's
``port_link`` and ``lane_num`` and the second's lane and state keys are read.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected
from ascendprep.facts.ub_model import UbPortInfo
from ascendprep.facts.ub_table import lanes

LINK_BLOCK, DLPHY_BLOCK = "UB PORT LINK INFO", "UB DLPHY INFO"
#: Lines one answer may have (the documented one has ~40).
MAX_LINES = 256
_BANNER_RE = re.compile(r"^=+\s*([A-Z][A-Z ]+?)\s*=+$")
_LINE_RE = re.compile(r"^([a-z][a-z0-9_]{0,63})\s*:\s*(.*)$")


def parse_port_info(stdout: str) -> UbPortInfo:
    """The lane and link fields; an answer without the two documented blocks is refused."""
    lines = list(content_lines(stdout))
    if not lines or not lines[0].startswith("port_id"):
        raise not_as_expected("'port_id: 0x<n>' then the UB PORT LINK INFO and UB DLPHY INFO blocks", stdout)
    if len(lines) > MAX_LINES:
        raise UnexpectedOutput(f"-port_info: more than {MAX_LINES} lines")
    blocks: Dict[str, Dict[str, str]] = {}
    current: Optional[Dict[str, str]] = None
    for line in lines[1:]:
        banner = _BANNER_RE.match(line)
        if banner:
            current = blocks.setdefault(banner.group(1), {})
            continue
        match = _LINE_RE.match(line)
        if match is None or current is None:
            raise UnexpectedOutput(f"-port_info: unrecognised line {line[:80]!r}")
        current.setdefault(match.group(1), match.group(2).strip())
    if LINK_BLOCK not in blocks or DLPHY_BLOCK not in blocks:
        raise UnexpectedOutput(f"-port_info: expected the {LINK_BLOCK} and {DLPHY_BLOCK} blocks")
    link, phy = blocks[LINK_BLOCK], blocks[DLPHY_BLOCK]

    def lane_field(block: Dict[str, str], key: str) -> Optional[int]:
        return lanes(block[key], f"-port_info {key}") if key in block else None

    return UbPortInfo(
        lane_num=lane_field(link, "lane_num"),
        cur_tx_lane_num=lane_field(phy, "cur_tx_lane_num"),
        cur_rx_lane_num=lane_field(phy, "cur_rx_lane_num"),
        lstm_state=phy.get("lstm_state"),
        port_link=link.get("port_link"),
        link_down_err=link.get("link_down_err"),
    )
