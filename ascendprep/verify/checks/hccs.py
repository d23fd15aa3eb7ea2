"""``cluster.hccs``: the A3 HCCS reachability matrix within each super-pod (pure plan + verdicts).

Which pairs (O(N), like the RoCE ring of :mod:`ascendprep.verify.mesh`): inside each physical pod,
as the dies' own spod-info facts say, every die pings the same die (device id) of the next
server of its pod, in inventory order, wrapping; a pod of one server rings its dies instead
(device d to d+2, the same die plane). HCCS never crosses pods (the vNIC addresses repeat in
every pod), so no pair does. A target is the peer die's vNIC as *read* (``-vnic -g``): a die
whose vNIC or pod could not be read is named, never guessed, and its pairs cannot be checked.

A failed pair names both dies (node, device id, NPU/die, vNIC): one pair cannot tell which end
is broken, and a die whose every pair fails is the one to look at first.

A ``verify --local`` run reads only its own node, so it sends the pairs :func:`plan_local` gives:
the same rings, its peers placed where the inventory puts them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ascendprep.base.findings import Severity
from ascendprep.facts.model import HccsPingResult, HostFacts
from ascendprep.inventory.superpods import vnic_address
from ascendprep.verify.checks.context import ClusterContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped

A3 = "atlas-a3"


@dataclass(frozen=True)
class Die:
    node: str
    devid: int
    vnic: Optional[str]

    def __str__(self) -> str:
        npu, die = divmod(self.devid, 2)
        return f"{self.node} device {self.devid} (NPU {npu} die {die}, vNIC {self.vnic or 'unknown'})"


@dataclass(frozen=True)
class HccsPair:
    source: Die
    target: Die

    @property
    def subject(self) -> str:
        return f"{self.source.node}:{self.source.devid}<->{self.target.node}:{self.target.devid}"


def node_pod(facts: Optional[HostFacts]) -> Optional[int]:
    """The physical pod a node's dies report (None when none was read, or they disagree)."""
    if facts is None or not facts.superpod or not all(die.in_pod for die in facts.superpod.values()):
        return None
    pods = {die.super_pod_id for die in facts.superpod.values()}
    return pods.pop() if len(pods) == 1 else None


def pods_of(nodes: Sequence[str], facts: Mapping[str, Optional[HostFacts]]) -> Dict[int, List[str]]:
    """Pod id → its nodes in inventory order (nodes without a readable pod are left out)."""
    pods: Dict[int, List[str]] = {}
    for name in nodes:
        pod = node_pod(facts.get(name))
        if pod is not None:
            pods.setdefault(pod, []).append(name)
    return pods


def _die(facts: Mapping[str, Optional[HostFacts]], node: str, devid: int) -> Die:
    live = facts.get(node)
    npu = live.npus.get(devid) if live is not None else None
    return Die(node, devid, npu.vnic_ip if npu is not None else None)


def plan_hccs(
    nodes: Sequence[str], devids: Mapping[str, Sequence[int]], facts: Mapping[str, Optional[HostFacts]]
) -> Tuple[HccsPair, ...]:
    """The rings of each pod (see the module docstring); ``devids``: each node's planned device ids."""
    return _rings(pods_of(nodes, facts).values(), devids, lambda node, devid: _die(facts, node, devid))


def _rings(
    pods: Iterable[Sequence[str]], devids: Mapping[str, Sequence[int]], die: Callable[[str, int], Die]
) -> Tuple[HccsPair, ...]:
    """The pairs of each pod's ring (its servers in inventory order); ``die`` gives a die its vNIC."""
    pairs: List[HccsPair] = []
    seen = set()

    def add(node: str, devid: int, peer_node: str, peer: int) -> None:
        key = frozenset(((node, devid), (peer_node, peer)))
        if (node, devid) != (peer_node, peer) and key not in seen:
            seen.add(key)
            pairs.append(HccsPair(die(node, devid), die(peer_node, peer)))

    for members in pods:
        for position, node in enumerate(members):
            ids = sorted(devids.get(node, ()))
            following = members[(position + 1) % len(members)]
            for devid in ids:
                if following != node and devid in devids.get(following, ()):
                    add(node, devid, following, devid)
                plane = [d for d in ids if d % 2 == devid % 2]
                add(node, devid, node, plane[(plane.index(devid) + 1) % len(plane)])
    return tuple(pairs)


