"""Which NPU pairs to ping, and from which end: the plan of the ping phase (pure).

Meshes (same plane only: a ping across planes never crosses the fabric the job would use):

* ``ring`` (default): every NPU pings the same index on the next node (wrapping) and on the
  master node. That proves each rail end to end with about 2 pings per NPU, so a 64-node
  cluster needs about 16 pings per node, and the master's links, which every rank's rendezvous
  goes through, are exercised from everywhere.
* ``full``: every pair of NPUs in a plane (product rule: Atlas 800 has four planes, A3 one per die,
  A2 one per subnet/rail). Quadratic; meant for small clusters or a suspected partial fabric.

With address groups (``device_network.groups``/``rule``) a rail spans the groups where its
subnets have gateways (routed); a group subnet without a gateway is an island, and both meshes
pair its NPUs only inside their group.

A pair is unordered: one ping tests both directions (the echo and its reply). Its source is the
end best able to ping: a node that was read, has hccn_tool, where hccn_tool did not hang, and
whose link is UP. So a node whose sshd is down still has its NPUs pinged, from their peers.
Targets are the *planned* IPs: the rank table will use those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import HostFacts

MESHES = ("ring", "full")


@dataclass(frozen=True)
class Endpoint:
    node: str
    npu: int
    ip: str

    def __str__(self) -> str:
        return f"{self.node} npu {self.npu} ({self.ip})"

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "npu": self.npu, "ip": self.ip}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Endpoint":
        return cls(str(data["node"]), int(data["npu"]), str(data["ip"]))


@dataclass(frozen=True)
class PingPair:
    """Two NPUs that must reach each other; ``source`` is None when neither end can ping."""

    a: Endpoint
    b: Endpoint
    source: Optional[Endpoint]
    #: Why neither end can ping (when source is None).
    blocked: Optional[str] = None

    @property
    def target(self) -> Endpoint:
        return self.a if self.source == self.b else self.b

    @property
    def subject(self) -> str:
        return f"{self.a.node}:{self.a.npu}<->{self.b.node}:{self.b.npu}"

    def to_dict(self) -> Dict[str, Any]:
        source = self.source  # plan_pings makes it one of the ends: ``is`` first spares the field-wise ==
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "source": None if source is None else ("a" if source is self.a or source == self.a else "b"),
            "blocked": self.blocked,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PingPair":
        a, b = Endpoint.from_dict(data["a"]), Endpoint.from_dict(data["b"])
        source = {"a": a, "b": b, None: None}[data.get("source")]
        return cls(a, b, source, data.get("blocked"))


@dataclass(frozen=True)
class PingPlan:
    mesh: str
    pairs: Tuple[PingPair, ...]

    def by_source(self) -> Dict[str, List[Tuple[int, str]]]:
        """``{node: [(npu, target ip), ...]}``: what each node's ping script runs, in order."""
        out: Dict[str, List[Tuple[int, str]]] = {}
        for pair in self.pairs:
            if pair.source is not None:
                out.setdefault(pair.source.node, []).append((pair.source.npu, pair.target.ip))
        return out

    def to_dict(self) -> Dict[str, Any]:
        return {"mesh": self.mesh, "pairs": [pair.to_dict() for pair in self.pairs]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PingPlan":
        return cls(str(data["mesh"]), tuple(PingPair.from_dict(p) for p in data["pairs"]))


def mesh_pairs(desired: DesiredState, mesh: str) -> List[Tuple[Endpoint, Endpoint]]:
    """The unordered pairs of ``mesh``; the first end is the default source."""
    if mesh not in MESHES:
        raise ValueError(f"mesh must be one of {MESHES}, not {mesh!r}")
    inventory = desired.inventory
    endpoints: Dict[Tuple[str, int], Endpoint] = {}
    for node in inventory.nodes:
        for settings in desired.nodes[node.name].hccn:
            endpoints[(node.name, settings.npu)] = Endpoint(node.name, settings.npu, settings.ip)
    pairs = _ring(desired, endpoints) if mesh == "ring" else _full(desired, endpoints)
    seen: set = set()
    unique = []
    for a, b in pairs:
        first, second = (a.node, a.npu), (b.node, b.npu)
        key = (first, second) if first < second else (second, first)  # unordered: one per pair
        if first == second or key in seen:
            continue
        seen.add(key)
        unique.append((a, b))
    return unique


def _reach_key(desired: DesiredState, node: str, npu: int) -> Tuple[int, ...]:
    """NPUs with equal keys can reach each other: one rail/plane across address groups is one
    routed fabric where its subnets have gateways; a subnet without one is an island of its group."""
    ipplan = desired.ipplan
    plane_count = ipplan.plane_count or len(ipplan.planes) or 1
    rail = desired.inventory.product.plane_of(npu, plane_count)
    group = ipplan.group_by_node.get(node, 0)
    index = group * plane_count + rail
    plane = ipplan.planes[index] if index < len(ipplan.planes) else None
    return (rail,) if plane is None or plane.gateway is not None else (rail, group)


def _ring(desired: DesiredState, endpoints: Dict[Tuple[str, int], Endpoint]) -> List[Tuple[Endpoint, Endpoint]]:
    nodes = desired.inventory.nodes
    master = desired.inventory.master.name
    keys: Dict[Tuple[str, int], Tuple[int, ...]] = {}  # each NPU's reach key, made once (asked ~3 times)

    def reach(name: str, npu: int) -> Tuple[int, ...]:
        key = keys.get((name, npu))
        if key is None:
            key = keys[(name, npu)] = _reach_key(desired, name, npu)
        return key

    pairs = []
    for position, node in enumerate(nodes):
        for npu in range(node.npus):
            here = endpoints.get((node.name, npu))
            if here is None:
                continue
            key = reach(node.name, npu)
            for step in range(1, len(nodes)):
                name = nodes[(position + step) % len(nodes)].name
                following = endpoints.get((name, npu))
                if following is not None and reach(name, npu) == key:
                    pairs.append((here, following))
                    break
            on_master = endpoints.get((master, npu))
            if on_master is not None and reach(master, npu) == key:
                pairs.append((here, on_master))
    return pairs


def _full(desired: DesiredState, endpoints: Dict[Tuple[str, int], Endpoint]) -> List[Tuple[Endpoint, Endpoint]]:
    planes: Dict[Tuple[int, ...], List[Endpoint]] = {}
    for (node, npu), endpoint in endpoints.items():
        planes.setdefault(_reach_key(desired, node, npu), []).append(endpoint)
    pairs = []
    for members in planes.values():
        for i, first in enumerate(members):
            for j in range(i + 1, len(members)):
                second = members[j]
                # Alternate the default source so that each node sends about half of its pairs.
                pairs.append((first, second) if (i + j) % 2 == 0 else (second, first))
    return pairs


def _source_rank(facts: Optional[HostFacts], npu: int) -> Tuple[int, str]:
    """(2: good source, 1: can try, 0: cannot ping) and, for 0, why not."""
    if facts is None:
        return 0, "its node could not be read"
    if not facts.hccn_tool:
        return 0, "hccn_tool is not installed there"
    if any(error.kind == "timeout" for error in facts.errors_for("hccn.")):
        # A wedged driver does not recover within a run: pings from there would hang too.
        return 0, "hccn_tool hung on that node while its facts were gathered"
    live = facts.npus.get(npu)
    return (2 if live is not None and live.link == "UP" else 1), ""


def plan_pings(desired: DesiredState, facts: Mapping[str, Optional[HostFacts]], mesh: str = "ring") -> PingPlan:
    """The ping plan for ``mesh``, choosing each pair's source from what the facts say."""
    ranks: Dict[
        Tuple[str, int], Tuple[int, str]
    ] = {}  # per NPU, made once: it is in ~2 pairs, the master's in every node's

    def rank(end: Endpoint) -> Tuple[int, str]:
        known = ranks.get((end.node, end.npu))
        if known is None:
            known = ranks[(end.node, end.npu)] = _source_rank(facts.get(end.node), end.npu)
        return known

    planned = []
    for a, b in mesh_pairs(desired, mesh):
        rank_a, why_a = rank(a)
        rank_b, why_b = rank(b)
        if rank_a == 0 and rank_b == 0:
            planned.append(PingPair(a, b, None, f"{a.node} npu {a.npu}: {why_a}; {b.node} npu {b.npu}: {why_b}"))
        else:
            planned.append(PingPair(a, b, a if rank_a >= rank_b else b))
    return PingPlan(mesh, tuple(planned))
