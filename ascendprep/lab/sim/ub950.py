"""The Ascend 950 (Atlas 350) side of the simulated ``hccn_tool``: mode-first syntax, per-port
tables, UB interconnect, EIDs, ``-ub_ping`` and the IPv4 settings of the ``bond<slot>`` device.

What it prints follows the vendor's documented examples (hicann/driver @ ef377e9,
``docs/en/Ascend_950_HCCN_Tool``; the same text as tests/fixtures/probes/hccn/a5_*.out), and the
argument handling the 950 tool's source (``src/custom/network/hccn/ascend950/hccn_tool``):

* the mode comes first (``-g`` query, ``-s`` set, ``-t`` test); anything else, a 910 form such
  as ``-i 0 -speed -g`` included, is ``Please specify a valid mode.`` then ``Enter [ hccn_tool -h ]
  for more details.`` on stderr, exit 2 (``TOOL_PUBLIC_MODE_TYPE_ERR`` 0x1002 & 0xFF);
  an unknown command ``Please specify a valid cmd.`` (0x1004, exit 4); a die other than 0
  ``target udie is invalid, please check.`` (0x100C, exit 12); a port the card does not use
  ``target port is invalid, please check.`` (0x100D, exit 13);
* set commands end with ``Cmd executed successfully!`` (``tool_handle_cmd_err``), queries do not;
* IPv4 lives on ``bond<slot>`` (``tool_shell_ops.c``: any other name is ``Command is only
  applicable to bond devices, expected 'bond<slot>'.``); the lab's slot id is the NPU id; an
  address in 192.168.1.0/24 (the vNIC's host side) or in the device vNIC's 192.168.2.0/24 is
  refused, a gateway outside the stored address's subnet too; values go to ``/etc/hccn.conf`` as
  ``address_<slot>``, ``netmask_<slot>``, ``gateway_<slot>``, ``netdetect_<slot>``.

UB ports: die 0, ports 4, 5, 6 and 8 for two cards, 4, 5 and 6 for four, none for one card (the
``-ub_connect`` page). Each port has four lanes. In the 4-card mesh port 4/5/6 leads to the 1st/
2nd/3rd other card (in NPU order); with two cards every port leads to the other card. [I]: the
mapping of ports to peers is not published; the mesh shape is (HCCL topology example).

Lab faults (``state.set_fault`` with a ``port``): ``ub-port-down`` (the port has no lane up:
``DOWN``), ``ub-lane-downgrade`` (two lanes: ``PARTIAL UP``, ``Width X2 downgraded``),
``ub-partial-link`` (the same while the fault is younger than its ``recover_s``; after it the
port is back on four lanes, with the flap in ``-link_stat``), ``ub-crc-growing``
(``crc_error_sum`` grows by ``rate`` a second since injection) and ``ub-crc-static`` (a
``crc_error_sum`` of 5000 that does not grow: counts since boot, not a live fault),
``ub-link-flap`` (the port went down and up three times in the minutes before injection: three
LINK_DOWN/LINK_UP pairs in ``-link_stat``, the port up now) and ``ub-old-flap`` (one such pair
three days before injection: a flap long past). Not
documented anywhere, so [I]: the output of a failed ``-ub_ping`` (here the documented summary
with nothing received, then ``Cmd execute failed!`` on stderr, exit 1). The queries of the bond
device print what the tool's source prints: ``ipaddr:``/``netmask:``, ``default gateway:`` (no
``Iface``) and ``netdetect addr:``, ``0.0.0.0`` for a value never set. ``-g -tls -i N`` prints the
guide's example (querying-the-tls-certificate-information-of-an-npu-device.md: the switch line, then
the ``pub cert``, ``ca1 cert`` and ``ca2 cert`` blocks, not preset; its ``crl`` block left out) with the device's
switch; ``-s -tls -i N -enable 0|1`` sets it and keeps it as ``tls_enable_<slot>`` in
``/etc/hccn.conf`` (the page says the setting persists; the key is the 910 one [I]). The
``tls-mismatch`` fault makes the card report the other switch, as on 910. ``-net_health`` and
``-lldp`` are not simulated: the 950 guide documents neither output.

Only stdlib imports: this module is on the start-up path of every simulated tool call.
"""

