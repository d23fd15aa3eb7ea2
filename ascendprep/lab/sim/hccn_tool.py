"""Simulated ``hccn_tool`` for the ascendprep lab: ``python -m ascendprep.lab.sim.hccn_tool ...``.

It follows the real 910B/A3 tool (docs/ascend-reference.md §1, §2, §9; structure of its ``cmd.c``):

* argument checks in the real order: argument count/length -> ``-h`` -> ``-i``/``-a`` ->
  command name -> device id -> the command's own parameters;
* the internal result code is returned as the exit status (``code & 0xFF`` in the shell), and
  each code prints its message on the real stream (most on stderr; ``hccn_tool is busy`` and
  ``The command is not supported on this product.`` on stdout); parameter errors add the
  command's usage block on stdout;
* ``Cmd executed successfully!`` follows set commands only, never queries;
* ``/etc/hccn.conf`` (the node's, from ``node.json``) is updated with remove-then-append.

Lab faults (``state.set_fault``): ``hccn-hang`` sleeps 3600 s before doing anything,
``hccn-busy`` answers ``hccn_tool is busy, please try again.`` (stdout, exit 11),
``hccn-flood`` prints the fault's ``size`` bytes of hostile text on stdout (a quarter of that on
stderr) instead of its answer: escape sequences, 5,000-digit numbers, long lines, a NUL as the
last byte (exit 0, like a tool that believes it answered); the others change what the device
reports (see :mod:`ascendprep.lab.sim.fabric`).
``fcs-errors`` and ``pfc-storm`` make ``-stat -g`` counters grow (:mod:`ascendprep.lab.sim.counters`).

Product notes. ``-ping`` is documented for A2/A3 only; the simulator also answers it on Atlas 800
(910), where the reference cannot confirm it ([U]), so that the same checks run everywhere.
Atlas 800 prints the older forms seen in 910 captures: no ``link down count`` line in
``-link_stat -g`` and no ``tls preconfigured[...]`` field in ``-tls -g``. A node whose driver
profile is ``legacy`` prints an older driver's forms on every product (see
:mod:`ascendprep.lab.sim.driver_profiles`).

Not simulated (each answers like an unknown option, ``Get unknown option!``, exit 3): IPv6
(``-inet6``), ``-tls -s`` forms other than ``enable``, ``-tls -c``, ``-link -s down_fault_time``.
``-link -s down`` does not ask for the real tool's y/n confirmation, so scripts can use it.
Invocations are not logged to ``/var/log/hccn_tool``.

Result codes and their messages live in :mod:`.hccn_codes`, multi-line query texts in
:mod:`.hccn_views`, usage blocks in :mod:`.hccn_help`.
"""

from __future__ import annotations

import sys
import time

from . import counters, fabric, hccn_views, hccnconf, ipv4, optics, superpod, ub950
from .driver_profiles import is_legacy
from .hccn_codes import (
    DSMI_EXE_ERR,
    DSMI_GATEWAY_NOT_PRESET_ERR,
    DSMI_IPCONF_NOT_PRESET_ERR,
    DSMI_LINK_IS_DOWN_ERR,
    LINK_UP_RECOVERY_FAILED,
    MAJOR_CMD_DEV_ID_ERR,
    MAJOR_CMD_INVALID_ERR,
    MAJOR_CMD_LEN_ERR,
    MAJOR_CMD_NUM_ERR,
    MAJOR_CMD_TYPE_ERR,
    OK,
    PARAM_CMD_COUNT_ERR,
    PARAM_CONFLICT_IP_ADDR_ERR,
    PARAM_DIFF_SEGMT_GTWY_ERR,
    PARAM_INVALID_ERR,
    PARAM_IP_INVALID_ERR,
    PARAM_OP_NOT_SUPPORT_ERR,
    PARAM_TLS_INVALID_ENABLE_ERR,
    RECOVERY_FAILED,
    TOOL_ACCESS_CONF_FILE_ERR,
    TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR,
    TOOL_CONFIG_BROAD_ADDRESS_ERR,
    TOOL_GATEWAY_NO_IP_CONF_ERR,
    TOOL_SYS_BUSY_ERR,
    TOOL_SYS_WRITE_FILE_ERR,
    report,
)
from .hccn_help import full_help
from .identity import LabSetupError, NodeIdentity, load_identity
from .profiles import profile
from .state import DEFAULT_FLOOD_BYTES, LabStateError, edit_node, faults_for, link_is_up, read_all_nodes, read_node

