"""``hccn_tool -g -ub_connect -i N`` on Ascend 950: the device's UB interconnect state.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-interconnect-or-
disconnection-status-of-npu-devices.md``)::

    link status : PARTIAL LINK
    port 4 : UP
    port 5 : DOWN
    port 6 : PARTIAL UP

``link status`` is ``UP`` (all valid ports up), ``DOWN`` (all down, or no valid port: a single
card) or ``PARTIAL LINK`` (some up). A port is ``UP``, ``DOWN`` or ``PARTIAL UP``, the last
printed only when the port's lanes are reduced. Only the valid ports are listed: 2-card
interconnect uses ports 4, 5, 6 and 8, 4-card interconnect ports 4, 5 and 6 (die 0).
"""

from __future__ import annotations

import re
import sys
from typing import Dict

from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected
from ascendprep.facts.ub_model import LINK_DOWN, LINK_PARTIAL, LINK_UP, PORT_DOWN, PORT_PARTIAL_UP, PORT_UP, UbConnect

#: A die has 9 physical ports (ids 0..8 on the Atlas 350); more lines than this is not the tool.
MAX_PORTS = 64
_STATUS_RE = re.compile(r"^link status\s*:\s*(.+)$", re.IGNORECASE)
_PORT_RE = re.compile(r"^port\s+(\d{1,3})\s*:\s*(.+)$", re.IGNORECASE)


def parse_ub_connect(stdout: str) -> UbConnect:
    """The overall state and each listed port's."""
    lines = list(content_lines(stdout))
    if not lines:
        raise not_as_expected("'link status : UP|DOWN|PARTIAL LINK'", stdout)
    match = _STATUS_RE.match(lines[0])
    if match is None:
        raise not_as_expected("'link status : UP|DOWN|PARTIAL LINK'", stdout)
    status = " ".join(match.group(1).upper().split())
    if status not in (LINK_UP, LINK_DOWN, LINK_PARTIAL):
        raise UnexpectedOutput(f"-ub_connect: link status {status[:40]!r} is not UP, DOWN or PARTIAL LINK")
    ports: Dict[int, str] = {}
    for line in lines[1:]:
        port = _PORT_RE.match(line)
        if port is None:
            raise UnexpectedOutput(f"-ub_connect: unrecognised line {line[:80]!r}")
        state = " ".join(port.group(2).upper().split())
        if state not in (PORT_UP, PORT_DOWN, PORT_PARTIAL_UP):
            raise UnexpectedOutput(f"-ub_connect: port state {state[:40]!r} is not UP, DOWN or PARTIAL UP")
        number = int(port.group(1))
        if number in ports:
            raise UnexpectedOutput(f"-ub_connect: port {number} listed twice")
        ports[number] = sys.intern(state)
        if len(ports) > MAX_PORTS:
            raise UnexpectedOutput(f"-ub_connect: more than {MAX_PORTS} ports")
    return UbConnect(status=sys.intern(status), ports=ports)
