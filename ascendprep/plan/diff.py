"""The diff: desired state vs a host's facts → the changes ``apply`` will make, per host and NPU.

Pure. Whether an item is right is :mod:`ascendprep.plan.drift`'s judgement (the same one verify's
checks use); here a drifted item becomes a typed change (:mod:`ascendprep.plan.changes`) and an item
that cannot be judged makes the host's plan incomplete. A change's ``key`` (``hccn.ip:3``,
``sysctl:net.core.somaxconn``, ``file:/etc/ascendprep/env.sh``) makes a saved plan comparable
with a fresh diff: that is how apply tells "already done" from "changed since planning".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Optional

from ascendprep.base.findings import Finding, Severity
from ascendprep.base.paths import ENV_SH, SYSCTL_FILE
from ascendprep.desired.state import DesiredState, HccnSettings, NodeDesired
from ascendprep.facts.generation import host_generation, npu_slots
from ascendprep.facts.model import HostFacts
from ascendprep.facts.system import parse_env_sh
from ascendprep.inventory import sysctl as sysctl_rules
from ascendprep.inventory.products import PRODUCTS, Generation, Product
from ascendprep.plan import drift
from ascendprep.plan.changes import (
    NPU_KINDS,
    Change,
    DisableFirewall,
    SetNpuAddress,
    SetNpuGateway,
    SetNpuNetdetect,
    SetNpuTls,
    SetSysctl,
    VariableChange,
    WriteFile,
    variable_changes,
)
from ascendprep.plan.superpods import hardware_findings


@dataclass
class HostPlan:
    """What plan found for one host: its changes, or why it could not be planned."""

    node: str
    address: str
    reachable: bool
    changes: list[Change] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: Reasons this host's plan is incomplete (unreachable, a probe failed where a value was needed).
    incomplete: list[str] = field(default_factory=list)
    error: Optional[str] = None
    #: The keys of the items that could not be judged (each one is behind a line of ``incomplete``).
    unknown: set[str] = field(default_factory=set)


#: Finding id of a host whose NPUs are of another generation than the inventory's product.
GENERATION_MISMATCH = "product.generation_mismatch"


def generation_finding(product: Product, node: str, facts: HostFacts) -> Optional[Finding]:
    """An error when the host's NPUs are Ascend 950 and the product is not, or the reverse: a 910B
    inventory on a 950 host would run npu-smi ``-c`` and set IPs on the NPU id instead of
    ``bond<slot>``, and a 950 inventory on a 910B host the reverse; neither is sent to the host."""
    seen = host_generation(facts)
    # The 950 line is the one that matters (another tool syntax, another addressing) and the one
    # the sources confirm (d806, 'A5 PCIe Card'); the 910-family ids are less certain (d802/d803
    # are [U]/[I] in docs/ascend-reference.md §4.5), so those generations are not told apart here.
    if seen is None or (seen.generation == Generation.ASCEND_950.value) == product.is_950:
        return None
    fitting = sorted(p.id for p in PRODUCTS.values() if p.generation.value == seen.generation)
    fix = (
        f"set product: {' or '.join(fitting)} for this node's cluster, or take the node out of this inventory"
        if fitting
        else "take the node out of this inventory: its product is not one ascendprep prepares yet"
    )
    return Finding(
        GENERATION_MISMATCH,
        Severity.ERROR,
        f"{node}: the inventory's product is {product.id} (Ascend {product.generation.value}) but the host's NPUs are Ascend {seen.generation} ({seen.evidence}): nothing is planned for it",
        fix,
        node=node,
    )


def _npu_change(name: str, item: drift.Drift, settings: HccnSettings, slot: Optional[int] = None) -> Change:
    """The change that sets one drifted NPU item (its kind is the key's prefix); ``slot``: the
    Ascend 950 NPU's bond slot."""
    kind = item.key.split(":")[0]
    if kind == SetNpuAddress.kind:
        return SetNpuAddress(name, item.have, settings.npu, settings.ip, settings.netmask, bond_slot=slot)
    if kind == SetNpuGateway.kind:
        return SetNpuGateway(name, item.have, settings.npu, item.set_to, bond_slot=slot)
    if kind == SetNpuNetdetect.kind:
        return SetNpuNetdetect(name, item.have, settings.npu, item.set_to, bond_slot=slot)
    return SetNpuTls(name, item.have, settings.npu, item.set_to, bond_slot=slot)


def _hccn_changes(
    node: NodeDesired,
    facts: HostFacts,
    plan: HostPlan,
    kinds: Optional[Collection[str]] = None,
    product: Optional[Product] = None,
) -> list[Change]:
    """``kinds``: judge only these NPU kinds (None: all); an unread value is not "unknown".
    ``product``: on an Ascend 950 each NPU's changes name its bond slot, which ``npu-smi info
    -m`` must give (an NPU without one cannot be planned)."""
    name = node.node.name
    judged = set(NPU_KINDS if kinds is None else kinds)
    changes: list[Change] = []
    slots = npu_slots(facts) if product is not None and product.is_950 else None
    for want in node.hccn:
        slot = None
        if slots is not None:
            slot = slots.get(want.npu)
            if slot is None:
                why = (
                    "npu-smi info -m was not read"
                    if facts.npu_chips is None
                    else "npu-smi info -m lists no slot for it"
                )
                plan.incomplete.append(f"npu {want.npu}: its bond device is unknown ({why})")
                plan.unknown |= {f"{kind}:{want.npu}" for kind in judged}
                continue
        drifts = [d for d in drift.npu_drifts(want, facts) if d.key.split(":")[0] in judged]
        address = drifts[0] if drifts and drifts[0].key.startswith(SetNpuAddress.kind + ":") else None
        if address is not None and address.unknown is not None:
            # every later step of the NPU depends on its address
            plan.incomplete.append(f"npu {want.npu}: live device settings unknown ({address.unknown})")
            plan.unknown |= {d.key for d in drifts}
            continue
        for item in drifts:
            if item.unknown is not None:
                plan.incomplete.append(
                    f"npu {want.npu}: {item.key.split(':')[0].removeprefix('hccn.')} unknown ({item.unknown})"
                )
                plan.unknown.add(item.key)
            elif item.drifted:
                changes.append(_npu_change(name, item, want, slot))
    return changes


def _sysctl_changes(node: NodeDesired, facts: HostFacts, plan: HostPlan) -> list[Change]:
    name = node.node.name
    values = drift.sysctl_drifts(node, facts)
    unknown = [d for d in values if d.unknown is not None]
    if unknown:
        keys = [d.key.split(":", 1)[1] for d in unknown]
        unreadable = [d.unknown for d in unknown if d.unknown and "cannot be read" in d.unknown]
        plan.incomplete.append(
            f"sysctl {', '.join(keys)} could not be read" + (f" ({'; '.join(unreadable)})" if unreadable else "")
        )
        plan.unknown |= {d.key for d in unknown} | {f"file:{SYSCTL_FILE}"}
        return []
    changes: list[Change] = [SetSysctl(name, d.have, d.key.split(":", 1)[1], d.set_to) for d in values if d.drifted]
    persisted = drift.sysctl_file(node, facts, values)
    if persisted.unknown is not None:
        plan.incomplete.append(f"{SYSCTL_FILE} unknown ({persisted.unknown})")
        plan.unknown.add(persisted.key)
    elif persisted.drifted:
        changes.append(WriteFile(name, persisted.have, SYSCTL_FILE, persisted.want, persisted.set_to, 0o644))
    return changes


def _env_variables(content: str, have: Optional[str], facts: HostFacts) -> Optional[tuple[VariableChange, ...]]:
    """What a new env.sh adds, changes and drops among the host's variables (the plan shows them):
    all of them when the file is new; None when it is there but its variables were not read."""
    if have is None:
        return variable_changes({}, parse_env_sh(content))
    if facts.env_sh is None:
        return None
    return variable_changes(facts.env_sh, parse_env_sh(content))


def _file_changes(node: NodeDesired, facts: HostFacts, plan: HostPlan) -> list[Change]:
    changes: list[Change] = []
    for wanted in node.files:
        item = drift.managed_file(wanted, facts)
        if item.unknown is not None:
            plan.incomplete.append(f"{wanted.path} unknown ({item.unknown})")
            plan.unknown.add(item.key)
        elif item.drifted:
            variables = _env_variables(wanted.content, item.have, facts) if wanted.path == ENV_SH else None
            changes.append(
                WriteFile(node.node.name, item.have, wanted.path, item.want, wanted.content, wanted.mode, variables)
            )
    return changes


def _firewall_changes(node: NodeDesired, facts: HostFacts, desired: DesiredState, plan: HostPlan) -> list[Change]:
    """``disable`` switches ufw/firewalld off; the rest (``check``, nftables) is reported with
    the id, severity and fix verify's ``firewall.active`` uses."""
    name = node.node.name
    policy = desired.firewall
    changes: list[Change] = []
    for item in drift.firewall(policy, facts):
        tool = item.key.split(":", 1)[1]
        disables = drift.firewall_disables(policy, tool)
        if item.unknown is not None:
            if disables:
                plan.incomplete.append(f"firewall {tool} unknown ({item.unknown})")
                plan.unknown.add(item.key)
            else:
                plan.findings.append(
                    Finding(
                        "firewall.active",
                        drift.firewall_severity(policy, tool),
                        f"{name}: could not check {tool}: {item.unknown}",
                        drift.firewall_fix(desired, tool),
                        node=name,
                    )
                )
        elif item.drifted:
            if disables:
                changes.append(DisableFirewall(name, item.have, tool))
            else:
                detail = getattr(facts.firewall, tool).detail
                plan.findings.append(
                    Finding(
                        "firewall.active",
                        drift.firewall_severity(policy, tool),
                        f"{name}: {drift.firewall_problem(tool, detail)}",
                        drift.firewall_fix(desired, tool),
                        node=name,
                    )
                )
    return changes


#: The parts of a host the diff judges, each from its own facts (:data:`ascendprep.plan.reads.AREA_SECTIONS`).
NPU_AREA, SYSCTL_AREA, FILES_AREA, FIREWALL_AREA = "npu", "sysctl", "files", "firewall"
AREAS = (NPU_AREA, SYSCTL_AREA, FILES_AREA, FIREWALL_AREA)


def area_of(change: Change) -> str:
    """The area whose facts decide ``change`` (the sysctl file belongs with the values it persists)."""
    if change.kind in NPU_KINDS:
        return NPU_AREA
    if isinstance(change, SetSysctl) or (isinstance(change, WriteFile) and change.path == SYSCTL_FILE):
        return SYSCTL_AREA
    if isinstance(change, WriteFile):
        return FILES_AREA
    if isinstance(change, DisableFirewall):
        return FIREWALL_AREA
    raise ValueError(f"no area for change kind {change.kind!r}")


def diff_host(
    desired: DesiredState,
    node_name: str,
    facts: HostFacts,
    areas: Optional[Collection[str]] = None,
    npu_kinds: Optional[Collection[str]] = None,
) -> HostPlan:
    """All changes that would bring ``node_name`` from ``facts`` to the desired state.

    ``areas``: judge only these (:data:`AREAS`); apply re-reads only the areas of its planned
    changes, and an area it did not read must not count as "unknown". None: every area.
    ``npu_kinds``: within the NPU area, judge only these kinds (``hccn.ip``, ...): apply re-reads
    only the NPU values its changes depend on (:func:`ascendprep.plan.reads.npu_kinds_for`).
    """
    node = desired.nodes[node_name]
    plan = HostPlan(node_name, node.node.host, reachable=True)
    product = desired.inventory.product
    mismatch = generation_finding(product, node_name, facts)
    if mismatch is not None:
        plan.findings.append(mismatch)
        plan.incomplete.append(mismatch.message)
        return plan
    wanted = set(AREAS if areas is None else areas)
    changes: list[Change] = []
    if NPU_AREA in wanted:
        changes += _hccn_changes(node, facts, plan, npu_kinds, product)
    if SYSCTL_AREA in wanted:
        changes += _sysctl_changes(node, facts, plan)
    if FILES_AREA in wanted:
        changes += _file_changes(node, facts, plan)
    if FIREWALL_AREA in wanted:
        changes += _firewall_changes(node, facts, desired, plan)
    plan.changes = changes
    if areas is None:
        # A3: the super-pod identity the rank table plans, against npu-smi spod-info (plan.superpods).
        plan.findings += hardware_findings(node.node, facts.superpod, facts.errors)
    return plan


def unreachable_host(desired: DesiredState, node_name: str, error: str) -> HostPlan:
    node = desired.nodes[node_name]
    return HostPlan(node_name, node.node.host, reachable=False, incomplete=[f"unreachable: {error}"], error=error)


def managed_keys(desired: DesiredState, node_name: str) -> set[str]:
    """Every change key ascendprep may ever touch on ``node_name``: its NPUs' hccn settings, the
    inventory's sysctl keys, the managed files and the firewall. A saved plan naming anything
    else was not made by ``plan`` and is refused."""
    node = desired.nodes[node_name]
    keys = {f"{kind}:{want.npu}" for want in node.hccn for kind in NPU_KINDS}
    keys |= {f"sysctl:{key}" for key in (*node.sysctl_minimums, sysctl_rules.RESERVED_PORTS)}
    keys |= {f"file:{wanted.path}" for wanted in node.files} | {f"file:{SYSCTL_FILE}"}
    keys |= {f"firewall:{tool}" for tool in drift.DISABLEABLE_FIREWALLS}
    return keys


# --------------------------------------------------------------------------------------------
# Saved plan vs a fresh diff


@dataclass(frozen=True)
class Reconciled:
    """A saved plan's changes for one host, sorted against what the host needs now.

    ``to_apply`` holds the *fresh* changes (what the inventory produces now), never the saved
    ones: the plan file only selects and confirms, it cannot say what to run. ``tampered``
    lists saved changes that no diff could have produced (a key outside the managed set, a
    key listed twice, another node): the whole plan is refused for them.
    """

    to_apply: list[Change]
    already_done: list[Change]
    stale: list[str]
    tampered: list[str] = field(default_factory=list)


def reconcile(planned: list[Change], current: list[Change], managed: Optional[set[str]] = None) -> Reconciled:
    """Compare the changes saved in a plan with a fresh diff of the same host, by value.

    A planned change that the host no longer needs is already done (a second apply, or a rerun
    after an interruption). A change needed now that the plan did not contain, or whose value
    before or after differs from the plan, means the host moved since planning: stale. A saved
    change for another node than the host it is filed under was edited by hand: tampered.
    ``managed``: the keys the host may have at all (see :func:`managed_keys`); a saved key
    outside it is tampered too.
    """
    tampered = [
        f"{_shown(c.key)}: not something ascendprep manages on this host"
        for c in planned
        if managed is not None and c.key not in managed
    ]
    by_key: dict[str, Change] = {}
    for change in planned:
        if change.key in by_key:
            tampered.append(f"{_shown(change.key)}: listed twice")
        by_key.setdefault(change.key, change)
    to_apply, stale = [], []
    for change in current:
        saved = by_key.get(change.key)
        if saved is None:
            stale.append(f"{change.describe()} (not in the plan)")
        elif saved.after != change.after:
            stale.append(
                f"{change.key}: the plan sets {_shown(saved.after)}, but {_shown(change.after)} is wanted now "
                "(the inventory, or what the hosts report for it, changed since the plan)"
            )
        elif saved.before != change.before and not _explained_by_plan(saved, planned):
            stale.append(f"{change.key}: was {_shown(saved.before)} at planning, is now {_shown(change.before)}")
        elif saved.node != change.node:
            tampered.append(f"{change.key}: the saved change is for node {_shown(saved.node, 40)}, not {change.node}")
        else:
            to_apply.append(change)
    needed = {change.key for change in current}
    done = [change for change in planned if change.key not in needed]
    return Reconciled(to_apply, done, stale, tampered)


def _shown(value: object, limit: int = 120) -> str:
    """A value from the plan file, for a message: repr'd (no raw control characters), cut short."""
    text = value if isinstance(value, str) and value.isprintable() else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _explained_by_plan(saved: Change, planned: list[Change]) -> bool:
    """Setting an NPU's IP moves its other values on the device's own account (hccn_tool drops a
    gateway that leaves the subnet), so after an interrupted apply a later step of the same NPU
    may see a different "before": that is the plan's doing, not a drift."""
    if saved.npu is None:
        return False
    return any(c.npu == saved.npu and c.kind in NPU_KINDS and c.order < saved.order for c in planned)
