"""``hccn_tool -g -dev_info -i N`` on Ascend 950: the UB ports, the netdevs and the EIDs.

Documented form (hicann/driver ``docs/en/Ascend_950_HCCN_Tool/.../querying-the-npu-device-
information.md``): three stacked tables::

    | UDie ID | Port ID | Speed Ability(Gbps) | Port Type | Link Status | Media Type |
    | 0       | 4       | 400                 | UB        | UP          | Electrical |

    | Interface Name  | IP Address      | Netmask                 | Bond Mode | Slaves |
    | end0v0          | 192.168.2.199   | 255.255.255.0           | NA        | NA     |
    | ipourma0        | ::10:0:dfdf:51  | ffff:ffff:ffff:ffff::   | NA        | NA     |
    |                 | ::10:0:dfdf:30  | ffff:ffff:ffff:ffff::   |           |        |

    | Name            | EID Index | EID                                     |
    | udma1           | 0         | 0000:0000:0000:0000:0010:0000:dfdf:0020 |

A row whose first cell is blank continues the row above (one interface, several addresses; one
UDMA device, several EIDs). EIDs are 128-bit URMA addresses; rank table 2.0 wants each as 32 hex
digits without colons (``000000000000000000100000dfdf0020``; HCOMM ``address_info.cc``), which is
the form kept here.
"""

from __future__ import annotations

import ipaddress
import sys
from typing import Dict, List, Optional, Tuple

from ascendprep.facts.text import UnexpectedOutput
from ascendprep.facts.ub_model import UbDevInfo, UbDevPort, UbInterface
from ascendprep.facts.ub_table import Table, small_int, split_tables

PORTS_HEADER = ("UDie ID", "Port ID", "Speed Ability(Gbps)", "Port Type", "Link Status", "Media Type")
INTERFACES_HEADER = ("Interface Name", "IP Address", "Netmask", "Bond Mode", "Slaves")
EIDS_HEADER = ("Name", "EID Index", "EID")


def normalise_eid(text: str) -> str:
    """Any printed EID form (``0000:...:dfdf:0020`` or the IPv6-like ``::10:0:dfdf:20``) as 32
    lower-case hex digits without colons; text that is not a 128-bit address is refused."""
    try:
        return ipaddress.IPv6Address(text).exploded.replace(":", "")
    except ValueError:
        raise UnexpectedOutput(f"EID {text[:60]!r} is not a 128-bit address") from None


def _na(text: str) -> Optional[str]:
    return None if text in ("", "NA") else text


def _ports(table: Table) -> Tuple[UbDevPort, ...]:
    ports = []
    for row in table.rows:
        speed = row[2]
        ports.append(
            UbDevPort(
                udie=small_int(row[0], "UDie ID", 64),
                port=small_int(row[1], "Port ID", 1024),
                speed_gbps=None if speed in ("NA", "unknown") else small_int(speed, "Speed Ability(Gbps)"),
                port_type=sys.intern(row[3]),
                link_status=sys.intern(row[4].upper()),
                media=sys.intern(row[5]),
            )
        )
    return tuple(ports)


def _interfaces(table: Table) -> Tuple[UbInterface, ...]:
    grouped: List[List[Tuple[str, ...]]] = []
    for row in table.rows:
        if row[0]:
            grouped.append([row])
        elif not grouped:
            raise UnexpectedOutput("-dev_info: an address row before any interface")
        else:
            grouped[-1].append(row)
    interfaces = []
    for rows in grouped:
        first = rows[0]
        interfaces.append(
            UbInterface(
                name=first[0],
                addresses=tuple(row[1] for row in rows if _na(row[1])),
                netmasks=tuple(row[2] for row in rows if _na(row[2])),
                bond_mode=_na(first[3]),
                slaves=_na(first[4]),
            )
        )
    return tuple(interfaces)


def _eids(table: Table) -> Tuple[Tuple[str, ...], Dict[str, Tuple[str, ...]]]:
    by_udma: Dict[str, List[str]] = {}
    name = ""
    ordered: List[str] = []
    for row in table.rows:
        if row[0]:
            name = row[0]
        elif not name:
            raise UnexpectedOutput("-dev_info: an EID row before any UDMA device")
        small_int(row[1], "EID Index", 1024)
        eid = normalise_eid(row[2])
        by_udma.setdefault(name, []).append(eid)
        ordered.append(eid)
    return tuple(ordered), {key: tuple(values) for key, values in by_udma.items()}


def parse_dev_info(stdout: str) -> UbDevInfo:
    """The three tables, recognised by their headers; a table of another header is refused."""
    before, tables = split_tables(stdout, "the -dev_info tables (UDie ID | Port ID | ...)")
    if before:
        raise UnexpectedOutput(f"-dev_info: text before the tables: {before[0][:80]!r}")
    ports: Tuple[UbDevPort, ...] = ()
    interfaces: Tuple[UbInterface, ...] = ()
    eids: Tuple[str, ...] = ()
    by_udma: Dict[str, Tuple[str, ...]] = {}
    seen = set()
    for table in tables:
        if table.header in seen:
            raise UnexpectedOutput(f"-dev_info: the {table.header[0]!r} table printed twice")
        seen.add(table.header)
        if table.header == PORTS_HEADER:
            ports = _ports(table)
        elif table.header == INTERFACES_HEADER:
            interfaces = _interfaces(table)
        elif table.header == EIDS_HEADER:
            eids, by_udma = _eids(table)
        else:
            raise UnexpectedOutput(f"-dev_info: unrecognised table ({' | '.join(table.header)[:80]})")
    if PORTS_HEADER not in seen:
        raise UnexpectedOutput("-dev_info: no port table (UDie ID | Port ID | ...)")
    return UbDevInfo(ports=ports, interfaces=interfaces, eids=eids, eids_by_udma=by_udma)