#: Exit status when the simulator itself is misconfigured (no node.json, broken state dir).
LAB_ERROR_EXIT = 1

#: [I] limits of ``len_valid`` (the constants are not in the public headers).
MAX_PARAM = 64
MAX_ARGV_LEN = 128

HANG_SECONDS = 3600
PING_COUNT = 3
#: Milliseconds an echo waits on a node under the ``slow`` fault: the tbf bucket's 10 ms of traffic.
SHAPED_WAIT_MS = 10.0
VNIC_HOST_ADDRESS = "192.168.1.199"
VNIC_HOST_NETMASK = "255.255.255.0"


class Invocation:
    """One run of the tool: who we are, the device, where output goes, and the query flag."""

    def __init__(self, identity: NodeIdentity, doc: dict, attr: str, option: str, devid: int, out, err) -> None:
        self.identity = identity
        self.doc = doc
        self.attr = attr
        self.option = option
        self.devid = devid
        self.out = out
        self.err = err
        #: Set by query commands: no "Cmd executed successfully!" after them.
        self.get_flag = False

    @property
    def product(self) -> str:
        return self.doc["product"]

    @property
    def device(self) -> dict:
        return self.doc["devices"][self.devid]

    def print(self, line: str = "") -> None:
        self.out.write(line + "\n")

    def edit(self) -> edit_node:
        return edit_node(self.identity.state_dir, self.identity.node)

    def read_conf(self) -> str | None:
        return hccnconf.read_text(self.identity.hccn_conf)

    def write_conf(self, text: str) -> int:
        try:
            hccnconf.write_text(self.identity.hccn_conf, text)
        except OSError:
            return TOOL_SYS_WRITE_FILE_ERR
        return OK


# --------------------------------------------------------------------------- helpers


def _get_only(inv: Invocation, args: list[str]) -> int | None:
    """For a query that only has ``-g``: the tool's result code for other arguments, else None.

    The real tool checks the argument count first (``PARAM_CMD_COUNT_ERR``), then the operation
    (``PARAM_OP_NOT_SUPPORT_ERR``), and marks a get so that its answer is read-only.
    """
    if len(args) != 1:
        return PARAM_CMD_COUNT_ERR
    if args[0] != "-g":
        return PARAM_OP_NOT_SUPPORT_ERR
    inv.get_flag = True
    return None


def _pairs(args: list[str], allowed: tuple[str, ...]) -> dict[str, str] | int:
    """``key value key value`` -> dict; PARAM_OP_NOT_SUPPORT_ERR on an unknown key."""
    values: dict[str, str] = {}
    for index in range(0, len(args) - 1, 2):
        key = args[index]
        if key not in allowed:
            return PARAM_OP_NOT_SUPPORT_ERR
        values[key] = args[index + 1]
    return values


def _ip_conflict(doc: dict, devid: int, address: str) -> bool:
    """Conflict check of ``-ip -s``: another device's RoCE IP, the reserved vNIC /24, or (A3) the
    HCCS-reserved range (:func:`superpod.reserved_conflict`)."""
    if ipv4.parse(address) is None:
        return False
    for other, device in enumerate(doc["devices"]):
        if other != devid and device["ip"] == address:
            return True
    return ipv4.same_subnet(address, VNIC_HOST_ADDRESS, VNIC_HOST_NETMASK) or superpod.reserved_conflict(doc, address)


