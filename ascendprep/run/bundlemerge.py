"""Merge the node bundles of ``verify --local`` runs into one cluster's evidence (pure).

``verify --from-bundle DIR DIR...`` reads each folder with :func:`~ascendprep.run.bundle.read_bundle`
(every hostile-input rule of a single bundle applies) and hands them here. They must be node
bundles of one inventory (the same sha256), one mesh and one check selection; a node in two
bundles, or a node the inventory does not have, is refused naming both folders. Each bundle must
hold its own node's evidence as far as its node tie tells (:func:`check_ties`): written as that
node, with that inventory, not on the machine of another bundle or of another inventory node; a
node bundle without a tie (an older ascendprep's) is refused with the advice to run it again. A
node without a bundle is kept as a node that could not be read, named in the report, so the
cluster checks still judge the rest and the exit code says the cluster is not fully checked.

Pings: each node pinged every pair it is an end of (:func:`ascendprep.run.node_local.local_ping_plan`).
The merged plan is :func:`~ascendprep.verify.mesh.plan_pings` over all nodes' facts, the plan an
SSH verify would have made; each pair's result is then looked up at the end that plan chose,
which pinged it in its own run. A missing node's pairs are pinged from their other end.

The checks are judged on the newest gathering date: a certificate or support window that ended
before the newest node was read has ended for the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from ascendprep.base.hostrange import compressed
from ascendprep.desired.state import DesiredState
from ascendprep.run.bundle import Bundle, BundleError, NodeTie
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.mesh import PingPlan, plan_pings

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.inventory.load import Inventory

#: A node without a bundle, as its node.reachable result says.
MISSING = "no node bundle for {node} among the {count} given (did its verify --local run?)"


@dataclass(frozen=True)
class MergedBundles:
    """The cluster's evidence from many node bundles, and what the report says about them."""

    hosts: Dict[str, HostEvidence]
    pings: Optional[PingPlan]
    day: date
    #: Gathering dates, oldest and newest.
    days: Tuple[date, date]
    #: Node -> the folder its bundle came from.
    sources: Dict[str, str]
    missing: Tuple[str, ...]
    ssh_execs: Dict[str, int]

    def to_dict(self) -> Dict[str, object]:
        return {
            "bundles": len(self.sources),
            "sources": dict(self.sources),
            "missing": list(self.missing),
            "gathered": [self.days[0].isoformat(), self.days[1].isoformat()],
        }


def check_compatible(bundles: Sequence[Bundle], explicit_selection: bool) -> None:
    """Refuse bundles that cannot be judged together: not node bundles, another inventory,
    another mesh, another check selection (unless --only/--skip choose for all), and bundles
    that do not hold their node's own evidence (:func:`check_ties`)."""
    first = bundles[0]
    for bundle in bundles:
        where = str(bundle.path)
        if bundle.local_node is None:
            raise BundleError(
                f"{where}: the bundle of a whole verify run; only node bundles (verify --local) are merged (re-check it alone with --from-bundle {where})"
            )
        if bundle.inventory_sha256 != first.inventory_sha256:
            raise BundleError(
                f"{where}: made from another inventory (sha256 {bundle.inventory_sha256[:12]}…) than {first.path} ({first.inventory_sha256[:12]}…); "
                "merge only bundles of one inventory"
            )
        if bundle.mesh != first.mesh:
            raise BundleError(
                f"{where}: pinged the {bundle.mesh} mesh, {first.path} the {first.mesh} mesh; run every node with the same --mesh"
            )
        if not explicit_selection and bundle.selection != first.selection:
            raise BundleError(
                f"{where}: ran other checks ({_selection(bundle)}) than {first.path} ({_selection(first)}); run every node alike, or choose with --only/--skip"
            )


def _machine(tie: NodeTie) -> "tuple[Optional[str], str]":
    """Which machine wrote a bundle: its id and host name together (images cloned with one
    /etc/machine-id still differ by name; machines without an id by name alone)."""
    return tie.machine_id, tie.hostname.lower()


