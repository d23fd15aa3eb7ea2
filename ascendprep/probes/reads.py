"""Which probe units each area of the diff reads, so apply re-reads only what its changes depend on.

Apply compares a saved plan's ``before`` values with fresh facts just before changing anything
(:func:`ascendprep.plan.reconcile`). Those fresh facts need only the areas of the host's planned
changes (:func:`ascendprep.plan.area_of`): a host whose plan sets one sysctl re-reads its kernel
settings and the sysctl file, not its NPUs. Pure: names in, units out.
"""

from __future__ import annotations

from typing import Collection, Dict, Sequence, Tuple

from ascendprep.probes.unit import ProbeUnit
from ascendprep.probes.units import UNITS

#: Units every re-read runs: the script's own settings (time limit, Ascend home) that later
#: sections are read with.
ALWAYS: Tuple[str, ...] = ("settings",)

#: Area (:data:`ascendprep.plan.AREAS`) → the sections its diff reads. The NPU area needs the
#: device ids (npu-smi's list when the inventory gives no count), hccn_tool's path (the apply
#: script runs it), the four values plan diffs and /etc/hccn.conf.
AREA_SECTIONS: Dict[str, Tuple[str, ...]] = {
    "npu": ("tool.npu_smi", "npu_smi.list", "npus", "tool.hccn_tool", "hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls", "file.hccn_conf"),
    "sysctl": ("sysctl", "file.sysctl"),
    "files": ("managed",),
    "firewall": ("firewall.ufw", "firewall.firewalld", "firewall.nftables"),
}


def units_for_areas(areas: Collection[str], units: Sequence[ProbeUnit] = UNITS) -> Tuple[ProbeUnit, ...]:
    """The units the given areas read, in registry order (an unknown area is a programming error)."""
    unknown = sorted(set(areas) - set(AREA_SECTIONS))
    if unknown:
        raise ValueError(f"unknown diff areas: {', '.join(unknown)}")
    sections = set(ALWAYS).union(*(AREA_SECTIONS[area] for area in areas))
    return tuple(unit for unit in units if unit.section in sections)
