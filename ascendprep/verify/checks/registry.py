"""Every check, in the order they run and are reported, and ``--only``/``--skip`` selection.

A selector is a check id (``network.link``) or a group (``network``). Prerequisites run whenever
a check that needs them runs, even if skipped by name: without ``node.reachable`` a "network"
check could not tell "unreachable" from "fine".
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import FrozenSet, Iterable, List, Tuple

from ascendprep.verify.checks import (
    a3env,
    blockers,
    cluster,
    counters,
    hccs,
    host,
    hostname,
    jobenv,
    network,
    node,
    npu_firmware,
    optics,
    ports,
    reachability,
    software,
    superpod,
    ub,
)
from ascendprep.verify.checks.model import Check

CHECKS: Tuple[Check, ...] = tuple(
    node.CHECKS
    + network.CHECKS
    + optics.CHECKS
    + ports.CHECKS
    + counters.CHECKS
    + host.CHECKS
    + hostname.CHECKS
    + blockers.CHECKS
    + software.CHECKS
    + jobenv.CHECKS
    + cluster.CHECKS
    + ports.CLUSTER_CHECKS
    + npu_firmware.CHECKS
    + reachability.CHECKS
    + superpod.CHECKS
    + hccs.CHECKS
    + a3env.CHECKS  # A3 super-pods
    + ub.CHECKS  # Ascend 950 UB ports
)
BY_ID = {check.id: check for check in CHECKS}
GROUPS: Tuple[str, ...] = tuple(dict.fromkeys(group for check in CHECKS for group in check.groups))


class SelectionError(ValueError):
    """A selector that names no check or group; the message suggests the closest."""


def split_selectors(values: Iterable[str]) -> FrozenSet[str]:
    """``("network,files", "node.reachable")`` → the set of names (options are repeatable lists)."""
    return frozenset(part.strip() for value in values for part in value.split(",") if part.strip())


def _check_names(names: FrozenSet[str], option: str) -> None:
    known = list(BY_ID) + list(GROUPS)
    for name in sorted(names):
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (groups: {', '.join(GROUPS)})"
            raise SelectionError(f"{option} {name}: no such check or group{hint}")


@dataclass(frozen=True)
class Selection:
    only: FrozenSet[str] = frozenset()
    skip: FrozenSet[str] = frozenset()

    @classmethod
    def parse(cls, only: Iterable[str] = (), skip: Iterable[str] = ()) -> "Selection":
        selection = cls(split_selectors(only), split_selectors(skip))
        _check_names(selection.only, "--only")
        _check_names(selection.skip, "--skip")
        return selection

    def _named(self, check: Check, names: FrozenSet[str]) -> bool:
        return check.id in names or any(group in names for group in check.groups)

    def wants(self, check: Check) -> bool:
        return (not self.only or self._named(check, self.only)) and not self._named(check, self.skip)

    def checks(self) -> List[Check]:
        """Selected checks plus their prerequisites, in registry order."""
        chosen = {check.id for check in CHECKS if self.wants(check)}
        pending = list(chosen)
        while pending:
            for required in BY_ID[pending.pop()].requires:
                if required not in chosen:
                    chosen.add(required)
                    pending.append(required)
        return [check for check in CHECKS if check.id in chosen]

    @property
    def needs_pings(self) -> bool:
        return any(check.id == "cluster.reachability" for check in self.checks())

    @property
    def needs_hccs(self) -> bool:
        """The A3 HCCS ping phase runs only for ``cluster.hccs``."""
        return any(check.id == "cluster.hccs" for check in self.checks())

    def to_dict(self) -> dict:
        return {"only": sorted(self.only), "skip": sorted(self.skip)}
