"""What the hosts say, read from their gathered facts (the same read-only gather ``plan`` runs).

Per NPU: the live device IP and netmask (``hccn_tool -i N -ip -g``), the gateway (``-gateway
-g``), the detect IP (``-netdetect -g``), and ``/etc/hccn.conf``, which hccn_tool re-applies at
boot (docs/ascend-reference.md §2): an NPU whose live value differs from the file is a conflict,
since the next reboot would change it. Per server: the NPU count, whether its NPUs have two dies
(A3), the A3 super-pod and server index (``npu-smi info -t spod-info``), the TLS switch of the NPU ports
(``-tls -g``), the driver, firmware and CANN versions, and the training interpreter's Python,
torch and torch_npu versions (``importlib.metadata``, as verify reads them). When the gather
read them (``--adopt``): the managed sysctl keys, the variables of ascendprep's env.sh and the
firewall front ends' state (:mod:`~ascendprep.adopt.settings` turns them into inventory keys).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from typing import Mapping, Optional

from ascendprep.adopt.seen import SPOD_INFO, Conflict, NodeSeen, NpuSeen, Seen
from ascendprep.adopt.settings import FIREWALL_TOOLS
from ascendprep.facts.model import HostFacts, TlsState

#: hccn.conf key (``address_0=…``) for each live value it should equal.
_CONF_KEYS = (("ip", "address"), ("netmask", "netmask"), ("gateway", "gateway"), ("detect", "netdetect"))


def _is_ipv4(text: str, netmask: bool = False) -> bool:
    """Whether a host's value is a dotted IPv4 address (a netmask: contiguous ones); inet_pton,
    which takes only the four-part dotted form, as the 32,768 NPUs of a large fleet need it fast."""
    if netmask:
        return _is_netmask(text)
    try:
        socket.inet_pton(socket.AF_INET, text)
    except (OSError, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=64)
def _is_netmask(text: str) -> bool:
    try:
        ipaddress.IPv4Network(f"0.0.0.0/{text}")
    except ValueError:
        return False
    return True


def product_of_facts(facts: HostFacts) -> Optional[str]:
    """``atlas-a3`` when npu-smi lists NPUs of two chips (dies); otherwise the facts do not tell
    an Atlas 800 from an A2 (both list one chip per NPU)."""
    if facts.npu_smi is not None and any(device.chip_count > 1 for device in facts.npu_smi.devices):
        return "atlas-a3"
    return None


def node_from_facts(name: str, host: str, facts: HostFacts, conflicts: list[Conflict]) -> NodeSeen:
    """One host's NodeSeen; what cannot be read, or disagrees with hccn.conf, goes to ``conflicts``."""
    npus: dict[int, NpuSeen] = {}
    for devid, npu in sorted(facts.npus.items()):
        values = {"ip": npu.ip, "netmask": npu.netmask, "gateway": npu.gateway, "detect": npu.netdetect}
        for key, value in values.items():
            if value is not None and not _is_ipv4(value, netmask=key == "netmask"):
                conflicts.append(
                    Conflict(
                        "not_ipv4",
                        f"{name} NPU {devid}: {key} {value[:64]!r} is not an IPv4 address; not imported",
                        name,
                    )
                )
                values[key] = None
        seen = NpuSeen(devid, values["ip"], values["netmask"], values["gateway"], values["detect"])
        npus[devid] = seen
        errors = [
            e for e in facts.errors_for("hccn.", devid) if e.probe in ("hccn.ip", "hccn.gateway", "hccn.netdetect")
        ]
        for error in errors:
            conflicts.append(
                Conflict(
                    "unread",
                    f"{name} NPU {devid}: {error.probe} could not be read ({error.kind}): {error.message[:200]}",
                    name,
                )
            )
        if facts.hccn_conf is not None:
            for attribute, key in _CONF_KEYS:
                live = getattr(seen, attribute)
                in_file = facts.hccn_conf.get(devid, key)
                if in_file is not None and live is not None and in_file != live:
                    conflicts.append(
                        Conflict(
                            "live_vs_conf",
                            f"{name} NPU {devid}: live {attribute} {live} but /etc/hccn.conf says {key}_{devid}={in_file[:64]} "
                            "(the next reboot applies the file); the live value is imported",
                            name,
                        )
                    )
    tls = {devid: _tls(npu.tls) for devid, npu in facts.npus.items() if npu.tls is not None}
    super_pod = server_index = None
    dies = [die for die in facts.superpod.values() if die.in_pod]
    if dies:
        pods = {die.super_pod_id for die in dies}
        indexes = {die.server_index for die in dies}
        if len(pods) == 1 and len(indexes) == 1:
            super_pod, server_index = pods.pop(), indexes.pop()
        else:
            conflicts.append(Conflict("superpod", f"{name}: its dies name several super-pods or server indexes", name))
    versions = {
        "driver": facts.versions.driver_version,
        "firmware": facts.versions.firmware_version,
        "cann": facts.versions.cann_version,
        "python": facts.python.python_version if facts.python is not None else None,
        "torch": facts.python.packages.get("torch") if facts.python is not None else None,
        "torch_npu": facts.python.packages.get("torch_npu") if facts.python is not None else None,
    }
    sysctl = {key: value for key, value in facts.sysctl.items() if not facts.errors_for(f"sysctl:{key}")}
    firewall: Optional[dict[str, Optional[bool]]] = None
    if any(getattr(facts.firewall, tool) is not None for tool in FIREWALL_TOOLS):
        firewall = {}
        for tool in FIREWALL_TOOLS:
            state = getattr(facts.firewall, tool)
            if facts.errors_for(f"firewall.{tool}") or (state is not None and state.installed and state.active is None):
                firewall[tool] = None
            elif state is not None and state.installed:
                firewall[tool] = state.active
    aliases = tuple(a.address for a in facts.addresses if a.family == "inet" and not a.address.startswith("127."))
    return NodeSeen(
        name=name,
        host=host,
        npus=npus,
        product=product_of_facts(facts),
        super_pod=super_pod,
        server_index=server_index,
        versions=versions,
        where=f"host {name}",
        aliases=aliases,
        tls={devid: value for devid, value in tls.items() if value is not None},
        sdids={die.devid: die.sdid for die in dies},
        sysctl=sysctl or None,
        env=facts.env_sh,
        firewall=firewall,
        sdids_from=SPOD_INFO if dies else "",
    )


def _tls(state: TlsState) -> Optional[int]:
    """The switch in effect: off without certificates ("No certificate found", docs/ascend-reference.md
    §1.4 -tls), else the switch; None when the tool did not say."""
    if not state.certificates:
        return 0
    return None if state.switch is None else (1 if state.switch == 1 else 0)


def seen_from_facts(hosts: Mapping[str, str], facts: Mapping[str, HostFacts], unreachable: Mapping[str, str]) -> Seen:
    """Every host read (``hosts``: name -> address, in order); ``unreachable`` ones are named."""
    conflicts: list[Conflict] = []
    nodes = [node_from_facts(name, hosts[name], facts[name], conflicts) for name in hosts if name in facts]
    products = {node.product or "one chip per NPU" for node in nodes}
    if len(products) > 1:
        by = {p: [n.name for n in nodes if (n.product or "one chip per NPU") == p] for p in sorted(products)}
        conflicts.append(
            Conflict(
                "two_products",
                "hosts of two products: " + "; ".join(f"{p}: {', '.join(names[:8])}" for p, names in by.items()),
            )
        )
    product = next((n.product for n in nodes if n.product), None)
    return Seen(nodes=nodes, product=product, sources=["hosts"], conflicts=conflicts, unreachable=dict(unreachable))
