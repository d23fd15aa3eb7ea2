"""The diff: desired state vs a host's facts → the changes ``apply`` will make, per host and NPU.

Pure. A :class:`Change` has a stable ``key`` (``hccn.ip:3``, ``sysctl:net.core.somaxconn``,
``file:/etc/ascendprep/env.sh``), the value seen (``before``) and the value wanted (``after``), a
line for people, and the ``action`` that apply renders into its script. Keys make a saved plan
comparable with a fresh diff: that is how apply tells "already done" from "changed since planning".
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from ascendprep import sysctl as sysctl_rules
from ascendprep.desired import DesiredState, NodeDesired, sysctl_target
from ascendprep.envfiles import render_sysctl_conf
from ascendprep.facts import HostFacts, NpuFacts
from ascendprep.findings import Finding, Severity
from ascendprep.probes.paths import SYSCTL_FILE


@dataclass(frozen=True)
class Change:
    node: str
    key: str
    summary: str
    before: Optional[str]
    after: Optional[str]
    action: dict[str, Any] = field(default_factory=dict)
    npu: Optional[int] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Change":
        return cls(**data)


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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _in_subnet(ip: Optional[str], other_ip: str, netmask: str) -> bool:
    if not ip:
        return False
    try:
        network = ipaddress.IPv4Network(f"{other_ip}/{netmask}", strict=False)
        return ipaddress.IPv4Address(ip) in network
    except ValueError:
        return False


def _hccn_changes(node: NodeDesired, facts: HostFacts, plan: HostPlan) -> list[Change]:
    name = node.node.name
    conf = facts.hccn_conf
    changes: list[Change] = []
    for want in node.hccn:
        npu = want.npu
        live: Optional[NpuFacts] = facts.npus.get(npu)
        if live is None or facts.errors_for("hccn.ip", npu):
            reason = "; ".join(e.message for e in facts.errors_for("hccn.", npu)) or "not reported by hccn_tool"
            plan.incomplete.append(f"npu {npu}: live device settings unknown ({reason})")
            continue
        file_ip = conf.get(npu, "address") if conf else None
        file_mask = conf.get(npu, "netmask") if conf else None
        ip_changes = (live.ip, live.netmask, file_ip, file_mask) != (want.ip, want.netmask, want.ip, want.netmask)
        if ip_changes:
            before = f"{live.ip}/{live.netmask}" if live.ip else "none"
            stale = file_ip is not None and file_ip != live.ip
            note = f" (/etc/hccn.conf says {file_ip})" if stale else (" (not in /etc/hccn.conf)" if live.ip == want.ip else "")
            changes.append(Change(name, f"hccn.ip:{npu}", f"npu {npu}: ip {before}{note} → {want.ip}/{want.netmask}", before if not note else f"{before}{note}", f"{want.ip}/{want.netmask}", {"op": "hccn_ip", "npu": npu, "address": want.ip, "netmask": want.netmask}, npu))
        if want.gateway:
            file_gw = conf.get(npu, "gateway") if conf else None
            dropped = ip_changes and not _in_subnet(live.gateway, want.ip, want.netmask)
            if live.gateway != want.gateway or file_gw != want.gateway or dropped:
                before = live.gateway or "none"
                changes.append(Change(name, f"hccn.gateway:{npu}", f"npu {npu}: gateway {before} → {want.gateway}", before, want.gateway, {"op": "hccn_gateway", "npu": npu, "gateway": want.gateway}, npu))
        if want.netdetect:
            file_nd = conf.get(npu, "netdetect") if conf else None
            if live.netdetect != want.netdetect or file_nd != want.netdetect:
                before = live.netdetect or "none"
                changes.append(Change(name, f"hccn.netdetect:{npu}", f"npu {npu}: netdetect {before} → {want.netdetect}", before, want.netdetect, {"op": "hccn_netdetect", "npu": npu, "address": want.netdetect}, npu))
        if want.tls is not None:
            have = live.tls.switch if live.tls is not None and live.tls.certificates else None
            if live.tls is not None and not live.tls.certificates and want.tls == 0:
                have = 0  # no certificates: TLS is effectively off already (reference §1.4 -tls)
            if have != want.tls:
                before = "unknown" if have is None else str(have)
                changes.append(Change(name, f"hccn.tls:{npu}", f"npu {npu}: tls switch {before} → {want.tls}", before, str(want.tls), {"op": "hccn_tls", "npu": npu, "enable": want.tls}, npu))
    return changes


def _sysctl_changes(node: NodeDesired, facts: HostFacts, plan: HostPlan) -> list[Change]:
    name = node.node.name
    missing = [key for key in (*node.sysctl_minimums, sysctl_rules.RESERVED_PORTS) if key not in facts.sysctl]
    if missing:
        plan.incomplete.append(f"sysctl {', '.join(missing)} could not be read")
        return []
    target = sysctl_target(node, facts.sysctl)
    changes = []
    for key, value in target.items():
        have = facts.sysctl.get(key, "").strip()
        if key == sysctl_rules.RESERVED_PORTS:
            needed = not sysctl_rules.covers(have, node.reserved_ports)
        else:
            needed = have != str(value)
        if needed:
            note = "" if sysctl_rules.is_allowed_key(key) else " (opt-in: outside the HCCL allow-list)"
            changes.append(Change(name, f"sysctl:{key}", f"sysctl {key} {have or '(empty)'} → {value}{note}", have, str(value), {"op": "sysctl", "key": key, "value": str(value)}))
    content = render_sysctl_conf(target)
    current = facts.sysctl_file.raw if facts.sysctl_file else None
    if current != content:
        verb = "create" if current is None else "update"
        changes.append(Change(name, f"file:{SYSCTL_FILE}", f"{SYSCTL_FILE}: {verb}", _sha(current) if current is not None else None, _sha(content), {"op": "write_file", "path": SYSCTL_FILE, "content": content, "mode": 0o644}))
    return changes


def _file_changes(node: NodeDesired, facts: HostFacts) -> list[Change]:
    changes = []
    for wanted in node.files:
        have = facts.managed_files.get(wanted.path)
        digest = _sha(wanted.content)
        if have is not None and have.exists and have.sha256 == digest:
            continue
        verb = "create" if have is None or not have.exists else "update"
        before = have.sha256 if have is not None and have.exists else None
        changes.append(Change(node.node.name, f"file:{wanted.path}", f"{wanted.path}: {verb}", before, digest, {"op": "write_file", "path": wanted.path, "content": wanted.content, "mode": wanted.mode}))
    return changes


def _firewall_changes(node: NodeDesired, facts: HostFacts, policy: str, plan: HostPlan) -> list[Change]:
    name = node.node.name
    if policy == "leave":
        return []
    changes = []
    for tool in ("ufw", "firewalld"):
        state = getattr(facts.firewall, tool)
        if state is None or not state.installed or not state.active:
            continue
        if policy == "disable":
            changes.append(Change(name, f"firewall:{tool}", f"firewall {tool}: active → disabled", "active", "inactive", {"op": "firewall_disable", "tool": tool}))
        else:
            plan.findings.append(Finding("firewall.active", Severity.WARNING, f"{name}: {tool} is active and may block HCCL ports", "set firewall: disable in the inventory, or open 60000-60031 and the master port", node=name))
    nft = facts.firewall.nftables
    if nft is not None and nft.active and policy in ("disable", "check"):
        plan.findings.append(Finding("firewall.nftables", Severity.WARNING, f"{name}: an nftables ruleset is loaded ({nft.detail or 'tables present'}); ascendprep does not flush it", "review the ruleset: HCCL needs ports 60000-60031 and the master port between nodes", node=name))
    return changes


def diff_host(desired: DesiredState, node_name: str, facts: HostFacts) -> HostPlan:
    """All changes that would bring ``node_name`` from ``facts`` to the desired state."""
    node = desired.nodes[node_name]
    plan = HostPlan(node_name, node.node.host, reachable=True)
    changes = _hccn_changes(node, facts, plan)
    changes += _sysctl_changes(node, facts, plan)
    changes += _file_changes(node, facts)
    changes += _firewall_changes(node, facts, desired.firewall, plan)
    plan.changes = changes
    return plan


def unreachable_host(desired: DesiredState, node_name: str, error: str) -> HostPlan:
    node = desired.nodes[node_name]
    return HostPlan(node_name, node.node.host, reachable=False, incomplete=[f"unreachable: {error}"], error=error)


def managed_keys(desired: DesiredState, node_name: str) -> set[str]:
    """Every change key ascendprep may ever touch on ``node_name``: its NPUs' hccn settings, the
    inventory's sysctl keys, the managed files and the firewall. A saved plan naming anything
    else was not made by ``plan`` and is refused."""
    node = desired.nodes[node_name]
    keys = {f"{kind}:{want.npu}" for want in node.hccn for kind in ("hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls")}
    keys |= {f"sysctl:{key}" for key in (*node.sysctl_minimums, sysctl_rules.RESERVED_PORTS)}
    keys |= {f"file:{wanted.path}" for wanted in node.files} | {f"file:{SYSCTL_FILE}"}
    keys |= {"firewall:ufw", "firewall:firewalld"}
    return keys


# --------------------------------------------------------------------------------------------
# Saved plan vs a fresh diff


@dataclass(frozen=True)
class Reconciled:
    """A saved plan's changes for one host, sorted against what the host needs now.

    ``to_apply`` holds the *fresh* changes (what the inventory produces now), never the saved
    ones: the plan file only selects and confirms, it cannot say what to run. ``tampered``
    lists saved changes that no diff could have produced (another action, a key outside the
    managed set): the whole plan is refused for them.
    """

    to_apply: list[Change]
    already_done: list[Change]
    stale: list[str]
    tampered: list[str] = field(default_factory=list)


def reconcile(planned: list[Change], current: list[Change], managed: Optional[set[str]] = None) -> Reconciled:
    """Compare the changes saved in a plan with a fresh diff of the same host.

    A planned change that the host no longer needs is already done (a second apply, or a rerun
    after an interruption). A change needed now that the plan did not contain, or whose value
    before or after differs from the plan, means the host moved since planning: stale. A saved
    change with the same key and values as the fresh one but another action (or node, NPU) was
    edited by hand: tampered. ``managed``: the keys the host may have at all (see
    :func:`managed_keys`); a saved key outside it is tampered too.
    """
    tampered = [f"{_shown(c.key)}: not something ascendprep manages on this host" for c in planned if managed is not None and c.key not in managed]
    by_key: dict[str, Change] = {}
    for change in planned:
        if change.key in by_key:
            tampered.append(f"{_shown(change.key)}: listed twice")
        by_key.setdefault(change.key, change)
    to_apply, stale = [], []
    for change in current:
        saved = by_key.get(change.key)
        if saved is None:
            stale.append(f"{change.summary} (not in the plan)")
        elif saved.after != change.after:
            stale.append(f"{change.key}: the plan sets {_shown(saved.after)}, the inventory now wants {change.after}")
        elif saved.before != change.before and not _explained_by_plan(saved, change, planned):
            stale.append(f"{change.key}: was {_shown(saved.before)} at planning, is now {change.before}")
        elif (saved.action, saved.node, saved.npu) != (change.action, change.node, change.npu):
            tampered.append(f"{change.key}: the saved change does not do what the inventory asks ({_differs(saved, change)})")
        elif saved.before == change.before and saved.summary != change.summary:
            tampered.append(f"{change.key}: the saved summary {_shown(saved.summary)} is not what this change does ({change.summary})")
        else:
            to_apply.append(change)
    needed = {change.key for change in current}
    done = [change for change in planned if change.key not in needed]
    return Reconciled(to_apply, done, stale, tampered)


def _shown(value: object, limit: int = 120) -> str:
    """A value from the plan file, for a message: repr'd (no raw control characters), cut short."""
    text = value if isinstance(value, str) and value.isprintable() else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _differs(saved: Change, fresh: Change) -> str:
    parts = []
    if saved.action.get("op") != fresh.action.get("op"):
        parts.append(f"the plan's action is {_shown(saved.action.get('op'), 40)}, the inventory's {fresh.action.get('op')}")
    elif saved.action != fresh.action:
        wrong = [k for k in sorted({*saved.action, *fresh.action}) if saved.action.get(k) != fresh.action.get(k)]
        parts.append(f"action {', '.join(_shown(k, 40) for k in wrong)} differs")
    if saved.node != fresh.node:
        parts.append(f"node {_shown(saved.node, 40)} is not {fresh.node}")
    if saved.npu != fresh.npu:
        parts.append(f"npu {_shown(saved.npu, 20)} is not {fresh.npu}")
    return "; ".join(parts)


def _explained_by_plan(saved: Change, now: Change, planned: list[Change]) -> bool:
    """Setting an NPU's IP moves its other values on the device's own account (hccn_tool drops a
    gateway that leaves the subnet), so after an interrupted apply a later step of the same NPU
    may see a different "before": that is the plan's doing, not a drift."""
    order = ["hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls"]
    kind = saved.key.split(":")[0]
    if saved.npu is None or kind not in order:
        return False
    earlier = set(order[: order.index(kind)])
    return any(c.npu == saved.npu and c.key.split(":")[0] in earlier for c in planned)