def _set_address(doc: dict, devid: int, address: str, netmask: str) -> int:
    """Validate (conflict first, then syntax, as the real tool) and apply an IP to the device."""
    if _ip_conflict(doc, devid, address):
        return PARAM_CONFLICT_IP_ADDR_ERR
    if not ipv4.is_valid_netmask(netmask) or not ipv4.is_valid_host_address(address, netmask):
        return PARAM_IP_INVALID_ERR
    device = doc["devices"][devid]
    device["ip"], device["netmask"] = address, netmask
    if device["gateway"] and not ipv4.same_subnet(address, device["gateway"], netmask):
        device["gateway"] = None  # the kernel drops a default route it can no longer reach
    return OK


def _recover_device(doc: dict, devid: int, conf: str) -> int:
    """Re-apply hccn.conf to one device (``-cfg recovery``); also brings an admin-down link up."""
    device = doc["devices"][devid]
    device["admin_up"] = True
    code = OK
    address = hccnconf.get_value(conf, "address", devid)
    netmask = hccnconf.get_value(conf, "netmask", devid)
    if address is not None and netmask is not None:
        code = _set_address(doc, devid, address, netmask)
    detect = hccnconf.get_value(conf, "netdetect", devid)
    if code == OK and detect is not None:
        if ipv4.parse(detect) is None:
            code = PARAM_IP_INVALID_ERR
        else:
            device["netdetect"] = detect
    gateway = hccnconf.get_value(conf, "gateway", devid)
    if code == OK and gateway is not None:
        if not device["ip"] or not ipv4.same_subnet(device["ip"], gateway, device["netmask"]):
            code = DSMI_EXE_ERR
        else:
            device["gateway"] = gateway
    tls = hccnconf.get_value(conf, "tls_enable", devid)
    if code == OK and tls in ("0", "1"):
        device["tls_enable"] = int(tls)
    device["cfg_status"] = "SUCCESS" if code == OK else "FAIL"
    return code


# --------------------------------------------------------------------------- commands