def check_ties(bundles: Sequence[Bundle], inventory: "Inventory") -> None:
    """Refuse a node bundle that may stand in for another node: one without its node tie (written
    before ascendprep recorded it; run verify --local there again), one whose tie names another
    node or inventory, two written on one machine, and one written on a machine whose host name
    is another node of the inventory (its name or host)."""
    names: Dict[str, str] = {}
    for entry in inventory.nodes:
        names.setdefault(entry.name.lower(), entry.name)
        names.setdefault(entry.host.lower(), entry.name)
    seen: Dict["tuple[Optional[str], str]", Bundle] = {}
    for bundle in bundles:
        where, node, tie = str(bundle.path), bundle.local_node, bundle.node_tie
        if tie is None:
            raise BundleError(
                f"{where}: the bundle of {node} does not record the machine that wrote it (an ascendprep before this one wrote it); "
                f"run verify --local on {node} again"
            )
        if tie.node != node:
            raise BundleError(f"{where}: holds {node}'s evidence but was written as {tie.node!r}'s bundle; refused")
        if tie.inventory_sha256 != bundle.inventory_sha256:
            raise BundleError(
                f"{where}: {node}'s bundle was written with another inventory than the copy it holds; refused"
            )
        host = tie.hostname.lower()
        other = names.get(host) or names.get(host.split(".", 1)[0])
        if other is not None and other != node:
            raise BundleError(
                f"{where}: the bundle of {node} was written on the machine named {tie.hostname}, which is the inventory's node {other}; "
                f"refused (run verify --local on {node} itself)"
            )
        twin = seen.setdefault(_machine(tie), bundle)
        if twin is not bundle:
            raise BundleError(
                f"{where}: the bundles of {twin.local_node} ({twin.path}) and {node} were written on one machine ({tie.hostname}); "
                "one stands in for the other node: refused"
            )


def _selection(bundle: Bundle) -> str:
    parts = [f"--{key} {','.join(values)}" for key, values in sorted(bundle.selection.items()) if values]
    return " ".join(parts) or "all checks"


def merge_bundles(bundles: Sequence[Bundle], desired: DesiredState, with_pings: bool) -> MergedBundles:
    """One cluster's evidence from node bundles already checked by :func:`check_compatible`."""
    inventory = desired.inventory
    known = {node.name for node in inventory.nodes}
    sources: Dict[str, str] = {}
    hosts: Dict[str, HostEvidence] = {}
    execs: Dict[str, int] = {}
    for bundle in bundles:
        name = bundle.local_node
        assert name is not None
        if name not in known:
            raise BundleError(
                f"{bundle.path}: the bundle of {name!r}, which is not a node of {bundle.inventory_path}; refused"
            )
        if name in sources:
            raise BundleError(
                f"{bundle.path}: a second bundle of {name} (the first: {sources[name]}); give each node's bundle once"
            )
        sources[name] = str(bundle.path)
        hosts[name] = bundle.hosts[name]
        if name in bundle.ssh_execs:
            execs[name] = bundle.ssh_execs[name]
    check_ties(bundles, inventory)
    missing = tuple(node.name for node in inventory.nodes if node.name not in sources)
    for node in inventory.nodes:
        if node.name not in hosts:
            hosts[node.name] = HostEvidence(
                node.name, node.host, None, error=MISSING.format(node=node.name, count=len(bundles)), error_kind="error"
            )
    ordered = {node.name: hosts[node.name] for node in inventory.nodes}
    days = sorted(bundle.day for bundle in bundles)
    pings = (
        plan_pings(desired, {name: host.facts for name, host in ordered.items()}, bundles[0].mesh)
        if with_pings
        else None
    )
    return MergedBundles(ordered, pings, days[-1], (days[0], days[-1]), sources, missing, execs)


def describe(merged: MergedBundles) -> List[str]:
    """The text report's opening lines for a merge."""
    oldest, newest = merged.days
    when = oldest.isoformat() if oldest == newest else f"between {oldest.isoformat()} and {newest.isoformat()}"
    lines = [f"Merged {len(merged.sources)} node bundles (gathered {when}); no host was contacted."]
    if merged.missing:
        lines.append(f"No bundle for {compressed(list(merged.missing))}: not checked, reported as not read.")
    return lines


def bundle_paths(first: Path, more: Sequence[Path]) -> List[Path]:
    """The folders given, in order, each once (a glob may name one twice)."""
    seen: List[Path] = []
    for path in (first, *more):
        if path not in seen:
            seen.append(path)
    return seen
