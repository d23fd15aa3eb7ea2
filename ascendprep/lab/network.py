"""The lab's management network: one bridge, one veth pair and one namespace per node.

The host side gets the subnet's first address on the bridge, so it reaches every node, and
nodes reach each other across the bridge (gloo's all-reduce runs over it). All links and
namespaces are made by a single ``ip -batch`` run (one process for the whole lab).
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Iterable

from ascendprep.lab.spec import LabSpec, NodeSpec
from ascendprep.lab.system import LabError, run, tool

NETNS_DIR = Path("/run/netns")
RATE_RE = re.compile(r"^([0-9]+)(bit|kbit|mbit|gbit)$")
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


def bridge_commands(spec: LabSpec) -> list[str]:
    """``ip -batch`` lines creating the lab bridge with the host's address on it."""
    return [
        f"link add {spec.bridge} type bridge",
        f"addr add {spec.bridge_ip}/{spec.network.prefixlen} dev {spec.bridge}",
        f"link set {spec.bridge} up",
    ]


def node_commands(spec: LabSpec, node: NodeSpec) -> list[str]:
    """``ip -batch`` lines creating a node's namespace and its veth (``eth0`` inside)."""
    return [
        f"netns add {node.netns}",
        f"link add {node.veth} type veth peer name eth0 netns {node.netns}",
        f"link set {node.veth} master {spec.bridge} up",
    ]


def ip_batch(lines: Iterable[str]) -> None:
    text = "\n".join(lines) + "\n"
    run([tool("ip"), "-batch", "-"], input=text)


def existing_netns() -> set[str]:
    try:
        return {entry.name for entry in NETNS_DIR.iterdir()}
    except FileNotFoundError:
        return set()


def existing_links() -> set[str]:
    result = run([tool("ip"), "-j", "link", "show"])
    return {link["ifname"] for link in json.loads(result.stdout or "[]")}


def delete_links(names: Iterable[str]) -> None:
    """Delete links that exist (a veth's peer goes with it, at once)."""
    present = existing_links()
    lines = [f"link del {name}" for name in names if name in present]
    if lines:
        ip_batch(lines)


def delete_netns(names: Iterable[str]) -> None:
    """Delete namespaces; the kernel tears their links down in the background afterwards.

    So delete the veths first (:func:`delete_links`): a link seen here a moment before it
    vanishes would make a later batch fail.
    """
    present = existing_netns()
    lines = [f"netns del {name}" for name in names if name in present]
    if lines:
        ip_batch(lines)


def subnet_conflicts(spec: LabSpec) -> list[str]:
    """Host addresses and routes that already use the lab's subnet (other than its own bridge)."""
    network = spec.network
    conflicts: list[str] = []
    addresses = json.loads(run([tool("ip"), "-j", "-4", "addr", "show"]).stdout or "[]")
    for link in addresses:
        if link.get("ifname") == spec.bridge:
            continue
        for info in link.get("addr_info", []):
            iface = ipaddress.IPv4Interface(f"{info['local']}/{info['prefixlen']}")
            if iface.network.overlaps(network):
                conflicts.append(f"{link['ifname']} has {iface}")
    routes = json.loads(run([tool("ip"), "-j", "-4", "route", "show"]).stdout or "[]")
    for route in routes:
        dst = route.get("dst", "default")
        # Routes the kernel adds for an address were reported with that address above.
        if dst == "default" or route.get("dev") == spec.bridge or route.get("protocol") == "kernel":
            continue
        if ipaddress.IPv4Network(dst, strict=False).overlaps(network):
            conflicts.append(f"route {dst} dev {route.get('dev')}")
    return conflicts


# --- the 'slow' fault ---------------------------------------------------------------------


def check_rate(rate: str) -> str:
    if not RATE_RE.match(rate):
        raise ValueError(f"rate {rate!r}: write it like 8mbit, 500kbit or 1gbit")
    return rate


def tbf_arguments(rate: str) -> list[str]:
    """``tbf`` parameters for ``rate``: the bucket holds 10 ms of traffic (at least 4 KiB)."""
    match = RATE_RE.match(check_rate(rate))
    assert match is not None
    bits_per_second = int(match.group(1)) * _RATE_UNITS[match.group(2)]
    burst = max(4096, bits_per_second // 8 // 100)
    return ["tbf", "rate", rate, "burst", str(burst), "latency", "400ms"]


def add_tbf(device: str, rate: str, netns: str | None = None) -> None:
    namespace = ["-n", netns] if netns else []
    run([tool("tc"), *namespace, "qdisc", "replace", "dev", device, "root", *tbf_arguments(rate)])


def remove_root_qdisc(device: str, netns: str | None = None) -> None:
    namespace = ["-n", netns] if netns else []
    shown = run([tool("tc"), *namespace, "-j", "qdisc", "show", "dev", device], check=False)
    if shown.returncode != 0:
        raise LabError(f"cannot read the qdiscs of {device}: {shown.stderr.strip()}")
    if any(q.get("kind") == "tbf" and q.get("root") for q in json.loads(shown.stdout or "[]")):
        run([tool("tc"), *namespace, "qdisc", "del", "dev", device, "root"])


def qdisc_kinds(device: str, netns: str | None = None) -> list[str]:
    """Kinds of the qdiscs on ``device`` (``tbf`` while the link is slowed)."""
    namespace = ["-n", netns] if netns else []
    shown = run([tool("tc"), *namespace, "-j", "qdisc", "show", "dev", device])
    return [q.get("kind", "") for q in json.loads(shown.stdout or "[]")]
