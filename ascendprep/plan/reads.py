"""Which probe units each area of the diff reads, so apply re-reads only what its changes depend on.

Apply compares a saved plan's ``before`` values with fresh facts just before changing anything
(:func:`ascendprep.plan.diff.reconcile`). Those fresh facts need only the areas of the host's planned
changes (:func:`ascendprep.plan.diff.area_of`): a host whose plan sets one sysctl re-reads its kernel
settings and the sysctl file, not its NPUs. Within the NPU area only the queries of the planned
kinds run (a fresh node's detect IPs need ``-netdetect -g`` and the address, not ``-gateway -g``
or ``-tls -g``: 16 hccn_tool calls instead of 32 on 8 NPUs). Plan, likewise, reads a TLS switch
only where the inventory plans one (:func:`units_for_plan`); the gateway always, since one the
inventory no longer plans is removed; each NPU's ``-dev_info`` only for an Ascend 950 inventory,
whose rank table 2.0 is built from the EIDs of every node (:data:`RANK_TABLE_V2_SECTIONS`). Pure: names in, units out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Collection, Dict, FrozenSet, Iterable, Optional, Sequence, Tuple

from ascendprep.facts.unit import ProbeUnit
from ascendprep.facts.units import UNITS
from ascendprep.plan.diff import area_of

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState, NodeDesired
    from ascendprep.plan.changes import Change

#: Units every re-read runs: the script's own settings (time limit, Ascend home) that later
#: sections are read with.
ALWAYS: Tuple[str, ...] = ("settings",)

#: Area (:data:`ascendprep.plan.diff.AREAS`) → the sections its diff reads. The NPU area needs the
#: device ids (npu-smi's list when the inventory gives no count), hccn_tool's path (the apply
#: script runs it), the four values plan diffs and /etc/hccn.conf.
AREA_SECTIONS: Dict[str, Tuple[str, ...]] = {
    "npu": (
        "tool.npu_smi",
        "npu_smi.list",
        "pci.npus",
        "npu_smi.map",
        "npus",
        "tool.hccn_tool",
        "hccn.ip",
        "hccn.gateway",
        "hccn.netdetect",
        "hccn.tls",
        "file.hccn_conf",
    ),
    "sysctl": ("sysctl", "file.sysctl"),
    "files": ("managed", "file.env"),
    "firewall": ("firewall.ufw", "firewall.firewalld", "firewall.nftables"),
}


#: What the rank table 2.0 (Ascend 950) is built from, on every node: npu-smi's chips (each
#: NPU's physical id) and each NPU's ``hccn_tool -g -dev_info`` (its UB ports and EIDs).
RANK_TABLE_V2_SECTIONS: Tuple[str, ...] = (
    "tool.npu_smi",
    "npu_smi.list",
    "npu_smi.map",
    "npus",
    "tool.hccn_tool",
    "hccn.ub_dev_info",
)


def with_rank_table_v2_reads(
    chosen: Optional[Sequence[ProbeUnit]], units: Sequence[ProbeUnit] = UNITS
) -> Tuple[ProbeUnit, ...]:
    """``chosen`` (None: none) plus what the rank table 2.0 is built from, in registry order:
    apply recomputes the table from every node's EIDs to confirm the one the plan showed."""
    sections = set(ALWAYS) | set(RANK_TABLE_V2_SECTIONS) | {unit.section for unit in chosen or ()}
    return tuple(unit for unit in units if unit.section in sections)


def units_for_areas(areas: Collection[str], units: Sequence[ProbeUnit] = UNITS) -> Tuple[ProbeUnit, ...]:
    """The units the given areas read, in registry order (an unknown area is a programming error)."""
    unknown = sorted(set(areas) - set(AREA_SECTIONS))
    if unknown:
        raise ValueError(f"unknown diff areas: {', '.join(unknown)}")
    sections = set(ALWAYS).union(*(AREA_SECTIONS[area] for area in areas))
    return tuple(unit for unit in units if unit.section in sections)


#: NPU change kind → the per-NPU query that reads its value (the section and the kind are one name).
NPU_KIND_SECTIONS: Dict[str, str] = {kind: kind for kind in ("hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls")}
#: Kinds whose step needs the NPU's address in place (the gateway must sit in its subnet, the
#: detect IP probes through it): a change of one of them re-reads the address too.
NEEDS_ADDRESS: FrozenSet[str] = frozenset({"hccn.ip", "hccn.gateway", "hccn.netdetect"})


