"""The simulated switch fabric: who can reach whom, what net_health reports, what LLDP says.

All functions are pure: they take snapshots of every node document (``state.read_all_nodes``)
and answer as the real fabric would, under these rules (docs/ascend-reference.md §1.4, §3, §9):

* A device can send only with its link up and an IP configured.
* A peer NPU address answers when some NPU of the lab has it, its link is up, and the two are
  in the same subnet (each address inside the other's subnet) or both have a gateway (routed
  fabric: the switches route between subnets).
* A gateway address answers (it is the switch's interface) when some NPU of the lab uses it as
  its gateway and it lies in the asking device's subnet.
* Atlas A3: the two dies of one NPU must sit in different subnets; when they share one, the
  die's pings fail, and the two dies never reach each other (docs/ascend-reference.md §3.3, HIXL).
* ``net_health``: link down -> ``Fault``; no netdetect -> ``Init``; ``net-health-fail`` fault
  -> ``Receive timeout``; detect IP reachable -> ``Success``; no route to it (no IP, or
  off-subnet without a gateway) -> ``Unreachable``; otherwise ``Receive timeout``.
  [I] ``Detect ip set`` (probe pending) is not modelled: probes are instantaneous here.
"""

from __future__ import annotations

from . import ipv4
from .state import faults_for, link_is_up

UNSET_DETECT = ("", "0.0.0.0")


def locate(nodes: dict[str, dict], address: str) -> tuple[str, int] | None:
    """Which (node, devid) has ``address`` as its RoCE IP (first match in lab order)."""
    for name, doc in nodes.items():
        for devid, device in enumerate(doc["devices"]):
            if device["ip"] == address:
                return name, devid
    return None


def gateway_addresses(nodes: dict[str, dict]) -> set[str]:
    """Addresses the switches answer on: every gateway some NPU of the lab is configured with."""
    return {d["gateway"] for doc in nodes.values() for d in doc["devices"] if d["gateway"]}


def _die_subnet_clash(doc: dict, devid: int) -> bool:
    """A3 only: this die shares a subnet with the other die of its NPU (pings then fail)."""
    if doc.get("product") != "atlas-a3":
        return False
    sibling = devid ^ 1
    devices = doc["devices"]
    if sibling >= len(devices):
        return False
    mine, theirs = devices[devid], devices[sibling]
    if not (mine["ip"] and theirs["ip"]):
        return False
    return ipv4.same_subnet(mine["ip"], theirs["ip"], mine["netmask"])


def _can_send(doc: dict, devid: int) -> bool:
    return link_is_up(doc, devid) and bool(doc["devices"][devid]["ip"]) and not _die_subnet_clash(doc, devid)


def can_reach(nodes: dict[str, dict], node: str, devid: int, address: str) -> bool:
    """Would an ICMP echo from ``node``/``devid`` to ``address`` get an answer?"""
    doc = nodes[node]
    if not _can_send(doc, devid):
        return False
    source = doc["devices"][devid]
    if address == source["ip"]:
        return True
    target = locate(nodes, address)
    if target is not None:
        target_node, target_devid = target
        target_doc = nodes[target_node]
        if not _can_send(target_doc, target_devid):
            return False
        if doc.get("product") == "atlas-a3" and target_node == node and target_devid // 2 == devid // 2:
            return False
        peer = target_doc["devices"][target_devid]
        same_subnet = ipv4.same_subnet(source["ip"], peer["ip"], source["netmask"]) and ipv4.same_subnet(
            source["ip"], peer["ip"], peer["netmask"]
        )
        return same_subnet or bool(source["gateway"] and peer["gateway"])
    if address in gateway_addresses(nodes):
        return ipv4.same_subnet(source["ip"], address, source["netmask"])
    return False


def has_route(device: dict, address: str) -> bool:
    """The device has somewhere to send a packet for ``address`` (own subnet or a gateway)."""
    if not device["ip"]:
        return False
    return bool(device["gateway"]) or ipv4.same_subnet(device["ip"], address, device["netmask"])


def net_health(nodes: dict[str, dict], node: str, devid: int) -> str:
    """The text ``hccn_tool -net_health -g`` prints after ``net health status: ``."""
    doc = nodes[node]
    device = doc["devices"][devid]
    if not link_is_up(doc, devid):
        return "Fault"
    detect = device["netdetect"]
    if detect in UNSET_DETECT or detect is None:
        return "Init"
    if "net-health-fail" in faults_for(doc, devid):
        return "Receive timeout"
    if can_reach(nodes, node, devid, detect):
        return "Success"
    if not has_route(device, detect):
        return "Unreachable"
    return "Receive timeout"


def _switch_mac(switch: str) -> str:
    """A stable MAC for a switch name (Huawei OUI 00:e0:fc; hash() is salted per process)."""
    digest = 0
    for byte in switch.encode():
        digest = (digest * 131 + byte) & 0xFFFFFF
    return "00:e0:fc:" + ":".join(f"{(digest >> s) & 0xFF:02x}" for s in (16, 8, 0))


def _switch_mgmt_ip(switch: str) -> str:
    digits = "".join(ch for ch in switch if ch.isdigit())
    index = int(digits) if digits else 0
    return f"10.255.{index // 250}.{index % 250 + 1}"


def lldp_text(device: dict, system_name: bool = True) -> str:
    """The neighbour TLV dump of ``-lldp -g`` (lldptool-style, docs/ascend-reference.md §1.4 layout).

    ``system_name=False``: a switch that sends no System Name TLV (seen with older drivers and
    switch configurations), whose description runs over several lines.
    """
    neighbour = device.get("lldp")
    if not neighbour:
        return ""
    switch, port = neighbour["switch"], neighbour["port"]
    lines = [
        "Chassis ID TLV",
        f"\tMAC: {_switch_mac(switch)}",
        "Port ID TLV",
        f"\tIfname: {port}",
    ]
    if system_name:
        lines += ["System Name TLV", f"\t{switch}"]
    lines += [
        "System Description TLV",
        "\tascendprep lab simulated switch",
        "\tSoftware Version: lab-sim 1.0",
    ]
    if not system_name:
        lines += ["\tCopyright (C) ascendprep lab.", "\tAll rights reserved."]
    lines += [
        "System Capabilities TLV",
        "\tSystem capabilities: Bridge, Router",
        "\tEnabled capabilities: Bridge, Router",
        "Management Address TLV",
        f"\tIPv4: {_switch_mgmt_ip(switch)}",
        "\tIfindex: 1",
        "Maximum Frame Size TLV",
        "\t9216",
        "End of LLDPDU TLV",
    ]
    return "\n".join(lines) + "\n"