def cmd_ip(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-s":
        if len(args) != 5:
            return PARAM_CMD_COUNT_ERR
        values = _pairs(args[1:], ("address", "netmask"))
        if isinstance(values, int):
            return values
        address, netmask = values.get("address", ""), values.get("netmask", "")
        with inv.edit() as doc:
            code = _set_address(doc, inv.devid, address, netmask)
            if code != OK:
                return code
            conf = inv.read_conf() or ""
            gateway = hccnconf.get_value(conf, "gateway", inv.devid)
            if gateway is not None and not ipv4.same_subnet(address, gateway, netmask):
                conf = hccnconf.delete_value(conf, "gateway", inv.devid)
            elif gateway is not None:
                doc["devices"][inv.devid]["gateway"] = gateway
            conf = hccnconf.set_value(conf, "address", inv.devid, address)
            conf = hccnconf.set_value(conf, "netmask", inv.devid, netmask)
            return inv.write_conf(conf)
    if args[0] == "-g":
        inv.get_flag = True
        if len(args) != 1:
            return PARAM_CMD_COUNT_ERR
        if not inv.device["ip"]:
            # older drivers print nothing and succeed
            return OK if is_legacy(inv.doc) else DSMI_IPCONF_NOT_PRESET_ERR
        inv.print(f"ipaddr:{inv.device['ip']}")
        inv.print(f"netmask:{inv.device['netmask']}")
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_gateway(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-s":
        if len(args) != 3:
            return PARAM_CMD_COUNT_ERR
        if args[1] != "gateway":
            return PARAM_OP_NOT_SUPPORT_ERR
        gateway = args[2]
        with inv.edit() as doc:
            device = doc["devices"][inv.devid]
            if not device["ip"]:
                return TOOL_GATEWAY_NO_IP_CONF_ERR
            if ipv4.parse(gateway) is None:
                return PARAM_IP_INVALID_ERR
            if not ipv4.same_subnet(device["ip"], gateway, device["netmask"]):
                return PARAM_DIFF_SEGMT_GTWY_ERR
            device["gateway"] = gateway
            conf = hccnconf.set_value(inv.read_conf() or "", "gateway", inv.devid, gateway)
            return inv.write_conf(conf)
    if args[0] == "-g":
        inv.get_flag = True
        if len(args) != 1:
            return PARAM_CMD_COUNT_ERR
        if not inv.device["gateway"]:
            return DSMI_GATEWAY_NOT_PRESET_ERR
        inv.print(f"default gateway:{inv.device['gateway']}, Iface:eth{inv.devid}")
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_netdetect(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-s":
        if len(args) != 3:
            return PARAM_CMD_COUNT_ERR
        if args[1] != "address":
            return PARAM_OP_NOT_SUPPORT_ERR
        address = args[2]
        parsed = ipv4.parse(address)
        if parsed is None:
            return PARAM_IP_INVALID_ERR
        if parsed == ipv4.BROADCAST:
            return TOOL_CONFIG_BROAD_ADDRESS_ERR
        with inv.edit() as doc:
            doc["devices"][inv.devid]["netdetect"] = address
            conf = hccnconf.set_value(inv.read_conf() or "", "netdetect", inv.devid, address)
            return inv.write_conf(conf)
    if args[0] == "-g":
        inv.get_flag = True
        if len(args) != 1:
            return PARAM_CMD_COUNT_ERR
        inv.print(f"netdetect addr: {inv.device['netdetect'] or '0.0.0.0'}")
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_net_health(inv: Invocation, args: list[str]) -> int:
    refused = _get_only(inv, args)
    if refused is not None:
        return refused
    nodes = read_all_nodes(inv.identity.state_dir)
    status = fabric.net_health(nodes, inv.identity.node, inv.devid)
    if status == "Fault" and is_legacy(inv.doc):
        status = "Socket failed"  # [I] what an older driver showed for a port that cannot send
    inv.print(f"net health status: {status}")
    return OK


def cmd_lldp(inv: Invocation, args: list[str]) -> int:
    refused = _get_only(inv, args)
    if refused is not None:
        return refused
    if not link_is_up(inv.doc, inv.devid):
        # The driver refuses the query on a port whose link is down: ``Execute failed: Link
        # status is down.`` on stderr, exit 22 (DSMI_LINK_IS_DOWN_ERR, docs/ascend-reference.md §1.2).
        return DSMI_LINK_IS_DOWN_ERR
    if "lldp-empty" not in faults_for(inv.doc, inv.devid):
        inv.out.write(fabric.lldp_text(inv.device, system_name=not is_legacy(inv.doc)))
        return OK
    # Link up but no neighbour: the current profile prints nothing; the legacy one has the
    # driver's query fail, ``Command execute failed!`` with exit 1 (both read as "none").
    return DSMI_EXE_ERR if is_legacy(inv.doc) else OK


def cmd_link(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    rest = args[1:]
    if args[0] == "-s":
        if not rest:
            return PARAM_CMD_COUNT_ERR
        if rest[0] not in ("up", "down"):
            return PARAM_OP_NOT_SUPPORT_ERR
        if len(rest) != 1:
            return PARAM_CMD_COUNT_ERR
        with inv.edit() as doc:
            if rest[0] == "down":
                doc["devices"][inv.devid]["admin_up"] = False
                return OK
            doc["devices"][inv.devid]["admin_up"] = True
            conf = inv.read_conf()
            code = _recover_device(doc, inv.devid, conf) if conf is not None else OK
            if code != OK:
                inv.print(LINK_UP_RECOVERY_FAILED)
            return code
    if args[0] == "-g":
        inv.get_flag = True
        if rest:
            return PARAM_OP_NOT_SUPPORT_ERR
        inv.print(f"link status: {'UP' if link_is_up(inv.doc, inv.devid) else 'DOWN'}")
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_link_stat(inv: Invocation, args: list[str]) -> int:
    if len(args) != 1:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-g":
        inv.get_flag = True
        old_driver = is_legacy(inv.doc)
        legacy = profile(inv.product)["legacy_output"] or old_driver
        tag_word = "device" if old_driver else "devid"
        for line in hccn_views.link_stat_lines(inv.devid, inv.device, legacy, time.time(), tag_word):
            inv.print(line)
        return OK
    if args[0] == "-c":
        with inv.edit() as doc:
            device = doc["devices"][inv.devid]
            device["link_up_count"] = device["link_down_count"] = 0
            device["link_history"] = []
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_tls(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-g":
        inv.get_flag = True
        if len(args) > 2:
            return PARAM_CMD_COUNT_ERR
        if len(args) == 2 and args[1] != "host":
            return PARAM_OP_NOT_SUPPORT_ERR
        switch = inv.device["tls_enable"]
        if "tls-mismatch" in faults_for(inv.doc, inv.devid):
            switch ^= 1  # the fault: this NPU reports the other TLS setting
        if is_legacy(inv.doc):
            lines = hccn_views.tls_lines_legacy(inv.devid, switch)
        else:
            lines = hccn_views.tls_lines(inv.devid, switch, profile(inv.product)["legacy_output"])
        for line in lines:
            inv.print(line)
        conf = inv.read_conf()
        if conf is not None and hccnconf.get_value(conf, "tls_enable", inv.devid) is None:
            # The real tool saves tls_enable the first time -tls -g runs; failures are ignored.
            with inv.edit():
                fresh = inv.read_conf() or ""
                if hccnconf.get_value(fresh, "tls_enable", inv.devid) is None:
                    inv.write_conf(hccnconf.set_value(fresh, "tls_enable", inv.devid, str(inv.device["tls_enable"])))
        return OK
    if args[0] == "-s":
        rest = args[1:]
        if rest and rest[-1] == "host":
            rest = rest[:-1]
        if not rest:
            return PARAM_CMD_COUNT_ERR
        if rest[0] != "enable":
            return PARAM_OP_NOT_SUPPORT_ERR
        if len(rest) != 2:
            return PARAM_CMD_COUNT_ERR
        if rest[1] not in ("0", "1"):
            return PARAM_TLS_INVALID_ENABLE_ERR
        with inv.edit() as doc:
            doc["devices"][inv.devid]["tls_enable"] = int(rest[1])
            conf = hccnconf.set_value(inv.read_conf() or "", "tls_enable", inv.devid, rest[1])
            return inv.write_conf(conf)
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_optical(inv: Invocation, args: list[str]) -> int:
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] != "-g":
        return PARAM_OP_NOT_SUPPORT_ERR
    inv.get_flag = True
    if len(args) != 1:
        return PARAM_CMD_COUNT_ERR
    for line in optics.optical_lines(inv.doc, inv.devid):
        inv.print(line)
    return OK


def cmd_stat(inv: Invocation, args: list[str]) -> int:
    if len(args) != 1:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "-g":
        inv.get_flag = True
        render = hccn_views.stat_lines_short if is_legacy(inv.doc) else hccn_views.stat_lines
        for line in render({"counters": counters.counters_at(inv.doc, inv.devid, time.time())}):
            inv.print(line)
        return OK
    if args[0] == "-c":
        with inv.edit() as doc:
            doc["devices"][inv.devid]["counters"] = {}
            doc["devices"][inv.devid]["counters_cleared_at"] = time.time()
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


def cmd_speed(inv: Invocation, args: list[str]) -> int:
    refused = _get_only(inv, args)
    if refused is not None:
        return refused
    if is_legacy(inv.doc):
        return TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR  # older drivers have no -speed
    inv.print(optics.speed_line(inv.doc, inv.devid))
    return OK


def cmd_duplex(inv: Invocation, args: list[str]) -> int:
    """``-duplex -g``: in the same product-extension table as ``-speed`` (absent on older drivers)."""
    refused = _get_only(inv, args)
    if refused is not None:
        return refused
    if is_legacy(inv.doc):
        return TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR
    inv.print(optics.duplex_line(inv.doc, inv.devid))
    return OK


def cmd_fec(inv: Invocation, args: list[str]) -> int:
    """``-fec -g`` (910A captures show it too, so older drivers answer it)."""
    refused = _get_only(inv, args)
    if refused is not None:
        return refused
    inv.print(optics.fec_line(inv.doc, inv.devid))
    return OK


def cmd_ping(inv: Invocation, args: list[str]) -> int:
    """``-ping -g address A [pkt L]``: three echoes through the simulated fabric.

    [I] With the local link down the driver refuses before sending (``Execute failed: Link
    status is down.``, exit 22); every other failure shows as lost packets, ``recv time out``.
    A node under the lab's ``slow`` fault (tc tbf, its bucket 10 ms of traffic: lab/network.py)
    has its NPU ports modelled as that link under load: each echo from or to it waits out a
    full bucket, :data:`SHAPED_WAIT_MS` more.
    """
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] != "-g":
        return PARAM_OP_NOT_SUPPORT_ERR
    rest = args[1:]
    if len(rest) not in (2, 4):
        return PARAM_CMD_COUNT_ERR
    values = _pairs(rest, ("address", "pkt"))
    if isinstance(values, int):
        return values
    if "address" not in values:
        return PARAM_CMD_COUNT_ERR
    address = values["address"]
    if ipv4.parse(address) is None:
        return PARAM_IP_INVALID_ERR
    payload = values.get("pkt", "56")
    if not (payload.isascii() and payload.isdigit()) or int(payload) > 65507:
        return PARAM_INVALID_ERR
    inv.get_flag = True
    if not link_is_up(inv.doc, inv.devid):
        return DSMI_LINK_IS_DOWN_ERR
    nodes = read_all_nodes(inv.identity.state_dir)
    reachable = fabric.can_reach(nodes, inv.identity.node, inv.devid, address)
    inv.print(f"device {inv.devid} PING {address}")
    jitter = (time.perf_counter_ns() // 1000) % 1000
    target = fabric.locate(nodes, address)
    shaped = inv.doc.get("shaped_rate") or (target is not None and nodes[target[0]].get("shaped_rate"))
    wait = SHAPED_WAIT_MS if shaped else 0.0
    for seq in range(PING_COUNT):
        if reachable:
            millis = wait + ((1.2 + jitter / 2500) if seq == 0 else (0.030 + ((jitter * (seq + 7)) % 20) / 1000))
            inv.print(f"recv seq={seq},time={millis:f}ms")
        else:
            inv.print(f"recv time out seq={seq}")
    received = PING_COUNT if reachable else 0
    loss = 100.0 * (PING_COUNT - received) / PING_COUNT
    inv.print(f"{PING_COUNT} packets transmitted, {received} received, {loss:.2f}% packet loss")
    size = int(payload) + 42  # ICMP + IP + Ethernet headers
    with inv.edit() as doc:
        counters = doc["devices"][inv.devid]["counters"]
        for key, amount in (
            ("nic_tx_all_pkg_num", PING_COUNT),
            ("nic_tx_all_oct_num", PING_COUNT * size),
            ("mac_tx_total_pkt_num", PING_COUNT),
            ("mac_tx_total_oct_num", PING_COUNT * size),
            ("nic_rx_all_pkg_num", received),
            ("nic_rx_all_oct_num", received * size),
            ("mac_rx_total_pkt_num", received),
            ("mac_rx_total_oct_num", received * size),
        ):
            counters[key] = counters.get(key, 0) + amount
    return OK if reachable else DSMI_EXE_ERR


def cmd_cfg(inv: Invocation, args: list[str]) -> int:
    """``-i N -cfg recovery|status`` and ``-a -cfg recovery``."""
    if not args:
        return PARAM_CMD_COUNT_ERR
    if args[0] == "recovery":
        if len(args) != 1:
            return PARAM_CMD_COUNT_ERR
        with inv.edit() as doc:
            conf = inv.read_conf()
            if conf is None:
                return TOOL_ACCESS_CONF_FILE_ERR
            devids = range(len(doc["devices"])) if inv.attr == "-a" else (inv.devid,)
            for devid in devids:
                code = _recover_device(doc, devid, conf)
                if code != OK:
                    return code
        return OK
    if args[0] == "status" and inv.attr == "-i":
        inv.get_flag = True
        if len(args) != 1:
            return PARAM_CMD_COUNT_ERR
        inv.print(f"config status:{inv.device['cfg_status']}")
        return OK
    return PARAM_OP_NOT_SUPPORT_ERR


#: (attr, option) -> handler, for every simulated command.
COMMANDS = {
    ("-i", "-ip"): cmd_ip,
    ("-i", "-gateway"): cmd_gateway,
    ("-i", "-netdetect"): cmd_netdetect,
    ("-i", "-lldp"): cmd_lldp,
    ("-i", "-cfg"): cmd_cfg,
    ("-i", "-link"): cmd_link,
    ("-i", "-net_health"): cmd_net_health,
    ("-i", "-optical"): cmd_optical,
    ("-i", "-stat"): cmd_stat,
    ("-a", "-cfg"): cmd_cfg,
    ("-i", "-tls"): cmd_tls,
    ("-i", "-link_stat"): cmd_link_stat,
    ("-i", "-speed"): cmd_speed,
    ("-i", "-duplex"): cmd_duplex,
    ("-i", "-fec"): cmd_fec,
    ("-i", "-ping"): cmd_ping,
    # A3 only (lab/sim/superpod.py): the HCCS plane
    ("-i", "-vnic"): superpod.cmd_vnic,
    ("-i", "-hccs_ping"): lambda inv, args: superpod.cmd_hccs_ping(inv, args, read_all_nodes),
}


# --------------------------------------------------------------------------- driver


def _is_recovery_command(argv: list[str]) -> bool:
    """Mirror of ``hccn_is_cmd_recovery_type``: ``-cfg`` followed by ``recovery`` or ``status``."""
    for index, arg in enumerate(argv):
        if arg == "-cfg":
            return index + 1 < len(argv) and argv[index + 1] in ("recovery", "status")
    return False


def _blocking_fault(doc: dict, argv: list[str]) -> dict | None:
    """``hccn-hang``/``hccn-busy``/``hccn-flood`` applying to this call (``-i N`` picks the NPU, else any)."""
    devid = int(argv[1]) if len(argv) > 1 and argv[0] == "-i" and argv[1].isdigit() else None
    for kind in ("hccn-hang", "hccn-busy", "hccn-flood"):
        for fault in doc.get("faults", []):
            if fault["kind"] == kind and (devid is None or fault.get("npu") in (None, devid)):
                return fault
    return None


#: One block of the flood: what a broken driver or a corrupted tool might print.
_FLOOD_BLOCK = (
    b"\x1b[2J\x1b[H\x1b[1;31mipaddr:"
    + b"1234567890" * 500
    + b"\x1b[0m\n"
    + b"\x1b]0;"
    + b"\xff\xfe" * 100
    + b"\x07link status:"
    + b"9" * 5000
    + b"\r\n"
    + b"\x1b[?1049h\x1b[6n"
    + b"packets transmitted, " * 50
    + b"-" * 3000
    + b"\n"
)


def write_flood(stream, size: int) -> None:
    """``size`` bytes of repeated :data:`_FLOOD_BLOCK`, the last one a NUL."""
    if size <= 0:
        return
    whole, rest = divmod(size - 1, len(_FLOOD_BLOCK))
    for _ in range(whole):
        stream.write(_FLOOD_BLOCK)
    stream.write(_FLOOD_BLOCK[:rest] + b"\0")


def _parse_and_run(
    argv: list[str], identity: NodeIdentity, doc: dict, out, err
) -> tuple[int, Invocation | None, str, str]:
    """Checks in the real tool's order, then the command; returns (code, invocation, attr, option)."""
    argc = len(argv) + 1
    if argc <= 1 or argc >= MAX_PARAM:
        return MAJOR_CMD_NUM_ERR, None, "", ""
    if any(len(arg) > MAX_ARGV_LEN for arg in argv):
        return MAJOR_CMD_LEN_ERR, None, "", ""
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        out.write(full_help())
        return OK, None, "", ""
    if argv[0] == "-i":
        attr, option_index = "-i", 2
    elif argv[0] == "-a":
        attr, option_index = "-a", 1
    else:
        return MAJOR_CMD_TYPE_ERR, None, "", ""
    option = argv[option_index] if option_index < len(argv) else ""
    handler = COMMANDS.get((attr, option))
    if handler is None:
        return MAJOR_CMD_INVALID_ERR, None, "", ""
    devid = 0
    if attr == "-i":
        text = argv[1]
        if len(text) > 2 or not text.isdigit() or not text.isascii():
            return MAJOR_CMD_DEV_ID_ERR, None, attr, option
        devid = int(text)
        if devid >= len(doc["devices"]):
            return MAJOR_CMD_DEV_ID_ERR, None, attr, option
    inv = Invocation(identity, doc, attr, option, devid, out, err)
    return handler(inv, argv[option_index + 1 :]), inv, attr, option


def run(argv: list[str], out, err) -> int:
    """Run one ``hccn_tool`` invocation; return the shell exit status."""
    try:
        identity = load_identity()
        doc = read_node(identity.state_dir, identity.node)
    except (LabSetupError, LabStateError) as exc:
        err.write(f"hccn_tool (ascendprep lab simulator): {exc}\n")
        return LAB_ERROR_EXIT
    fault = _blocking_fault(doc, argv)
    blocked = None if fault is None else fault["kind"]
    if blocked == "hccn-hang":
        out.flush()
        time.sleep(HANG_SECONDS)
    elif blocked == "hccn-busy":
        report(TOOL_SYS_BUSY_ERR, "", "", out, err)
        return TOOL_SYS_BUSY_ERR & 0xFF
    elif blocked == "hccn-flood":
        size = int(fault.get("size", DEFAULT_FLOOD_BYTES))
        out.flush()
        err.flush()
        write_flood(getattr(out, "buffer", out), size)
        write_flood(getattr(err, "buffer", err), size // 4)
        return 0
    if doc["product"] == ub950.PRODUCT:
        # the Ascend 950 tool: mode first, per-port tables, UB, bond devices (lab/sim/ub950.py)
        try:
            return ub950.run(argv, identity, doc, out, err)
        except LabStateError as exc:
            err.write(f"hccn_tool (ascendprep lab simulator): {exc}\n")
            return LAB_ERROR_EXIT
    try:
        code, inv, attr, option = _parse_and_run(argv, identity, doc, out, err)
    except LabStateError as exc:
        err.write(f"hccn_tool (ascendprep lab simulator): {exc}\n")
        return LAB_ERROR_EXIT
    if code == OK:
        if inv is not None and not inv.get_flag:
            out.write("Cmd executed successfully!\n")
        return 0
    report(code, attr, option, out, err)
    if (code & 0xF000) not in (0x1000, 0x2000) and _is_recovery_command(argv):
        out.write(RECOVERY_FAILED + "\n")
    return code & 0xFF


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``argv`` without the program name (defaults to ``sys.argv[1:]``)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return run(args, sys.stdout, sys.stderr)
    finally:
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
