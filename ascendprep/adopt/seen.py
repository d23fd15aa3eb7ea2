"""What is there: one model of a running cluster, whichever source it was read from.

The three readers (:mod:`~ascendprep.adopt.deployer`, :mod:`~ascendprep.adopt.ranktable`,
:mod:`~ascendprep.adopt.hostfacts`) each give a :class:`Seen`; :func:`merge` lays one over another
(a rank table for ranks and addresses, the hosts for netmasks, gateways, detect IPs and
versions). The compactor (:mod:`~ascendprep.adopt.compact`) turns a ``Seen`` into an inventory.

A value that a source does not give is None ("not said"), never a guess; what the sources
disagree on, or what no inventory could reproduce, is a :class:`Conflict`, kept and reported.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Optional

#: Software keys an imported inventory may pin (the inventory's ``software:``): the Ascend stack
#: and the training interpreter's Python, torch and torch_npu, as verify's software checks read them.
VERSION_KEYS = ("driver", "firmware", "cann", "python", "torch", "torch_npu")

#: ``NodeSeen.sdids_from`` of SDIDs the dies reported themselves.
SPOD_INFO = "npu-smi spod-info"


@dataclass(frozen=True)
class NpuSeen:
    """The device network of one NPU (one hccn_tool device id) as a source states it."""

    devid: int
    ip: Optional[str] = None
    netmask: Optional[str] = None
    gateway: Optional[str] = None
    detect: Optional[str] = None
    #: Which of ip, netmask, gateway, detect the source states (a None it states means "not
    #: set"; one it does not state means "not known": a rank table says nothing of gateways).
    said: frozenset[str] = frozenset(("ip", "netmask", "gateway", "detect"))

    @functools.cached_property
    def network(self) -> Optional[ipaddress.IPv4Network]:
        """The NPU's subnet, when both its address and netmask are known (computed once, and the
        same object for every NPU of one subnet: a 4,096-server import asks for 32,768)."""
        if self.ip is None or self.netmask is None:
            return None
        mask, prefix = _mask(self.netmask)
        return _subnet(int.from_bytes(socket.inet_pton(socket.AF_INET, self.ip), "big") & mask, prefix)


@functools.lru_cache(maxsize=64)
def _mask(netmask: str) -> tuple[int, int]:
    network = ipaddress.IPv4Network(f"0.0.0.0/{netmask}")
    return int(network.netmask), network.prefixlen


@functools.lru_cache(maxsize=65536)
def _subnet(first: int, prefix: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network((first, prefix))


@dataclass(frozen=True)
class NodeSeen:
    """One server: its name and management address, its NPUs, super-pod place and versions."""

    name: str
    host: str
    #: Device id -> what the source says of it; the keys are the NPUs the node has.
    npus: dict[int, NpuSeen]
    product: Optional[str] = None
    user: Optional[str] = None
    super_pod: Optional[int] = None
    server_index: Optional[int] = None
    versions: dict[str, Optional[str]] = field(default_factory=dict)
    #: Where the node was read from, for messages ("deployer.ini:12", "rank table server_list[3]").
    where: str = ""
    #: Other addresses the node is known by (its interfaces' IPv4 addresses), to match it with
    #: a rank table's ``server_id``/``host_ip`` or a deployer file's host.
    aliases: tuple[str, ...] = ()
    #: Device id -> the TLS switch in effect (1 on, 0 off: ``hccn_tool -i N -tls -g``, a port
    #: without certificates runs without TLS), for the NPUs whose state was read.
    tls: dict[int, int] = field(default_factory=dict)
    #: Device id -> its ``rank_id``, when a rank table gave them.
    ranks: dict[int, int] = field(default_factory=dict)
    #: A3: device id -> its SDID (``super_device_id``), from a 1.2 rank table or from the die
    #: itself (``npu-smi info -t spod-info``); ``sdids_from`` says which, for messages.
    sdids: dict[int, int] = field(default_factory=dict)
    sdids_from: str = ""
    #: The host settings ``--adopt`` can import, None where not read: the managed sysctl keys'
    #: values, the variables of ascendprep's env.sh, and installed firewall front end -> active
    #: (None: its state could not be read).
    sysctl: Optional[dict[str, str]] = None
    env: Optional[dict[str, str]] = None
    firewall: Optional[dict[str, Optional[bool]]] = None


@dataclass(frozen=True)
class Conflict:
    """Something in what is there that the inventory cannot or should not hide."""

    kind: str
    message: str
    node: Optional[str] = None
    #: True when the imported inventory cannot reproduce it (an error, exit 1).
    error: bool = True


@dataclass
class Seen:
    """A cluster as read: nodes in source order, the product when a source says it, what went wrong."""

    nodes: list[NodeSeen]
    product: Optional[str] = None
    sources: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: Hosts that could not be read, with why (the rest are still imported).
    unreachable: dict[str, str] = field(default_factory=dict)
    #: Whether the rank table said how the ranks are ordered (a 1.0 or 1.2 table's presence).
    rank_table: bool = False


def merge(base: Seen, over: Seen) -> Seen:
    """``base`` with what ``over`` says filled in where ``base`` says nothing (node by node name or
    host), and a conflict where both say something different of the same NPU.

    Nodes keep ``base``'s order; nodes only ``over`` has are added after. Used for "a rank table
    for ranks and addresses, the hosts for the rest": ``merge(rank_table, hosts)``.
    """
    conflicts = list(base.conflicts) + list(over.conflicts)
    by_key: dict[str, NodeSeen] = {}
    # an address every host has (docker0's 172.17.0.1, say) names none of them
    shared = Counter(alias for node in over.nodes for alias in set(node.aliases))
    for node in over.nodes:
        for key in (node.name, node.host, *(a for a in node.aliases if shared[a] == 1)):
            by_key.setdefault(key, node)
    used: set[str] = set()
    nodes = []
    for node in base.nodes:
        other = next((by_key[k] for k in (node.name, node.host, *node.aliases) if k in by_key), None)
        if other is None:
            nodes.append(node)
            continue
        used.add(other.name)
        npus = dict(node.npus)
        for devid, theirs in other.npus.items():
            mine = npus.get(devid)
            if mine is None:
                npus[devid] = theirs
                continue
            values: dict = {}
            for key in ("ip", "netmask", "gateway", "detect"):
                a, b = getattr(mine, key), getattr(theirs, key)
                if key in mine.said and key in theirs.said and a != b:
                    conflicts.append(
                        Conflict(
                            "sources_differ",
                            f"{node.name} NPU {devid}: {key} is {a} in {node.where or base.sources} but {b} in {other.where or over.sources}",
                            node.name,
                        )
                    )
                values[key] = a if key in mine.said else b
            npus[devid] = NpuSeen(devid, **values, said=mine.said | theirs.said)
        # the die's own word (spod-info) wins over a table's: HCCL checks the table against it
        sdid_source = other if other.sdids and (other.sdids_from == SPOD_INFO or not node.sdids) else node
        for devid in sorted(set(node.sdids) & set(other.sdids)):
            if node.sdids[devid] != other.sdids[devid]:
                conflicts.append(
                    Conflict(
                        "sdid",
                        f"{node.name} die {devid}: SDID {node.sdids[devid]} in {node.sdids_from or base.sources} "
                        f"but {other.sdids[devid]} in {other.sdids_from or over.sources}",
                        node.name,
                    )
                )
        nodes.append(
            replace(
                node,
                npus=npus,
                # the hosts' own name and address win over a rank table's server_id
                name=other.name if node.name == node.host else node.name,
                host=other.host if node.name == node.host else node.host,
                product=node.product or other.product,
                user=node.user or other.user,
                super_pod=node.super_pod if node.super_pod is not None else other.super_pod,
                server_index=node.server_index if node.server_index is not None else other.server_index,
                versions={**other.versions, **{k: v for k, v in node.versions.items() if v is not None}},
                tls={**other.tls, **node.tls},
                ranks=node.ranks or other.ranks,
                sysctl=node.sysctl if node.sysctl is not None else other.sysctl,
                env=node.env if node.env is not None else other.env,
                firewall=node.firewall if node.firewall is not None else other.firewall,
                sdids=sdid_source.sdids,
                sdids_from=sdid_source.sdids_from,
            )
        )
    nodes += [node for node in over.nodes if node.name not in used]
    product = base.product or over.product
    if base.product and over.product and base.product != over.product:
        conflicts.append(
            Conflict("two_products", f"{base.sources} say {base.product} but {over.sources} say {over.product}")
        )
    return Seen(
        nodes=nodes,
        product=product,
        sources=base.sources + over.sources,
        conflicts=conflicts,
        unreachable={**base.unreachable, **over.unreachable},
        rank_table=base.rank_table or over.rank_table,
    )