def npu_kinds_for(changes: Iterable["Change"]) -> FrozenSet[str]:
    """The NPU kinds a host's planned changes depend on: their own, and the address when needed."""
    kinds = {change.kind for change in changes if change.kind in NPU_KIND_SECTIONS}
    if kinds & NEEDS_ADDRESS:
        kinds.add("hccn.ip")
    return frozenset(kinds)


def _without_npu_queries(units: Sequence[ProbeUnit], kinds: Collection[str]) -> Tuple[ProbeUnit, ...]:
    """``units`` less the per-NPU queries of the kinds not in ``kinds``."""
    dropped = {section for kind, section in NPU_KIND_SECTIONS.items() if kind not in kinds}
    return tuple(unit for unit in units if unit.section not in dropped)


#: The units that find npu-smi and list the NPUs: the device ids come from that list only when the
#: inventory gives no count (plan and apply read no per-chip value).
DEVICE_LISTING: FrozenSet[str] = frozenset({"tool.npu_smi", "npu_smi.list"})


def _without_device_listing(units: Sequence[ProbeUnit], npus: Optional[int]) -> Tuple[ProbeUnit, ...]:
    """``units`` less npu-smi's NPU list when the inventory gives the node's NPU count."""
    if npus is None:
        return tuple(units)
    return tuple(unit for unit in units if unit.section not in DEVICE_LISTING)


def units_for_changes(
    changes: Sequence["Change"], npus: Optional[int] = None, units: Sequence[ProbeUnit] = UNITS
) -> Tuple[ProbeUnit, ...]:
    """What apply re-reads on a host before making ``changes``: their areas, within the NPU area
    only the queries of :func:`npu_kinds_for`, and no npu-smi list when ``npus`` (the
    inventory's count for the node) says which device ids there are."""

    chosen = _without_npu_queries(
        units_for_areas({area_of(change) for change in changes}, units), npu_kinds_for(changes)
    )
    # Ascend 950 changes name a bond slot: npu-smi info -m must be read again to confirm it.
    on_950 = any(getattr(change, "bond_slot", None) is not None for change in changes)
    return _without_device_listing(chosen, None if on_950 else npus)


def planned_npu_kinds(node: "NodeDesired") -> FrozenSet[str]:
    """The NPU kinds plan judges on ``node``: the address and the gateway always (a gateway the
    inventory does not plan is one to remove, drift.npu_gateway), a detect IP and a TLS switch
    only where some NPU of the node has one."""
    kinds = {"hccn.ip", "hccn.gateway"}
    for want in node.hccn:
        if want.netdetect is not None:
            kinds.add("hccn.netdetect")
        if want.tls is not None:
            kinds.add("hccn.tls")
    return frozenset(kinds)


def units_for_plan(
    desired: "DesiredState", node_name: str, units: Sequence[ProbeUnit] = UNITS
) -> Tuple[ProbeUnit, ...]:
    """What plan reads on ``node_name`` (on top of the plan phase's choice): no ``-tls -g`` where
    the inventory plans no TLS switch, no npu-smi list where it gives
    the NPU count (except on two-die products, whose spod-info needs npu-smi's chips), and no
    firewall probe under ``firewall: leave`` (the diff would not look)."""
    node = desired.nodes[node_name]
    # A3 keeps npu-smi's list: its chips drive spod-info, which confirms the planned SDIDs; the
    # Ascend 950 keeps npu-smi for its map (npu-smi info -m), which gives each NPU's bond slot.
    product = desired.inventory.product
    listed = None if product.dies_per_npu > 1 or product.is_950 else node.node.npus
    chosen = _without_device_listing(_without_npu_queries(units, planned_npu_kinds(node)), listed)
    if product.is_950:
        # A3's spod-info passes npu-smi -c, which the 950 npu-smi rejects (card-level queries only).
        chosen = tuple(unit for unit in chosen if unit.section != "npu_smi.spod")
    else:
        # only the 950's rank table (2.0) is built from the EIDs of -dev_info
        chosen = tuple(unit for unit in chosen if unit.section != "hccn.ub_dev_info")
    if desired.firewall == "leave":
        chosen = tuple(unit for unit in chosen if unit.section not in AREA_SECTIONS["firewall"])
    return chosen
