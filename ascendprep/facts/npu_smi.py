"""``npu-smi info -l`` (the NPU list), ``npu-smi info -m`` (the chip map) and ``npu-smi info -i N -c C -t health``.

Both print ``key : value`` lines with the key padded (docs/ascend-reference.md §4.2, §4.4). The health label
is ``Health Status`` on 910/910B and ``Health`` in the 950 documentation; both are accepted.
An alarm may carry several codes (``Error Code : A4025021 8C03A000 8C084E00``) and an ``Error
Information`` that goes on over lines whose key is empty (``  : node type=...``, docs/ascend-reference.md §4.7):
those continuation lines belong to the field above them and are kept, joined with ``"; "``.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ascendprep.facts.model import NpuSmiChip, NpuSmiDevice, NpuSmiList
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected, split_colon

_NOT_AVAILABLE = ("NA", "N/A", "")


def _int(value: str, what: str) -> int:
    if not value.isdigit():
        raise UnexpectedOutput(f"{what} {value!r} is not a number")
    return int(value)


def parse_list(stdout: str) -> NpuSmiList:
    """``Total Count : 8`` then one ``NPU ID : n`` block per NPU (``Chip Count`` 2 on A3)."""
    total: Optional[int] = None
    blocks: List[Dict[str, str]] = []
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair is None:
            continue
        key, value = pair
        key = key.lower()
        if key == "total count":
            total = _int(value, "Total Count")
        elif key == "npu id":
            blocks.append({"npu id": value})
        elif blocks:
            blocks[-1][key] = value
    if total is None and not blocks:
        raise not_as_expected("'Total Count : <n>' or 'NPU ID : <n>' lines", stdout)
    devices = tuple(
        NpuSmiDevice(
            npu_id=_int(block["npu id"], "NPU ID"),
            chip_count=_int(block.get("chip count", "1"), "Chip Count"),
            product_name=block.get("product name") or None,
            serial_number=block.get("serial number") or None,
        )
        for block in blocks
    )
    return NpuSmiList(total_count=total, devices=devices)


#: ``npu-smi info -m``'s columns, by header (both forms: docs/ascend-reference.md §4.3 for
#: 910/910B, hicann/driver ``docs/en/Ascend_950_npu-smi/.../querying-the-device-mapping-information.md``
#: for the 950).
_MAP_COLUMNS = {
    "npu id": "npu_id",
    "slot id": "slot_id",
    "chip id": "chip_id",
    "chip logic id": "chip_logic_id",
    "chip phy-id": "chip_phy_id",
    "chip name": "chip_name",
}


def _map_id(value: str, what: str, optional: bool) -> Optional[int]:
    if optional and value == "-":
        return None
    if not (value.isdigit() or (value.startswith("-") and value[1:].isdigit())):
        raise UnexpectedOutput(f"{what} {value!r} is not a number")
    return int(value)


def parse_map(stdout: str) -> Tuple[NpuSmiChip, ...]:
    """The rows of ``npu-smi info -m``: a header of columns two or more spaces apart, then one
    row per chip whose last column, the chip name, may hold spaces (``Ascend 910B3``)."""
    lines = [line.rstrip() for line in content_lines(stdout) if line.strip()]
    if not lines:
        raise not_as_expected("a header 'NPU ID  Chip ID ... Chip Name' and one row per chip", stdout)
    header = [cell.strip().lower() for cell in re.split(r"\s{2,}", lines[0].strip())]
    if header[:1] != ["npu id"] or header[-1:] != ["chip name"] or any(cell not in _MAP_COLUMNS for cell in header):
        raise not_as_expected("a header 'NPU ID  Chip ID ... Chip Name'", stdout)
    fields = [_MAP_COLUMNS[cell] for cell in header]
    chips = []
    for line in lines[1:]:
        cells = line.split(None, len(fields) - 1)
        if len(cells) != len(fields):
            raise UnexpectedOutput(f"row {line.strip()[:80]!r} has not the {len(fields)} columns of the header")
        row = dict(zip(fields, cells))
        values = {
            key: _map_id(value, key.replace("_", " "), key == "chip_logic_id")
            for key, value in row.items()
            if key != "chip_name"
        }
        chips.append(NpuSmiChip(chip_name=row["chip_name"].strip(), **values))  # type: ignore[arg-type]
    return tuple(chips)


#: Joins the continuation lines of a multi-line field (``Error Information``).
CONTINUATION_SEPARATOR = "; "


def parse_health(stdout: str) -> Tuple[str, Optional[str], Optional[str]]:
    """(health, error code, error information); ``NA`` error fields become None.

    Several codes stay one space-separated string, as printed; continuation lines (empty key)
    are appended to the field they follow, so the whole diagnosis survives.
    """
    values: Dict[str, str] = {}
    last_key: Optional[str] = None
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair is None:
            continue
        key, value = pair[0].lower(), pair[1]
        if not key:
            if last_key is not None and value:
                values[last_key] = f"{values[last_key]}{CONTINUATION_SEPARATOR}{value}" if values[last_key] else value
            continue
        if key in values:
            last_key = None  # a repeated key keeps its first value; its continuations go with it
            continue
        values[key] = value
        last_key = key
    health = values.get("health status", values.get("health"))
    if not health:
        raise not_as_expected("'Health Status : <state>' (or 'Health : <state>')", stdout)

    def optional(key: str) -> Optional[str]:
        value = values.get(key, "")
        return None if value.upper() in _NOT_AVAILABLE else value

    return health, optional("error code"), optional("error information")
