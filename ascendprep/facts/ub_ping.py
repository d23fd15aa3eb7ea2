"""``hccn_tool -t -ub_ping -i N -src_eid E1 -dst_eid E2``: UB reachability between two EIDs.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-the-result-of-a-ub-
ping-from-a-specified-npu-device-to-a-destination-address.md``)::

    device 0 dev  EID ::40:10:0:dfdf:90 to ::60:10:0:dfdf:b0
    recv seq:0,time:0.286000ms
    ...
    6 packets transmitted, 6 received, 0.00% packet loss
    max time 0.295000ms
    min time 0.278000ms
    average time 0.286000ms
    TP95 time 0.295000ms
    Cmd executed successfully!

``-cnt`` is 1..1000 (default 3), and a device runs at most eight UB pings at once (the page's
precautions). No failed ub_ping is documented: a missing summary, loss, or a non-zero exit is a
failed ping with the tool's first line as its reason.
"""

from __future__ import annotations

import re
from typing import Optional

from ascendprep.facts.text import first_line
from ascendprep.facts.ub_model import UbPing

#: UB pings one device may run at once (the vendor page's precautions).
MAX_CONCURRENT_PER_DEVICE = 8
#: Packets per ping; the tool allows 1..1000.
MAX_COUNT = 1000

_SUMMARY_RE = re.compile(
    r"^(\d{1,4}) packets transmitted, (\d{1,4}) received, (\d{1,3}(?:\.\d{1,2})?)% packet loss$", re.MULTILINE
)
_AVERAGE_RE = re.compile(r"^average time (\d{1,9}(?:\.\d{1,9})?)ms$", re.MULTILINE)


def parse_ub_ping(src_eid: str, dst_eid: str, rc: Optional[int], stdout: str, peer: Optional[int] = None) -> UbPing:
    """The result of one ping; never raises (an unreadable answer is a failed ping)."""
    text = "\n".join(line.strip() for line in stdout.splitlines())
    summary = _SUMMARY_RE.search(text)
    if summary is None:
        reason = first_line(stdout) or f"exit status {rc}"
        return UbPing(src_eid=src_eid, dst_eid=dst_eid, ok=False, peer=peer, error=f"no ping summary: {reason}")
    sent, received, loss = int(summary.group(1)), int(summary.group(2)), float(summary.group(3))
    average = _AVERAGE_RE.search(text)
    ok = rc == 0 and sent > 0 and received == sent
    error = None
    if not ok:
        error = f"{sent - received} of {sent} packets lost" if received < sent else f"exit status {rc}"
    return UbPing(
        src_eid=src_eid,
        dst_eid=dst_eid,
        ok=ok,
        peer=peer,
        sent=sent,
        received=received,
        loss_percent=loss,
        avg_ms=float(average.group(1)) if average else None,
        error=error,
    )
