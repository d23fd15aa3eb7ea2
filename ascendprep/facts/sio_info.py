"""``npu-smi info -t sio-info -i N`` on Ascend 950: errors on the link between the chip's two dies.

Documented form (hicann/driver ``docs/en/Ascend_950_npu-smi/.../querying-the-sio-status-between-
dies-of-a-device.md``)::

    TX Error Count : 0
    RX Error Count : 0

The query is card level, ``-i`` only: 950's npu-smi takes no ``-c`` (docs/ascend950.md).
"""

from __future__ import annotations

from typing import Dict

from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected, split_colon
from ascendprep.facts.ub_model import SioInfo

_KEYS = {"TX Error Count": "tx", "RX Error Count": "rx"}


def parse_sio_info(stdout: str) -> SioInfo:
    """Both counts; a missing one, another key or a count that is not a number is refused."""
    values: Dict[str, int] = {}
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair is None or pair[0] not in _KEYS:
            raise not_as_expected("'TX Error Count : N' and 'RX Error Count : N'", stdout)
        key, value = pair
        if not value.isdigit() or len(value) > 20:
            raise UnexpectedOutput(f"sio-info: {key} {value[:40]!r} is not a count")
        values[_KEYS[key]] = int(value)
    if set(values) != {"tx", "rx"}:
        raise not_as_expected("'TX Error Count : N' and 'RX Error Count : N'", stdout)
    return SioInfo(tx_errors=values["tx"], rx_errors=values["rx"])
