"""The per-NPU address table (``plan --offline --format csv``) for network teams and their tools.

One row per NPU, in node and NPU order, with a fixed header so that spreadsheets, IPAM imports
and switch-config generators can read it without knowing ascendprep:
``node,host,npu,ip,netmask,gateway,detect``. An empty gateway or detect cell means none is
planned. Rows are written node by node as they are produced, so 4,096 nodes never build the
whole table as one string.

Every cell is a validated node name, host, NPU number or dotted IPv4 address (the inventory
refuses anything else), so no cell can start a spreadsheet formula; the csv module still quotes
whatever would need it.
"""

from __future__ import annotations

import csv
from typing import TextIO

from ascendprep.desired.state import DesiredState

COLUMNS = ("node", "host", "npu", "ip", "netmask", "gateway", "detect")


def write_address_csv(desired: DesiredState, stream: TextIO) -> int:
    """Write the header and one row per planned NPU to ``stream``; return the rows written."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(COLUMNS)
    rows = 0
    for nd in desired.nodes.values():
        node = nd.node
        writer.writerows(
            (node.name, node.host, h.npu, h.ip, h.netmask, h.gateway or "", h.netdetect or "") for h in nd.hccn
        )
        rows += len(nd.hccn)
    return rows
