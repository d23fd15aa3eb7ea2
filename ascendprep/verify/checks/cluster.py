"""Cluster checks: what must be the same everywhere, and what must never repeat.

HCCL compares versions at link setup (EI0008), refuses links between TLS-on and TLS-off ports
(EI0016) and cannot tell two NPUs with one address apart; none of that shows on a single node.
Nodes whose value is unknown (unreachable, probe failed) are left out here: their own node
checks already fail for it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Hashable, List, Mapping, Optional, Tuple, TypeVar

from ascendprep import compat
from ascendprep.base.findings import Severity
from ascendprep.desired.state import SOFTWARE_KEYS
from ascendprep.verify.checks.context import ClusterContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped
from ascendprep.verify.checks.software import PROBES, installed_version
from ascendprep.verify.checks.text import SOFTWARE_NAMES, compact_names, who_differs

K = TypeVar("K", bound=Hashable)


def _comparable(key: str, version: str) -> str:
    """Python counts by major.minor: wheels are built per minor version, patch levels mix fine."""
    return ".".join(version.split(".")[:2]) if key == "python" else version


def _known_versions(ctx: ClusterContext, key: str) -> Dict[str, str]:
    values = {}
    for node, facts in ctx.gathered().items():
        if any(facts.errors_for(probe) for probe in PROBES[key]):
            continue
        version = installed_version(facts, key)
        if version is not None:
            values[node] = _comparable(key, version)
    return values


def versions(ctx: ClusterContext) -> List[Verdict]:
    verdicts = []
    for key in SOFTWARE_KEYS:
        values = _known_versions(ctx, key)
        name = SOFTWARE_NAMES[key]
        if not values:
            verdicts.append(skipped(f"no node reported a {name} version", subject=key))
            continue
        distinct = set(values.values())
        evidence = {"key": key, "versions": values}
        if len(distinct) == 1:
            verdicts.append(
                passed(f"{name} {distinct.pop()} on all {len(values)} nodes that report it", evidence, subject=key)
            )
            continue
        sentence = who_differs(values, compact_names, name)
        verdicts.append(
            failed(
                sentence,
                evidence,
                fix=f"install the same {name} on every node (HCCL checks version consistency at link setup: EI0008)",
                subject=key,
                node=_odd_one_out(values),
            )
        )
    return verdicts


def _odd_one_out(values: Mapping[K, str]) -> Optional[K]:
    """The one member whose value differs from all the others (the one to blame), if any."""
    groups: Dict[str, List[K]] = defaultdict(list)
    for member, value in values.items():
        groups[value].append(member)
    singles = [members[0] for members in groups.values() if len(members) == 1]
    if len(values) > 2 and len(groups) == 2 and len(singles) == 1:
        return singles[0]
    return None


def _stacks(ctx: ClusterContext) -> Dict[Tuple[Tuple[str, Optional[str]], ...], List[str]]:
    """Nodes grouped by their whole software stack (only nodes whose stack was read)."""
    stacks: Dict[Tuple[Tuple[str, Optional[str]], ...], List[str]] = defaultdict(list)
    for node, facts in ctx.gathered().items():
        stack = tuple((key, installed_version(facts, key)) for key in compat.STACK_KEYS)
        stacks[stack].append(node)
    return stacks


def compatibility(ctx: ClusterContext) -> List[Verdict]:
    """compat.check_stack on each distinct stack: errors break HCCL/torch_npu, warnings are unknowns."""
    stacks = _stacks(ctx)
    if not stacks:
        return [skipped("no node's software could be read")]
    chip = getattr(ctx.desired.inventory.product, "compat_chip", None)
    verdicts = []
    for stack, nodes in stacks.items():
        versions = {key: value for key, value in stack if value is not None}
        where = "" if len(stacks) == 1 else f" (on {compact_names(nodes)})"
        issues = compat.check_stack(versions, chip=chip, today=ctx.today)
        evidence_base = {"stack": versions, "nodes": nodes}
        if not issues:
            verdicts.append(passed(f"the stack is a documented combination{where}", evidence_base))
        for issue in issues:
            verdicts.append(
                failed(
                    f"{issue.message}{where}",
                    {**evidence_base, "issue": issue.id, "sources": list(issue.sources)},
                    fix=issue.fix,
                    severity=Severity(issue.severity),
                    subject=issue.id,
                    node=nodes[0] if len(nodes) == 1 and len(stacks) > 1 else None,
                )
            )
    return verdicts


def tls_command(is_950: bool, npu: object, value: object) -> str:
    """The command that sets an NPU's TLS switch: mode first on Ascend 950 (its HCCN Tool guide,
    configuring-tls-enable-status-of-an-npu-device.md), mode last on 910."""
    return f"hccn_tool -s -tls -i {npu} -enable {value}" if is_950 else f"hccn_tool -i {npu} -tls -s enable {value}"


def tls_consistent(ctx: ClusterContext) -> Verdict:
    states: Dict[Tuple[str, int], str] = {}
    for node, facts in ctx.gathered().items():
        for npu, live in facts.npus.items():
            if live.tls is not None and not facts.errors_for("hccn.tls", npu):
                states[(node, npu)] = "enabled" if live.tls.enabled else "disabled"
    if not states:
        return skipped("no NPU's TLS state could be read")
    evidence = {"tls": {f"{node}:{npu}": value for (node, npu), value in sorted(states.items())}}
    distinct = set(states.values())
    if len(distinct) == 1:
        return passed(f"TLS {distinct.pop()} on all {len(states)} NPUs", evidence)

    def describe(members: List[Tuple[str, int]]) -> str:
        if len(members) <= 4:
            return ", ".join(f"{node} npu {npu}" for node, npu in members)
        return f"{len(members)} NPUs on {compact_names(sorted({node for node, _ in members}))}"

    sentence = who_differs(states, describe, "TLS", repeat_what=True)
    odd = _odd_one_out(states)
    blamed_node: Optional[str] = odd[0] if odd is not None else None
    blamed_npu: Optional[int] = odd[1] if odd is not None else None
    return failed(
        sentence,
        evidence,
        fix=f"set the same TLS switch on every NPU ({tls_command(ctx.desired.inventory.product.is_950, 'N', '0|1')}, or device_network.tls in the inventory and apply): TLS and non-TLS ports cannot link (EI0016)",
        node=blamed_node,
        npu=blamed_npu,
    )


def duplicate_ips(ctx: ClusterContext) -> List[Verdict]:
    holders: Dict[str, List[Tuple[str, int]]] = defaultdict(list)
    for node, facts in ctx.gathered().items():
        for npu, live in sorted(facts.npus.items()):
            if live.ip:
                holders[live.ip].append((node, npu))
    if not holders:
        return [skipped("no device IP could be read")]
    verdicts = []
    for address, owners in sorted(holders.items()):
        if len(owners) > 1:
            names = ", ".join(f"{node} npu {npu}" for node, npu in owners)
            verdicts.append(
                failed(
                    f"device IP {address} is configured on {names}",
                    {"ip": address, "holders": [{"node": node, "npu": npu} for node, npu in owners]},
                    fix="give every NPU its own address: run 'ascendprep plan' and 'ascendprep apply'",
                    subject=address,
                )
            )
    if not verdicts:
        verdicts.append(passed(f"all {len(holders)} device IPs are distinct", {"count": len(holders)}))
    return verdicts


CHECKS: List[Check] = [
    Check(
        "cluster.versions",
        ("cluster", "software"),
        "cluster",
        Severity.ERROR,
        "every version is the same on every node",
        "",
        versions,
    ),
    Check(
        "cluster.compat",
        ("cluster", "software"),
        "cluster",
        Severity.ERROR,
        "the software stack is a compatible combination",
        "",
        compatibility,
    ),
    Check(
        "cluster.tls",
        ("cluster", "network"),
        "cluster",
        Severity.ERROR,
        "the TLS switch is the same on every NPU",
        "",
        tls_consistent,
    ),
    Check(
        "cluster.duplicate_ip",
        ("cluster", "network"),
        "cluster",
        Severity.ERROR,
        "no device IP is used twice",
        "",
        duplicate_ips,
    ),
]
