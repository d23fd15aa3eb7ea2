"""``hccn_tool -i <devid> -<option> -g`` queries: what the gather script runs and how to read it.

Formats follow docs/ascend-reference.md §1.4 including older drivers: ``Socket failed`` for
``Socket fail``, ``[device N]`` for ``[devid N]``, no ``link down count`` line, and an empty
``-ip -g`` answer for a device without an IP. Where public sources disagree on a spelling both
are accepted and the driver source's stays primary in messages: ``netdetect addr:`` (driver
``tool_ops.c``) beside ``netdetect address:`` (a vendor DeepSeek-V3 multi-node deployment guide).
Each parser returns the :class:`NpuFacts` fields it fills, so the gather step can apply any
query's result the same way. Which queries the gather runs, with which arguments, is declared
in :mod:`ascendprep.facts.units` (``HCCN_QUERIES``).
"""

from __future__ import annotations

import ipaddress
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.facts.model import LinkRecord, LinkStat, LldpNeighbor, TlsState
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected

Fields = Dict[str, Any]

#: The spellings of ``-net_health -g`` (index = driver code), current drivers.
NET_HEALTH_STATES = (
    "Success",
    "Socket fail",
    "Receive timeout",
    "Unreachable",
    "Time exceeded",
    "Fault",
    "Init",
    "Thread error",
    "Detect ip set",
    "Unknown",
)
#: Older spellings → current ones.
_NET_HEALTH_ALIASES = {"socket failed": "Socket fail"}

#: Failures that are really answers: "nothing configured" (text as printed by hccn_tool,
#: docs/ascend-reference.md §1.2: exit 13, 2 and 14) and the fields they mean. ``-lldp -g`` answers the
#: generic ``Command execute failed!`` (exit 1) when no LLDP frame came in from the switch:
#: that is "no neighbour" (docs/ascend-reference.md §1.4 ``-lldp -g``). On a port whose link is
#: down the driver answers ``Execute failed: Link status is down.`` (DSMI_LINK_IS_DOWN_ERR, exit
#: 22, §1.2): no neighbour could be asked, which network.lldp reports as such. A tool that could
#: not run (timeout, missing, another message) stays a probe error.
LLDP_NO_NEIGHBOUR_TEXT = "command execute failed!"
LINK_DOWN_TEXT = "link status is down"
_NOT_CONFIGURED: Dict[str, Tuple[Tuple[str, Fields], ...]] = {
    "hccn.ip": (("no ip was preset", {"ip": None, "netmask": None}),),
    "hccn.gateway": (("no gateway was preset", {"gateway": None, "gateway_iface": None}),),
    "hccn.tls": (("no certificate found", {"tls": TlsState(switch=None, preconfigured=None, certificates=False)}),),
    "hccn.lldp": ((LINK_DOWN_TEXT, {"lldp": None, "lldp_link_down": True}), (LLDP_NO_NEIGHBOUR_TEXT, {"lldp": None})),
}


def _ipv4(value: str, what: str) -> str:
    """``value`` in IPv4Address's own spelling; UnexpectedOutput naming ``what`` when it is no IPv4 address."""
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise UnexpectedOutput(f"{what} {value!r} is not an IPv4 address") from None


def parse_ip(stdout: str) -> Fields:
    """``ipaddr:A`` / ``netmask:M``; empty output (older drivers, no IP) means not configured."""
    values: Dict[str, str] = {}
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("ipaddr", "netmask"):
            values[key.strip()] = _ipv4(value.strip(), key.strip())
    if not values and stdout.strip():
        raise not_as_expected("'ipaddr:<ip>' and 'netmask:<mask>' lines", stdout)
    netmask = values.get("netmask")
    return {"ip": values.get("ipaddr"), "netmask": sys.intern(netmask) if netmask is not None else None}


_GATEWAY_FORM = "'default gateway:<ip>, Iface:eth<k>'"
_GATEWAY_RE = re.compile(r"default gateway:\s*(\S+?)\s*(?:,\s*Iface:\s*(\S+))?\s*$", re.IGNORECASE)


def parse_gateway(stdout: str) -> Fields:
    """``default gateway:G, Iface:ethK``; a line without its ``, Iface:`` part is refused, naming that part."""
    for line in content_lines(stdout):
        match = _GATEWAY_RE.search(line)
        if not match:
            continue
        if match.group(2) is None:
            raise UnexpectedOutput(f"expected ', Iface:eth<k>' after the gateway in {_GATEWAY_FORM}, got {line!r}")
        return {"gateway": _ipv4(match.group(1).rstrip(","), "gateway"), "gateway_iface": sys.intern(match.group(2))}
    if stdout.strip():
        raise not_as_expected(_GATEWAY_FORM, stdout)
    return {"gateway": None, "gateway_iface": None}