def suspects(pairs: Sequence[HccsPair], failed_subjects: set) -> Dict[Tuple[str, int], int]:
    """Dies whose every pair (two or more) failed → how many: the end to blame in a failed pair."""
    total: Dict[Tuple[str, int], int] = {}
    bad: Dict[Tuple[str, int], int] = {}
    for pair in pairs:
        for die in (pair.source, pair.target):
            key = (die.node, die.devid)
            total[key] = total.get(key, 0) + 1
            if pair.subject in failed_subjects:
                bad[key] = bad.get(key, 0) + 1
    return {key: count for key, count in bad.items() if count >= 2 and count == total[key]}


def by_source(pairs: Sequence[HccsPair]) -> Dict[str, List[Tuple[int, str]]]:
    """``{node: [(die, peer vNIC), ...]}``: what each node's HCCS script runs (pairs with a known target)."""
    work: Dict[str, List[Tuple[int, str]]] = {}
    for pair in pairs:
        if pair.target.vnic is not None:
            work.setdefault(pair.source.node, []).append((pair.source.devid, pair.target.vnic))
    return work


def plan_for(ctx_desired, facts: Mapping[str, Optional[HostFacts]]) -> Tuple[HccsPair, ...]:
    """The plan of a verify run: the inventory's nodes and their planned device ids."""
    inventory = ctx_desired.inventory
    names = [node.name for node in inventory.nodes]
    devids = {name: [settings.npu for settings in ctx_desired.nodes[name].hccn] for name in names}
    return plan_hccs(names, devids, facts)


def plan_local(ctx_desired, node: str, facts: Optional[HostFacts]) -> Tuple[HccsPair, ...]:
    """The pairs a ``verify --local`` run of ``node`` sends: those it is the source of in its pod's ring.

    Its peers are not read, so the pod is the one ``node``'s dies report, its servers are
    ``node`` and those the inventory puts in that pod (``super_pod``), in inventory order, and a
    peer die's vNIC is the driver's address for the server index the inventory gives it
    (``superpod.vnic`` checks that address on each node). Where the inventory says what the
    hardware reports, these are exactly the pairs an SSH run sends from ``node``, so the merged
    run (``--from-bundle``, which plans from every node's facts as an SSH run does) finds each
    pair's result in its source's bundle. No pod read, no pairs; an inventory without super-pods
    leaves ``node`` alone in its pod: only its in-server ring.
    """
    pod = node_pod(facts)
    if pod is None:
        return ()
    inventory = ctx_desired.inventory
    members = [n for n in inventory.nodes if n.name == node or (n.super_pod == pod and n.server_index is not None)]
    devids = {n.name: [settings.npu for settings in ctx_desired.nodes[n.name].hccn] for n in members}
    index: Dict[str, int] = {n.name: n.server_index for n in members if n.server_index is not None}

    def die(name: str, devid: int) -> Die:
        if name == node:
            return _die({node: facts}, node, devid)
        return Die(name, devid, vnic_address(index[name], devid))

    return tuple(pair for pair in _rings([[n.name for n in members]], devids, die) if pair.source.node == node)


def _evidence(pair: HccsPair, result: Optional[HccsPingResult]) -> Dict[str, object]:
    evidence: Dict[str, object] = {
        "from": {"node": pair.source.node, "device": pair.source.devid, "vnic": pair.source.vnic},
        "to": {"node": pair.target.node, "device": pair.target.devid, "vnic": pair.target.vnic},
    }
    if result is not None:
        evidence.update(
            {
                "sent": result.sent,
                "received": result.received,
                "loss_percent": result.loss_percent,
                "average_us": result.average_us,
                "max_us": result.max_us,
                "error": result.error,
            }
        )
    return evidence


