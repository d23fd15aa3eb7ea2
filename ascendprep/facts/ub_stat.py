"""``hccn_tool -g -stat -i N -u U -p P`` on Ascend 950: one UB port's packet and error counters.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-port-statistics.md``):
``packet statistics:``, ``port_id: 4``, ``is_uboe_port: 0`` then ~40 ``name: value`` counters,
among them the ones verify judges: ``crc_error_sum`` (link-layer CRC errors), ``retry_req_sum``
(link-level retransmission requests), ``drop_ind_cnt_rx``/``_tx`` (packets dropped),
``err_ind_cnt_rx``/``_tx``, ``route_err_cnt_rx`` and ``length_err_cnt_rx``/``_tx``.

The lines are the 910 ``-stat -g`` layout (``name:value``), so the 910 reader
(:func:`ascendprep.facts.port_stats.parse_stat`) reads the text; what makes it a UB answer is
``port_id`` and the UB counters, which this parser requires.
"""

from __future__ import annotations

from typing import Dict

from ascendprep.facts.port_stats import parse_stat
from ascendprep.facts.text import UnexpectedOutput

#: Counters every documented UB ``-stat`` answer has; without them it is not a UB port's answer.
REQUIRED = ("port_id", "crc_error_sum", "retry_req_sum", "drop_ind_cnt_rx", "drop_ind_cnt_tx")


def parse_ub_stat(stdout: str) -> Dict[str, int]:
    """{counter: value} of one UB port, ``port_id`` and ``is_uboe_port`` included."""
    counters = parse_stat(stdout)
    missing = [name for name in REQUIRED if name not in counters]
    if missing:
        raise UnexpectedOutput(f"-stat: not a UB port's counters (no {', '.join(missing)})")
    return counters