_GATEWAY_950_RE = re.compile(r"^\s*default gateway:\s*(\S*?)\s*(?:,\s*Iface:\s*\S*)?\s*$", re.IGNORECASE)
#: What an unset Ascend 950 value may read as: the source prints the stored number as a dotted
#: quad (0.0.0.0 when none); an empty value is taken the same way [I].
_UNSET_950 = ("", "0.0.0.0")


def _value_950(value: str, what: str) -> Optional[str]:
    return None if value in _UNSET_950 else _ipv4(value, what)


def parse_ip_950(stdout: str) -> Fields:
    """Ascend 950 ``hccn_tool -g -ip -i N -d bond<slot>``: ``ipaddr:A`` / ``netmask:M`` (hicann/driver
    ``ascend950/hccn_tool/tool_shell_ops.c``); an unset address reads as ``0.0.0.0`` or empty."""
    values: Dict[str, Optional[str]] = {}
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("ipaddr", "netmask"):
            values[key.strip()] = _value_950(value.strip(), key.strip())
    if "ipaddr" not in values:
        raise not_as_expected("'ipaddr:<ip>' and 'netmask:<mask>' lines", stdout)
    ip, netmask = values.get("ipaddr"), values.get("netmask")
    if ip is None:
        return {"ip": None, "netmask": None}
    return {"ip": ip, "netmask": sys.intern(netmask) if netmask is not None else None}


def parse_gateway_950(stdout: str) -> Fields:
    """Ascend 950 ``hccn_tool -g -gateway -i N -d bond<slot>``: ``default gateway:G`` (hicann/driver
    ``ascend950/hccn_tool/tool_shell_ops.c`` ``tool_get_gateway_exec``; a trailing ``, Iface:...``
    as the 910B prints is accepted). ``0.0.0.0`` or an empty value means none."""
    for line in content_lines(stdout):
        match = _GATEWAY_950_RE.match(line)
        if match:
            return {"gateway": _value_950(match.group(1), "gateway"), "gateway_iface": None}
    if stdout.strip():
        raise not_as_expected("'default gateway:<ip>'", stdout)
    return {"gateway": None, "gateway_iface": None}


_NETDETECT_950_RE = re.compile(r"netdetect addr(?:ess)?:[ \t]*(\S*)", re.IGNORECASE)


def parse_netdetect_950(stdout: str) -> Fields:
    """Ascend 950 ``hccn_tool -g -netdetect -i N``: ``netdetect addr: A`` (hicann/driver
    ``ascend950/hccn_tool/tool_tcpip_ops.c``); ``0.0.0.0`` or an empty value means not set."""
    match = _NETDETECT_950_RE.search(stdout)
    if not match:
        raise not_as_expected("'netdetect addr: <ip>'", stdout)
    return {"netdetect": _value_950(match.group(1), "netdetect address")}


_NETDETECT_RE = re.compile(r"netdetect addr(?:ess)?:\s*(\S+)", re.IGNORECASE)


def parse_netdetect(stdout: str) -> Fields:
    """``netdetect addr: A`` (driver) or ``netdetect address: A`` (a deployment guide's sample);
    ``0.0.0.0`` (what a never-set detect IP reads as) means not set."""
    match = _NETDETECT_RE.search(stdout)
    if not match:
        raise not_as_expected("'netdetect addr: <ip>' (or 'netdetect address: <ip>')", stdout)
    address = _ipv4(match.group(1), "netdetect address")
    return {"netdetect": None if address == "0.0.0.0" else address}


_LINK_RE = re.compile(r"link status:\s*(UP|DOWN)\b", re.IGNORECASE)


def parse_link(stdout: str) -> Fields:
    """``link status: UP`` / ``DOWN``."""
    match = _LINK_RE.search(stdout)
    if not match:
        raise not_as_expected("'link status: UP|DOWN'", stdout)
    return {"link": sys.intern(match.group(1).upper())}


_NET_HEALTH_RE = re.compile(r"net health status:\s*(.+)", re.IGNORECASE)


def parse_net_health(stdout: str) -> Fields:
    """``net health status: S``, S normalised to the current spelling (``Socket failed`` → ``Socket fail``).

    A status this module does not know is kept verbatim rather than refused: a newer driver's
    word is still the fact, and checks treat anything but ``Success`` as unhealthy.
    """
    match = _NET_HEALTH_RE.search(stdout)
    if not match:
        raise not_as_expected("'net health status: <status>'", stdout)
    status = match.group(1).strip()
    status = _NET_HEALTH_ALIASES.get(status.lower(), status)
    for known in NET_HEALTH_STATES:
        if status.lower() == known.lower():
            status = known
    return {"net_health": sys.intern(status)}


