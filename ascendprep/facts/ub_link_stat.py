"""``hccn_tool -g -link_stat -i N -u U -p P`` on Ascend 950: one port's link flaps.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-the-historical-link-up-
and-down-status-of-a-port.md``)::

    link up count :    2
    link down count :  2
    +-----+------+------+-------------+-------------------------+
    | NPU | UDie | Port | Link_Status | Time_Stamp              |
    +-----+------+------+-------------+-------------------------+
    |  0  |  0   |  4   |  LINK_UP    | Mon Feb 9 21:45:51 2026 |
    |  0  |  0   |  4   |  LINK_DOWN  | Mon Feb 9 21:45:47 2026 |
    +-----+------+------+-------------+-------------------------+

The counts are since the driver loaded; the table holds the latest changes, newest first. The 910
parser (:func:`ascendprep.facts.hccn.parse_link_stat`) refuses this form.
"""

from __future__ import annotations

import re
import sys
from typing import Dict, List

from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.ub_model import UbLinkEvent, UbLinkStat
from ascendprep.facts.ub_table import split_tables

STATES = ("LINK_UP", "LINK_DOWN")
_COUNT_RE = re.compile(r"^link (up|down) count\s*:\s*(\d{1,12})$", re.IGNORECASE)


def parse_link_stat(stdout: str) -> UbLinkStat:
    """The counts and the history; a port that never changed state prints an empty table."""
    before, tables = split_tables(stdout, "'link up count : N', 'link down count : N' and the Link_Status table")
    counts: Dict[str, int] = {}
    for line in before:
        match = _COUNT_RE.match(line)
        if match is None:
            raise UnexpectedOutput(f"-link_stat: unrecognised line {line[:80]!r}")
        counts[match.group(1).lower()] = int(match.group(2))
    if set(counts) != {"up", "down"}:
        raise UnexpectedOutput("-link_stat: expected both 'link up count' and 'link down count'")
    if len(tables) != 1:
        raise UnexpectedOutput(f"-link_stat: expected one table, got {len(tables)}")
    table = tables[0]
    state_col, time_col = table.column("Link_Status"), table.column("Time_Stamp")
    events: List[UbLinkEvent] = []
    for row in table.rows:
        state = row[state_col].upper()
        if state not in STATES:
            raise UnexpectedOutput(f"-link_stat: state {row[state_col][:40]!r} is not LINK_UP or LINK_DOWN")
        events.append(UbLinkEvent(state=sys.intern(state), time=row[time_col]))
    return UbLinkStat(up_count=counts["up"], down_count=counts["down"], events=tuple(events))
