"""``hccn_tool -g -fec -i N -u U -p P`` on Ascend 950: one port's forward error correction.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-port-fec-information.md``)::

    +-----+------+------+---------+------------------+------------+
    | NPU | UDie | Port | rs_mode | auto_change_mode | itlv_mode  |
    +-----+------+------+---------+------------------+------------+
    | 0   | 0    | 4    | 128 T4  | Static           | Interweave |
    +-----+------+------+---------+------------------+------------+

The 910 parser (:func:`ascendprep.facts.port_state.parse_fec`, ``FEC mode: ...``) refuses it.
"""

from __future__ import annotations

from typing import Tuple

from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.ub_model import UbFec
from ascendprep.facts.ub_table import one_port_row, small_int, split_tables


def parse_fec(stdout: str) -> Tuple[int, int, UbFec]:
    """(udie, port, fec) from the one-row ``-fec`` table."""
    _, tables = split_tables(stdout, "the -fec table (NPU | UDie | Port | rs_mode | auto_change_mode | itlv_mode)")
    if len(tables) != 1:
        raise UnexpectedOutput(f"-fec: expected one table, got {len(tables)}")
    table = tables[0]
    row = one_port_row(table, "-fec")
    value = UbFec(
        rs_mode=row[table.column("rs_mode")],
        auto_change_mode=row[table.column("auto_change_mode")],
        itlv_mode=row[table.column("itlv_mode")],
    )
    return small_int(row[table.column("UDie")], "UDie"), small_int(row[table.column("Port")], "Port"), value
