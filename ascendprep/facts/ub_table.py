"""The ASCII tables the Ascend 950 hccn_tool prints, read strictly.

The 950 tool prints per-port answers as boxed tables (hicann/driver
``docs/en/Ascend_950_HCCN_Tool``: ``-speed``, ``-fec``, ``-link_stat``, ``-dev_info``)::

    +-----+------+------+---------+
    | NPU | UDie | Port | Speed   |
    +-----+------+------+---------+
    | 0   | 0    | 4    | 400 G   |
    +-----+------+------+---------+

A table is a border, a header row, a border, data rows and a closing border; ``-dev_info`` stacks
three of them (one closing border right before the next table's top border), separates groups of
rows with a border, and continues a cell over several rows by leaving the first cells blank. Anything
else inside the box (a row with the wrong number of cells, text between tables) is refused: a
half-read table could give a wrong but plausible value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Tuple

from ascendprep.facts.text import UnexpectedOutput, not_as_expected

#: Rows one table may have (``-dev_info`` lists a few ports and EIDs; ``-link_stat`` at most 10).
MAX_TABLE_ROWS = 256
#: Tables one answer may stack (``-dev_info`` prints three).
MAX_TABLES = 8

_BORDER_RE = re.compile(r"^\+(?:-+\+)+$")


@dataclass(frozen=True)
class Table:
    """One boxed table: its header cells and its data rows (cells stripped, blanks kept as "")."""

    header: Tuple[str, ...]
    rows: Tuple[Tuple[str, ...], ...]

    def column(self, name: str) -> int:
        """The index of the header cell ``name`` (exact); a missing column is refused."""
        try:
            return self.header.index(name)
        except ValueError:
            raise UnexpectedOutput(f"table without a {name!r} column (columns: {', '.join(self.header)})") from None


def _cells(line: str) -> Tuple[str, ...]:
    return tuple(cell.strip() for cell in line[1:-1].split("|"))


def split_tables(stdout: str, expected: str) -> Tuple[List[str], List[Table]]:
    """The lines before the first table and every table, in order.

    ``expected`` words the form in the error when no table is there. Text between or after
    tables, a row whose cell count differs from its header, or a table cut off is refused.
    """
    lines = [line.strip() for line in stdout.splitlines()]
    lines = [line for line in lines if line]
    before: List[str] = []
    index = 0
    while index < len(lines) and not _BORDER_RE.match(lines[index]):
        before.append(lines[index])
        index += 1
    tables: List[Table] = []
    while index < len(lines):
        if not _BORDER_RE.match(lines[index]):
            raise UnexpectedOutput(f"text outside a table: {lines[index][:80]!r}")
        if index + 2 >= len(lines) or not lines[index + 1].startswith("|") or not _BORDER_RE.match(lines[index + 2]):
            raise UnexpectedOutput("a table without a header row between two borders")
        header = _cells(lines[index + 1])
        index += 3
        rows: List[Tuple[str, ...]] = []
        closed = False
        while index < len(lines):
            line = lines[index]
            index += 1
            if _BORDER_RE.match(line):
                # a border followed by a row separates groups of rows (``-dev_info``'s interfaces);
                # followed by another border or by nothing, it closes the table
                if index < len(lines) and not _BORDER_RE.match(lines[index]):
                    continue
                closed = True
                break
            if not (line.startswith("|") and line.endswith("|")):
                raise UnexpectedOutput(f"unrecognised table row {line[:80]!r}")
            cells = _cells(line)
            if len(cells) != len(header):
                raise UnexpectedOutput(f"table row with {len(cells)} cells under {len(header)} columns: {line[:80]!r}")
            rows.append(cells)
            if len(rows) > MAX_TABLE_ROWS:
                raise UnexpectedOutput(f"a table of more than {MAX_TABLE_ROWS} rows")
        if not closed:
            raise UnexpectedOutput("a table cut off before its closing border")
        tables.append(Table(header=header, rows=tuple(rows)))
        if len(tables) > MAX_TABLES:
            raise UnexpectedOutput(f"more than {MAX_TABLES} tables")
    if not tables:
        raise not_as_expected(expected, stdout)
    return before, tables


def small_int(text: str, what: str, limit: int = 1_000_000) -> int:
    """A decimal cell such as a port or die id, refused when it is not one or exceeds ``limit``."""
    if not text.isdigit() or len(text) > 9 or int(text) > limit:
        raise UnexpectedOutput(f"{what} {text[:40]!r} is not a number up to {limit}")
    return int(text)


def lanes(text: str, what: str) -> int:
    """``X4`` → 4 (lane counts as the 950 tool prints them; a UB port has at most 4, docs say)."""
    match = re.fullmatch(r"X(\d{1,2})", text)
    if match is None:
        raise UnexpectedOutput(f"{what} {text[:40]!r} is not a lane count such as X4")
    return int(match.group(1))


def one_port_row(table: Table, what: str) -> Tuple[str, ...]:
    """The single data row of a per-port table (``-speed``, ``-fec``)."""
    if len(table.rows) != 1:
        raise UnexpectedOutput(f"{what}: expected one port row, got {len(table.rows)}")
    return table.rows[0]
