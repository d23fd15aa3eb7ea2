"""``npu-smi info -l`` (the NPU list) and ``npu-smi info -i N -c C -t health``.

Both print ``key : value`` lines with the key padded (reference §4.2, §4.4). The health label
is ``Health Status`` on 910/910B and ``Health`` in the 950 documentation; both are accepted.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ascendprep.facts import NpuSmiDevice, NpuSmiList
from ascendprep.probes.text import UnexpectedOutput, content_lines, first_line, split_colon

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
        raise UnexpectedOutput(f"no 'Total Count' or 'NPU ID' in {first_line(stdout)!r}")
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


def parse_health(stdout: str) -> Tuple[str, Optional[str], Optional[str]]:
    """(health, error code, error information); ``NA`` error fields become None."""
    values: Dict[str, str] = {}
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair is not None:
            values.setdefault(pair[0].lower(), pair[1])
    health = values.get("health status", values.get("health"))
    if not health:
        raise UnexpectedOutput(f"no 'Health Status' or 'Health' in {first_line(stdout)!r}")

    def optional(key: str) -> Optional[str]:
        value = values.get(key, "")
        return None if value.upper() in _NOT_AVAILABLE else value

    return health, optional("error code"), optional("error information")
