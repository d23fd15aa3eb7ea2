"""``hccn_tool -g -speed -i N -u U -p P`` on Ascend 950: one port's speed and lane width.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-the-port-rate.md``)::

    +-----+------+------+---------+-----+-------+-----------+
    | NPU | UDie | Port | Speed   | Cap | Width | Status    |
    +-----+------+------+---------+-----+-------+-----------+
    | 0   | 0    | 4    | 400 G   | X4  | X4    | normal    |
    +-----+------+------+---------+-----+-------+-----------+

``Speed`` is ``unknown`` while the link is down; ``Cap`` is the most lanes the port has (4 for a
UB port), ``Width`` the lanes in use, ``Status`` ``normal`` or ``downgraded`` (lanes lost). The
910 parser (:func:`ascendprep.facts.hccn.parse_speed`, ``Speed: N Mb/s``) refuses this form.
"""

from __future__ import annotations

import re
from typing import Tuple

from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.ub_model import UbSpeed
from ascendprep.facts.ub_table import lanes, one_port_row, small_int, split_tables

STATUSES = ("normal", "downgraded")
_SPEED_RE = re.compile(r"^(\d{1,5})\s*G$")


def parse_speed(stdout: str) -> Tuple[int, int, UbSpeed]:
    """(udie, port, speed) from the one-row ``-speed`` table."""
    _, tables = split_tables(stdout, "the -speed table (NPU | UDie | Port | Speed | Cap | Width | Status)")
    if len(tables) != 1:
        raise UnexpectedOutput(f"-speed: expected one table, got {len(tables)}")
    table = tables[0]
    row = one_port_row(table, "-speed")
    speed_text = row[table.column("Speed")]
    if speed_text.lower() == "unknown":
        speed = None
    else:
        match = _SPEED_RE.match(speed_text)
        if match is None:
            raise UnexpectedOutput(f"-speed: speed {speed_text[:40]!r} is not '<n> G' or 'unknown'")
        speed = int(match.group(1))
    status = row[table.column("Status")].lower()
    if status not in STATUSES:
        raise UnexpectedOutput(f"-speed: status {status[:40]!r} is not one of {', '.join(STATUSES)}")
    value = UbSpeed(
        speed_gbps=speed,
        cap_lanes=lanes(row[table.column("Cap")], "-speed Cap"),
        width_lanes=lanes(row[table.column("Width")], "-speed Width"),
        status=status,
    )
    return small_int(row[table.column("UDie")], "UDie"), small_int(row[table.column("Port")], "Port"), value