_FIX = (
    "check the HCCS link of both dies (npu-smi info -t health, the device log) and that both "
    "servers are in the same super-pod; by hand: hccn_tool -i {die} -hccs_ping -g address {vnic}"
)


def _judge(pair: HccsPair, ctx: ClusterContext, indexes: Dict[str, Dict[Tuple[int, str], HccsPingResult]]) -> Verdict:
    arrow = f"{pair.source} ↔ {pair.target}"
    subject = pair.subject
    if pair.target.vnic is None:
        return could_not_check(
            f"{arrow}: the vNIC of {pair.target.node} device {pair.target.devid} could not be read",
            _evidence(pair, None),
            subject=subject,
        )
    host = ctx.hosts.get(pair.source.node)
    if host is None or host.hccs_pings is None:
        reason = (host.hccs_error if host is not None else None) or "the HCCS ping phase did not run there"
        return could_not_check(f"{arrow}: {reason}", _evidence(pair, None), subject=subject)
    result = indexes[pair.source.node].get((pair.source.devid, pair.target.vnic))
    if result is None:
        return could_not_check(
            f"{arrow}: the HCCS script did not report this ping", _evidence(pair, None), subject=subject
        )
    evidence = _evidence(pair, result)
    if result.ok:
        latency = f", average {result.average_us:g} us" if result.average_us is not None else ""
        return passed(f"{arrow}: {result.received}/{result.sent} replies{latency}", evidence, subject=subject)
    fix = _FIX.format(die=pair.source.devid, vnic=pair.target.vnic)
    error = result.error or "failed"
    if result.sent is None and any(mark in error for mark in ("timed out", "still busy", "not run:", "not installed")):
        return could_not_check(f"{arrow}: {error}", evidence, subject=subject, fix=fix)
    return failed(
        f"HCCS {arrow}: {error}", evidence, fix=fix, subject=subject, node=pair.target.node, npu=pair.target.devid
    )


def not_a3(desired) -> Optional[str]:
    product = desired.inventory.product
    return None if product.id == A3 else f"{product.id} has no HCCS super-pod plane"


def hccs(ctx: ClusterContext) -> List[Verdict]:
    facts = {name: host.facts for name, host in ctx.hosts.items()}
    if ctx.local_node is not None:
        local = ctx.hosts.get(ctx.local_node)
        pairs = plan_local(ctx.desired, ctx.local_node, local.facts if local is not None else None)
    else:
        pairs = plan_for(ctx.desired, facts)
    if not pairs:
        if not any(node_pod(f) is not None for f in facts.values()):
            return [skipped("no node reported a super-pod (spod-info), so there is no HCCS plane to ping")]
        return [skipped("no pod has two dies to pair")]
    indexes = {
        name: {(r.npu, r.target): r for r in host.hccs_pings}
        for name, host in ctx.hosts.items()
        if host.hccs_pings is not None
    }
    verdicts = [_judge(pair, ctx, indexes) for pair in pairs]
    failed_subjects = {v.subject for v in verdicts if v.node is not None}
    blame = suspects(pairs, failed_subjects)
    out = []
    for pair, verdict in zip(pairs, verdicts):
        if verdict.node is None:
            out.append(verdict)
            continue
        ends = [die for die in (pair.source, pair.target) if (die.node, die.devid) in blame]
        if len(ends) == 1:
            die = ends[0]
            message = (
                f"{verdict.message}; every HCCS pair of {die.node} device {die.devid} failed: its link is the suspect"
            )
            verdict = replace(verdict, message=message, node=die.node, npu=die.devid)
        out.append(verdict)
    return out


CHECKS: List[Check] = [
    Check(
        "cluster.hccs",
        ("cluster", "superpod"),
        "cluster",
        Severity.ERROR,
        "every die reaches its pod peers over HCCS (-hccs_ping to their vNICs)",
        "",
        hccs,
        applies=not_a3,
    ),
]