from __future__ import annotations

import time
import zlib

from . import fabric, hccnconf, ipv4
from .state import edit_node, read_all_nodes

#: The lab product this module simulates.
PRODUCT = "atlas-350"
#: Exit statuses (the tool's result code & 0xFF; codes from ``common/hccn_err.h``).
MODE_TYPE_ERR, CMD_TYPE_ERR, ARGS_ID_ERR, ARGS_UDIE_ERR, ARGS_PORT_ERR = 2, 4, 7, 12, 13
PRIVATE_ARGS_ERR, DEV_EXE_ERR = 16, 1
LANES = 4
SPEED_GBPS = 400
PORTS_BY_CARDS = {1: (), 2: (4, 5, 6, 8), 4: (4, 5, 6)}
#: The device vNIC's subnet and the vNIC host side's, where the tool refuses a bond address.
VNIC_NETS = ("192.168.2.0", "192.168.1.0")
VNIC_MASK = "255.255.255.0"
STATIC_CRC = 5000
UNSET = "0.0.0.0"
DEFAULT_CRC_RATE = 100.0
PORT_COMMANDS = ("-speed", "-fec", "-link_stat", "-port_info", "-stat", "-link")
DEVICE_COMMANDS = ("-ub_connect", "-dev_info", "-netdetect", "-ub_ping", "-ping", "-tls")
BOND_COMMANDS = ("-ip", "-gateway")