def parse_lldp(stdout: str) -> Fields:
    """The switch neighbour from lldptool-style TLV text; empty output means no neighbour.

    Like the MC fault-diagnosis parser, it relies on ``Port ID TLV`` being followed by the
    port line (``Ifname: 400GE1/1/20:2``, or ``MAC: ...`` on some switches) and ``System Name
    TLV`` by the name line.
    """
    lines = list(content_lines(stdout))
    if not lines:
        return {"lldp": None}
    following: Dict[str, str] = {}
    for index, line in enumerate(lines[:-1]):
        if line.endswith("TLV"):
            following.setdefault(line.lower(), sys.intern(lines[index + 1]))
    if not following:
        raise not_as_expected("LLDP TLV lines ('Chassis ID TLV', 'Port ID TLV', ...)", stdout)
    port_id = following.get("port id tlv")
    port_ifname = None
    if port_id and port_id.lower().startswith("ifname:"):
        port_ifname = sys.intern(port_id.split(":", 1)[1].strip())
    system_name = following.get("system name tlv")
    if system_name is not None and system_name.endswith("TLV"):
        system_name = None  # the TLV is present but empty
    return {
        "lldp": LldpNeighbor(
            system_name=system_name,
            port_ifname=port_ifname,
            port_id=port_id,
            chassis_id=following.get("chassis id tlv"),
        )
    }


_TLS_SWITCH_RE = re.compile(r"tls switch\[(\d+)\]", re.IGNORECASE)
_TLS_PRESET_RE = re.compile(r"tls preconfigured\[(\d+)\]", re.IGNORECASE)


def parse_tls(stdout: str) -> Fields:
    """``dev_id:0, tls switch[0](...), tls preconfigured[1](...), ...`` (no preconfigured on old drivers)."""
    switch = _TLS_SWITCH_RE.search(stdout)
    if not switch:
        raise not_as_expected("'dev_id:<n>, tls switch[0|1](...)'", stdout)
    preset = _TLS_PRESET_RE.search(stdout)
    return {
        "tls": TlsState(
            switch=int(switch.group(1)),
            preconfigured=int(preset.group(1)) if preset else None,
            certificates=True,
        )
    }


_LINK_STAT_PREFIX_RE = re.compile(r"^\[(?:devid|device)\s*\d+\]\s?")
_LINK_RECORD_RE = re.compile(
    r"^(?P<time>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\s+LINK\s+(?P<state>UP|DOWN)$",
    re.IGNORECASE,
)


def parse_link_stat(stdout: str) -> Fields:
    """``[devid N]key : value`` lines then ``LINK UP``/``LINK DOWN`` records, newest first."""
    current_time = up_count = down_count = None
    records: List[LinkRecord] = []
    seen_header = False
    for raw in stdout.splitlines():
        line = _LINK_STAT_PREFIX_RE.sub("", raw.strip()).strip()
        if not line:
            continue
        record = _LINK_RECORD_RE.match(line)
        if record:
            records.append(LinkRecord(time=record.group("time"), state=sys.intern(record.group("state").upper())))
            continue
        key, sep, value = line.partition(" : ")
        if not sep:
            key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "current time":
            current_time, seen_header = value, True
        elif key == "link up count":
            up_count, seen_header = _count(value, key), True
        elif key == "link down count":
            down_count, seen_header = _count(value, key), True
        elif key == "link change records":
            seen_header = True
        else:
            raise UnexpectedOutput(f"unrecognised link_stat line {line!r}")
    if not seen_header:
        raise not_as_expected("'[devid <n>]current time : ...' link_stat lines", stdout)
    return {
        "link_stat": LinkStat(
            current_time=current_time, up_count=up_count, down_count=down_count, records=tuple(records)
        )
    }


def _count(value: str, key: str) -> int:
    if not value.isdigit():
        raise UnexpectedOutput(f"{key} {value!r} is not a number")
    return int(value)


_SPEED_RE = re.compile(r"Speed:\s*(?:(\d+)\s*Mb/s|(Unknown!?))", re.IGNORECASE)


def parse_speed(stdout: str) -> Fields:
    """``Speed: 200000 Mb/s`` (also ethtool's ``200000Mb/s``); ``Speed: Unknown!`` → None."""
    match = _SPEED_RE.search(stdout)
    if not match:
        raise not_as_expected("'Speed: <n> Mb/s' or 'Speed: Unknown!'", stdout)
    return {"speed_mbps": int(match.group(1)) if match.group(1) else None}


def not_configured(probe: str, output: str) -> Optional[Fields]:
    """The fields a failed query stands for when its message means "nothing set", else None.

    ``-ip -g`` without an IP (exit 13), ``-gateway -g`` without a gateway (exit 2),
    ``-tls -g`` without certificates (exit 14), ``-lldp -g`` with no neighbour answering
    (``Command execute failed!``, exit 1) and ``-lldp -g`` on a port whose link is down
    (``Execute failed: Link status is down.``, exit 22) are answers, not probe failures.
    """
    text = output.lower()
    for marker, fields in _NOT_CONFIGURED.get(probe, ()):
        if marker in text:
            return dict(fields)
    return None