class ToolError(Exception):
    """A refusal of the tool: its stderr lines and exit status."""

    def __init__(self, status: int, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.status = status
        self.lines = lines


def valid_ports(doc: dict) -> tuple[int, ...]:
    return PORTS_BY_CARDS.get(len(doc["devices"]), ())


def _fault(doc: dict, kind: str, devid: int, port: int | None = None) -> dict | None:
    for fault in doc.get("faults", []):
        if fault["kind"] == kind and fault.get("npu") in (None, devid):
            if port is None or fault.get("port") in (None, port):
                return fault
    return None


def lanes_up(doc: dict, devid: int, port: int, now: float) -> int:
    """Lanes of the port that trained: 0 (down), 2 (degraded) or 4."""
    if _fault(doc, "ub-port-down", devid, port):
        return 0
    if _fault(doc, "ub-lane-downgrade", devid, port):
        return 2
    partial = _fault(doc, "ub-partial-link", devid, port)
    if partial and now < partial.get("since", now) + partial.get("recover_s", float("inf")):
        return 2
    return LANES


def eids(doc: dict, devid: int) -> list[str]:
    """The device's four EIDs, colon-grouped as ``-dev_info`` prints them; unique per node and NPU."""
    node = zlib.crc32(doc["node"].encode()) & 0xFFF
    base = 0x20 + 0x100 * devid
    return [f"0000:0000:0000:0000:{0x1000 + node:04x}:0000:dfdf:{base + step:04x}" for step in (0, 8, 0x10, 0x31)]


def eid_words(text: str) -> tuple[int, ...] | None:
    """The eight 16-bit words of an EID in either printed form (``0000:...:0020`` or the
    IPv6-like ``::10:0:dfdf:20``); None when it is not one (the ``ipaddress`` module is too slow
    to import on every simulated call)."""
    if text.count("::") > 1 or not text or len(text) > 39:
        return None
    head, sep, tail = text.partition("::")
    left = head.split(":") if head else []
    right = tail.split(":") if tail else []
    missing = 8 - len(left) - len(right)
    if (sep and missing < 1) or (not sep and missing != 0):
        return None
    words = left + ["0"] * missing + right
    if any(not w or len(w) > 4 or any(c not in "0123456789abcdefABCDEF" for c in w) for w in words):
        return None
    return tuple(int(w, 16) for w in words)


def _short(eid: str) -> str:
    """``::10:0:dfdf:20``: the form ``-dev_info`` shows for ``ipourma0`` (the longest zero run
    compressed, as inet_ntop does)."""
    words = eid_words(eid) or (0,) * 8
    best, length, start = -1, 0, None
    for index, word in enumerate(words + (1,)):
        if word == 0 and start is None:
            start = index
        elif word != 0 and start is not None:
            if index - start > length and index - start > 1:
                best, length = start, index - start
            start = None
    texts = [f"{word:x}" for word in words]
    if best < 0:
        return ":".join(texts)
    return ":".join(texts[:best]) + "::" + ":".join(texts[best + length :])


def peer_ports(doc: dict, devid: int, peer: int) -> tuple[int, ...]:
    """The ports of ``devid`` that lead to ``peer`` (see the module docstring)."""
    ports = valid_ports(doc)
    if len(doc["devices"]) == 2:
        return ports
    others = [n for n in range(len(doc["devices"])) if n != devid]
    return (ports[others.index(peer)],) if peer in others and len(ports) == len(others) else ()


def _table(header: list[str], rows: list[list[str]], widths: list[int] | None = None) -> list[str]:
    widths = widths or [max(len(h), *(len(r[i]) for r in rows)) + 1 for i, h in enumerate(header)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return [border, line(header), border, *(line(r) for r in rows), border]


class Call:
    """One parsed invocation: mode, command, device and the options after them."""

    def __init__(self, argv: list[str], doc: dict) -> None:
        if not argv or argv[0] not in ("-g", "-s", "-t"):
            raise ToolError(MODE_TYPE_ERR, "Please specify a valid mode.", "Enter [ hccn_tool -h ] for more details.")
        self.mode = argv[0]
        self.cmd = argv[1] if len(argv) > 1 else ""
        if self.cmd not in PORT_COMMANDS + DEVICE_COMMANDS + BOND_COMMANDS:
            raise ToolError(
                CMD_TYPE_ERR, "Please specify a valid cmd.", f"Enter [ hccn_tool -h {self.mode} ] for more details."
            )
        self.options: dict[str, str] = {}
        rest = argv[2:]
        if len(rest) % 2:
            raise ToolError(PRIVATE_ARGS_ERR, f"Enter [ hccn_tool -h {self.cmd} ] for more details.")
        for key, value in zip(rest[::2], rest[1::2]):
            self.options[key] = value
        text = self.options.get("-i", "")
        if not text.isdigit() or int(text) >= len(doc["devices"]):
            raise ToolError(ARGS_ID_ERR, "target device is invalid, please check.")
        self.devid = int(text)

    def port(self, doc: dict) -> tuple[int, int]:
        udie, port = self.options.get("-u", ""), self.options.get("-p", "")
        if udie != "0":
            raise ToolError(ARGS_UDIE_ERR, "target udie is invalid, please check.")
        if not port.isdigit() or int(port) not in valid_ports(doc):
            raise ToolError(ARGS_PORT_ERR, "target port is invalid, please check.")
        return 0, int(port)


def ub_connect(doc: dict, devid: int, now: float) -> str:
    ports = valid_ports(doc)
    states = {p: lanes_up(doc, devid, p, now) for p in ports}
    if not ports or all(lanes == 0 for lanes in states.values()):
        overall = "DOWN"
    elif all(lanes > 0 for lanes in states.values()):
        overall = "UP"
    else:
        overall = "PARTIAL LINK"
    lines = [f"link status : {overall}"]
    for port, lanes in states.items():
        lines.append(f"port {port} : {'DOWN' if lanes == 0 else 'UP' if lanes == LANES else 'PARTIAL UP'}")
    return "\n".join(lines) + "\n"


def dev_info(doc: dict, devid: int, now: float) -> str:
    device = doc["devices"][devid]
    port_rows = [
        ["0", str(p), str(SPEED_GBPS), "UB", "UP" if lanes_up(doc, devid, p, now) else "DOWN", "Electrical"]
        for p in valid_ports(doc)
    ]
    out = _table(
        ["UDie ID", "Port ID", "Speed Ability(Gbps)", "Port Type", "Link Status", "Media Type"],
        port_rows,
        [7, 7, 19, 9, 11, 10],
    )
    mine = eids(doc, devid)
    widths = [15, 42, 42, 9, 15]
    header = ["Interface Name", "IP Address", "Netmask", "Bond Mode", "Slaves"]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    row = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    lines = [border, row(header), border, row(["end0v0", "192.168.2.199", "255.255.255.0", "NA", "NA"]), border]
    for index, eid in enumerate(reversed(mine)):
        first = index == 0
        mask = "ffff:ffff:ffff:ffff::"
        lines.append(
            row(["ipourma0" if first else "", _short(eid), mask, "NA" if first else "", "NA" if first else ""])
        )
    if device.get("ip"):
        lines += [border, row([f"bond{devid}", device["ip"], device["netmask"] or "", "802.3ad", "NA"])]
    lines.append(border)
    eid_rows = [["udma1" if k == 0 else "", str(k), eid] for k, eid in enumerate(mine)]
    return "\n".join(out + lines + _table(["Name", "EID Index", "EID"], eid_rows, [15, 9, 39])) + "\n"


def speed(doc: dict, devid: int, port: int, now: float) -> str:
    lanes = lanes_up(doc, devid, port, now)
    row = [
        str(devid),
        "0",
        str(port),
        "unknown" if lanes == 0 else f"{SPEED_GBPS * lanes // LANES} G",
        f"X{LANES}",
        f"X{lanes}",
        "normal" if lanes in (0, LANES) else "downgraded",
    ]
    header = ["NPU", "UDie", "Port", "Speed", "Cap", "Width", "Status"]
    return "\n".join(_table(header, [row], [3, 4, 4, 7, 3, 5, 9])) + "\n"


def fec(doc: dict, devid: int, port: int) -> str:
    header = ["NPU", "UDie", "Port", "rs_mode", "auto_change_mode", "itlv_mode"]
    return (
        "\n".join(
            _table(header, [[str(devid), "0", str(port), "128 T4", "Static", "Interweave"]], [3, 4, 4, 7, 16, 10])
        )
        + "\n"
    )


#: ``ub-link-flap``: seconds before injection of each down (its up follows a second later).
RECENT_FLAPS_S = (300.0, 200.0, 100.0)
#: ``ub-old-flap``: how long before injection its one flap was.
OLD_FLAP_S = 3 * 86400.0


def _history(doc: dict, devid: int, port: int, now: float) -> list[tuple[float, str]]:
    events = []
    for kind, ago in (("ub-link-flap", RECENT_FLAPS_S), ("ub-old-flap", (OLD_FLAP_S,))):
        fault = _fault(doc, kind, devid, port)
        if fault and "since" in fault:
            for seconds in ago:
                events += [(fault["since"] - seconds, "LINK_DOWN"), (fault["since"] - seconds + 1, "LINK_UP")]
    for kind in ("ub-port-down", "ub-partial-link", "ub-lane-downgrade"):
        fault = _fault(doc, kind, devid, port)
        if fault and "since" in fault:
            events.append((fault["since"], "LINK_DOWN"))
            if kind != "ub-port-down":
                events.append((fault["since"] + 1, "LINK_UP"))
            recover = fault.get("recover_s")
            if kind == "ub-partial-link" and recover is not None and now >= fault["since"] + recover:
                events += [(fault["since"] + recover, "LINK_DOWN"), (fault["since"] + recover + 1, "LINK_UP")]
    return sorted(events, reverse=True)[:10]


def link_stat(doc: dict, devid: int, port: int, now: float) -> str:
    events = _history(doc, devid, port, now)
    ups = 1 + sum(1 for _, state in events if state == "LINK_UP")
    downs = sum(1 for _, state in events if state == "LINK_DOWN")
    rows = [
        [str(devid), "0", str(port), state, time.strftime("%a %b %-d %H:%M:%S %Y", time.localtime(when))]
        for when, state in events
    ]
    header = ["NPU", "UDie", "Port", "Link_Status", "Time_Stamp"]
    table = _table(header, rows, [3, 4, 4, 11, max([23] + [len(row[4]) for row in rows])])
    return f"link up count :    {ups}\nlink down count :  {downs}\n" + "\n".join(table) + "\n"


def port_info(doc: dict, devid: int, port: int, now: float) -> str:
    lanes = lanes_up(doc, devid, port, now)
    link = "link" if lanes else "nolink"
    state = "LINK_ACTIVE" if lanes else "LINK_DOWN"
    return (
        f"port_id: 0x{port:x}\n"
        "======================= UB PORT LINK INFO =======================\n"
        "target_speed: LANE_400G_X4\nspeed_ability: 400Gbps\nlane_num: X4\nfec: FEC RS\nsds_rate: unset\n"
        f"port_usage: used\nport_enable: on\nport_link: {link}\ndriver_type: TYPE_NONE\nport_mode: PORT_MODE_SHARED\n"
        "link_down_err: 0x302\n"
        "======================== UB DLPHY INFO ==========================\n"
        "port_cna: 0x20\nclock_freq: 0x4a3\nfec: FEC Mode 1 RS (128, 120,T=4)\nphy_mode_ctrl: Mode2\nsds_rate: 106.25G\n"
        f"cur_speed: data rate8\ncur_tx_lane_num: X{lanes}\ncur_rx_lane_num: X{lanes}\n"
        "init_succ_tx_lane_num: X4\ninit_succ_rx_lane_num: X4\nport_en: on\nport_mode: X4 2port\nport_mode_en: on\n"
        f"dl_link: {link}\nphy_link: {link}\ncur_port_type: slave\nlstm_state: {state}\n"
        "decoded_fail_block_num: 0x0\nfec_err: 0x0\nretry_cnt: 0x0\ndl_link_fsm: Initialization succeeded.\n"
    )


_STAT_NAMES = (
    "ub_glb_ipv4_pkt_cnt_rx ub_glb_ipv6_pkt_cnt_rx unic_ipv4_pkt_cnt_rx unic_ipv6_pkt_cnt_rx ub_clan_pkt_cnt_rx "
    "ub_umoc_ctph_cnt_rx ub_umoc_ntph_cnt_rx ub_mem_pkt_cnt_rx unknown_pkt_cnt_rx drop_ind_cnt_rx err_ind_cnt_rx "
    "to_host_pkt_cnt_rx to_imp_pkt_cnt_rx to_mar_pkt_cnt_rx to_link_pkt_cnt_rx to_noc_pkt_cnt_rx route_err_cnt_rx "
    "out_err_cnt_rx length_err_cnt_rx rx_busi_flit_num rx_send_ack_flit ub_glb_ipv4_pkt_cnt_tx ub_glb_ipv6_pkt_cnt_tx "
    "unic_ipv4_pkt_cnt_tx unic_ipv6_pkt_cnt_tx ub_clan_pkt_cnt_tx ub_umoc_ctph_cnt_tx ub_umoc_ntph_cnt_tx "
    "ub_mem_pkt_cnt_tx unknown_pkt_cnt_tx drop_ind_cnt_tx err_ind_cnt_tx lpbk_ind_cnt_tx out_err_cnt_tx "
    "length_err_cnt_tx tx_busi_flit_num tx_recv_ack_flit retry_req_sum retry_ack_sum crc_error_sum"
).split()


def crc_count(doc: dict, devid: int, port: int, now: float) -> int:
    growing = _fault(doc, "ub-crc-growing", devid, port)
    if growing:
        return int(max(0.0, now - growing.get("since", now)) * float(growing.get("rate", DEFAULT_CRC_RATE)))
    return STATIC_CRC if _fault(doc, "ub-crc-static", devid, port) else 0


def stat(doc: dict, devid: int, port: int, now: float) -> str:
    values = dict.fromkeys(_STAT_NAMES, 0)
    values["crc_error_sum"] = crc_count(doc, devid, port, now)
    lines = ["packet statistics:", f"port_id: {port}", "is_uboe_port: 0"]
    return "\n".join(lines + [f"{name}: {value}" for name, value in values.items()]) + "\n"


#: The certificate blocks of the guide's ``-tls`` example: (name, subject, issuer, start, end).
_TLS_CERTS = (
    ("pub cert", "/C=CN/O=xxx/CN=www.xxx.com", "/C=CN/O=xxx/CN=xxx RSA PSS Sub CA", "Wed Jun 18 03:10:27 2053"),
    ("ca1 cert", "/C=CN/O=xxx/CN=xxx RSA CA", "/C=CN/O=xxx/CN=xxx RSA CA", "Thu Feb  3 03:10:27 2056"),
    ("ca2 cert", "/C=CN/O=xxx/CN=xxx RSA PSS Sub CA", "/C=CN/O=xxx/CN=Test RSA CA", "Thu Mar 22 03:10:27 2108"),
)


def tls(doc: dict, devid: int) -> str:
    """``-g -tls -i N`` in the guide's form, with the device's switch (see the module docstring)."""
    switch = int(doc["devices"][devid].get("tls_enable", 0))
    if _fault(doc, "tls-mismatch", devid):
        switch ^= 1
    lines = [
        f"dev_id:{devid}, tls switch[{switch}](0:disable, 1:enable), tls preconfigured[0](0:non-preset, 1:preset),"
        " tls alarm time threshold[60]days"
    ]
    status = "tls expiration status[{}](0:normal, 1:near expiration, 2:has expired)"
    for name, subject, issuer, end in _TLS_CERTS:
        lines += [
            f"dev_id:{devid}, [{name}] info:",
            f"         subject[{subject}]",
            f"         issuer[{issuer}]",
            "         start_time[Sat Jan 31 03:10:27 2026 GMT]",
            f"         end_time[{end} GMT]",
            "         " + status.format(0),
        ]
    return "\n".join(lines) + "\n"


def ub_ping(doc: dict, call: Call, now: float) -> tuple[int, str]:
    """(exit status, stdout) of one UB ping between two EIDs of this node's cards."""
    src, dst = call.options.get("-src_eid", ""), call.options.get("-dst_eid", "")
    count = call.options.get("-cnt", "3")
    if not count.isdigit() or not 1 <= int(count) <= 1000:
        raise ToolError(PRIVATE_ARGS_ERR, "Enter [ hccn_tool -h -ub_ping ] for more details.")
    src_eid, dst_eid = eid_words(src), eid_words(dst)
    if src_eid is None or dst_eid is None:
        raise ToolError(PRIVATE_ARGS_ERR, "Enter [ hccn_tool -h -ub_ping ] for more details.")
    owner = {eid_words(e): n for n in range(len(doc["devices"])) for e in eids(doc, n)}
    if owner.get(src_eid) != call.devid:
        raise ToolError(DEV_EXE_ERR, "Cmd execute failed!")
    peer = owner.get(dst_eid)
    sent = int(count)
    reachable = peer is not None and any(
        lanes_up(doc, call.devid, port, now)
        and any(lanes_up(doc, peer, back, now) for back in peer_ports(doc, peer, call.devid))
        for port in peer_ports(doc, call.devid, peer)
    )
    head = f"device {call.devid} dev  EID {src} to {dst}\n"
    if not reachable:
        return 1, head + f"{sent} packets transmitted, 0 received, 100.00% packet loss\n"
    lines = [f"recv seq:{seq},time:0.286000ms" for seq in range(sent)]
    summary = [
        f"{sent} packets transmitted, {sent} received, 0.00% packet loss",
        "max time 0.295000ms",
        "min time 0.278000ms",
        "average time 0.286000ms",
        "TP95 time 0.295000ms",
    ]
    return 0, head + "\n".join(lines + summary) + "\n"


def ip_ping(call: Call, identity, doc: dict) -> tuple[int, str]:
    """``-t -ping -i N -src_address S -dst_address D``: three ICMP echoes from the NPU's bond
    address over the simulated fabric (the bond plane is modelled like the 910 RoCE plane [I]);
    the summary line is the one ``tool_product.c`` prints."""
    source = _address(call.options.get("-src_address", ""))
    target = _address(call.options.get("-dst_address", ""))
    device = doc["devices"][call.devid]
    if source != device.get("ip"):
        raise ToolError(DEV_EXE_ERR, f"The source address {source} is not an address of device {call.devid}.")
    nodes = read_all_nodes(identity.state_dir)
    reachable = fabric.can_reach(nodes, identity.node, call.devid, target)
    count = 3
    lines = [f"device {call.devid} PING {target}"]
    lines += [f"recv seq={seq},time=0.031000ms" if reachable else f"recv time out seq={seq}" for seq in range(count)]
    received = count if reachable else 0
    lines.append(
        f"{count} packets transmitted, {received} received, {100.0 * (count - received) / count:.2f}% packet loss"
    )
    return (0 if reachable else 1), "\n".join(lines) + "\n"


def _bond(call: Call) -> int:
    name = call.options.get("-d", "")
    if not name.startswith("bond"):
        raise ToolError(DEV_EXE_ERR, f"Command is only applicable to bond devices, expected 'bond{call.devid}'.")
    if name != f"bond{call.devid}":
        raise ToolError(DEV_EXE_ERR, f"Bond device ID mismatch: name='{name}', expected 'bond{call.devid}'.")
    return call.devid


def _address(text: str) -> str:
    if ipv4.parse(text) is None:
        raise ToolError(PRIVATE_ARGS_ERR, f"{text!r} is not an IPv4 address.")
    return text


def set_values(call: Call, identity, doc: dict) -> None:
    """``-s -ip``/``-gateway`` on the bond, ``-s -netdetect`` on the device: the node's state and
    ``/etc/hccn.conf`` (``<key>_<slot>``, the lab's slot being the NPU id)."""
    conf = hccnconf.read_text(identity.hccn_conf) or ""
    slot = call.devid
    with edit_node(identity.state_dir, identity.node) as live:
        device = live["devices"][call.devid]
        if call.cmd == "-ip":
            _bond(call)
            address = _address(call.options.get("-address", ""))
            netmask = call.options.get("-netmask", "")
            if not ipv4.is_valid_netmask(netmask):
                raise ToolError(PRIVATE_ARGS_ERR, "The netmask is invalid.")
            if any(ipv4.same_subnet(address, net, VNIC_MASK) for net in VNIC_NETS):
                raise ToolError(DEV_EXE_ERR, "The IP address conflicts with the vnic network segment.")
            device["ip"], device["netmask"] = address, netmask
            conf = hccnconf.set_value(conf, "address", slot, address)
            conf = hccnconf.set_value(conf, "netmask", slot, netmask)
            if device.get("gateway") and not ipv4.same_subnet(device["gateway"], address, netmask):
                device["gateway"] = None
                conf = hccnconf.delete_value(conf, "gateway", slot)
        elif call.cmd == "-gateway":
            _bond(call)
            gateway = _address(call.options.get("-address", ""))
            if not device.get("ip"):
                raise ToolError(DEV_EXE_ERR, "Please configure the IP address first.")
            if not ipv4.same_subnet(gateway, device["ip"], device["netmask"]):
                raise ToolError(DEV_EXE_ERR, "The gateway and the IP address are not in the same network segment.")
            device["gateway"] = str(gateway)
            conf = hccnconf.set_value(conf, "gateway", slot, str(gateway))
        elif call.cmd == "-tls":
            enable = call.options.get("-enable", "")
            if enable not in ("0", "1"):
                raise ToolError(PRIVATE_ARGS_ERR, "Enter [ hccn_tool -h -tls ] for more details.")
            device["tls_enable"] = int(enable)
            conf = hccnconf.set_value(conf, "tls_enable", slot, enable)
        elif call.cmd == "-netdetect":
            detect = _address(call.options.get("-address", ""))
            device["netdetect"] = str(detect)
            conf = hccnconf.set_value(conf, "netdetect", slot, str(detect))
        else:
            raise ToolError(CMD_TYPE_ERR, "Please specify a valid cmd.")
    hccnconf.write_text(identity.hccn_conf, conf)


def query(call: Call, doc: dict, now: float) -> str:
    devid = call.devid
    if call.cmd in PORT_COMMANDS:
        _, port = call.port(doc)
        if call.cmd == "-speed":
            return speed(doc, devid, port, now)
        if call.cmd == "-fec":
            return fec(doc, devid, port)
        if call.cmd == "-link_stat":
            return link_stat(doc, devid, port, now)
        if call.cmd == "-port_info":
            return port_info(doc, devid, port, now)
        if call.cmd == "-stat":
            return stat(doc, devid, port, now)
        return f"link status: {'UP' if lanes_up(doc, devid, port, now) else 'DOWN'}\n"
    if call.cmd == "-ub_connect":
        return ub_connect(doc, devid, now)
    if call.cmd == "-dev_info":
        return dev_info(doc, devid, now)
    if call.cmd == "-tls":
        return tls(doc, devid)
    device = doc["devices"][devid]
    # the tool prints the stored value as a dotted quad, 0.0.0.0 when none is set
    # (ascend950/hccn_tool/tool_shell_ops.c tool_get_ip_exec / tool_get_gateway_exec,
    # tool_tcpip_ops.c's netdetect query)
    if call.cmd == "-netdetect":
        return f"netdetect addr: {device.get('netdetect') or UNSET}\n"
    _bond(call)
    if call.cmd == "-ip":
        return f"ipaddr:{device.get('ip') or UNSET}\nnetmask:{device.get('netmask') or UNSET}\n"
    return f"default gateway:{device.get('gateway') or UNSET}\n"


def run(argv: list[str], identity, doc: dict, out, err, now: float | None = None) -> int:
    """One 950 ``hccn_tool`` call; the exit status."""
    now = time.time() if now is None else now
    try:
        call = Call(argv, doc)
        if call.mode == "-t":
            if call.cmd not in ("-ub_ping", "-ping"):
                raise ToolError(CMD_TYPE_ERR, "Please specify a valid cmd.")
            status, text = ub_ping(doc, call, now) if call.cmd == "-ub_ping" else ip_ping(call, identity, doc)
            out.write(text)
            if status:
                err.write("Cmd execute failed!\n")
                return status
            out.write("Cmd executed successfully!\n")
            return 0
        if call.mode == "-s":
            set_values(call, identity, doc)
            out.write("Cmd executed successfully!\n")
            return 0
        if call.cmd in ("-ub_ping", "-ping"):
            raise ToolError(CMD_TYPE_ERR, "Please specify a valid cmd.")
        out.write(query(call, doc, now))
        return 0
    except ToolError as exc:
        for line in exc.lines:
            err.write(line + "\n")
        return exc.status
