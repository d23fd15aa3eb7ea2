"""Host checks: kernel settings, firewall policy, and the files ascendprep manages.

Each verdict is the word on a :mod:`ascendprep.plan.drift` judgement, the same one ``plan`` turns
into a change: sysctl values have "at least" semantics (a host tuned higher is fine), the
reserved port ranges must *cover* HCCL's (a host may reserve more), and managed files (the
sysctl drop-in among them) must be byte-identical to what apply writes (compared by sha256, so
no file content travels back).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional

from ascendprep.base.findings import Severity
from ascendprep.base.paths import SYSCTL_FILE
from ascendprep.desired.state import DesiredState
from ascendprep.inventory import sysctl as sysctl_rules
from ascendprep.plan import drift
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed

_APPLY = "run 'ascendprep plan' and 'ascendprep apply'"
_NEEDS = ("node.reachable",)


def sysctl_minimum(ctx: NodeContext) -> List[Verdict]:
    verdicts = []
    for key, want in ctx.node.sysctl_minimums.items():
        item = drift.sysctl_value(key, want, ctx.facts)
        have = ctx.facts.sysctl.get(key)
        if item.unknown is not None:
            verdicts.append(could_not_check(item.unknown, subject=key))
        elif item.drifted:
            relation = "at least " if isinstance(want, int) else ""
            verdicts.append(
                failed(
                    f"{key} is {item.have or '(empty)'}; it must be {relation}{want}",
                    {"key": key, "live": have, "wanted": want},
                    fix=_APPLY,
                    subject=key,
                )
            )
        else:
            verdicts.append(passed(f"{key} = {item.have}", {"key": key, "live": have, "wanted": want}, subject=key))
    return verdicts


def reserved_ports(ctx: NodeContext) -> Verdict:
    key = sysctl_rules.RESERVED_PORTS
    item = drift.reserved_ports(ctx.node, ctx.facts)
    if item.have is None:
        return could_not_check(f"{key} was not read")
    evidence = {"live": item.have, "required": item.want}
    if item.unknown is not None:
        return failed(item.unknown, evidence, fix=_APPLY)
    if item.drifted:
        return failed(
            f"{key} is '{item.have or '(empty)'}': HCCL's host ports {item.want} are not all reserved, so an ephemeral connection can take one",
            evidence,
            fix=_APPLY,
        )
    return passed(f"{key} covers {item.want}", evidence)


def sysctl_persisted(ctx: NodeContext) -> Verdict:
    """The live values are what counts now; the file is what the next boot gets. It must hold
    what apply writes: the values the host keeps (a higher one included), not only the minimum,
    since this file sorts late and would lower a host tuned higher at boot."""
    saved = ctx.facts.sysctl_file
    values = drift.sysctl_drifts(ctx.node, ctx.facts)
    item = drift.sysctl_file(ctx.node, ctx.facts, values)
    if saved is None:
        return failed(
            f"{SYSCTL_FILE} does not exist: the kernel settings are lost at the next reboot", {"file": None}, fix=_APPLY
        )
    if item.unknown is not None:
        return could_not_check(item.unknown, {"file": SYSCTL_FILE})
    evidence = {"file": SYSCTL_FILE, "values": dict(saved.values), "sha256": item.have, "planned_sha256": item.want}
    if item.drifted:
        problems = drift.sysctl_file_problems(ctx.facts, values)
        what = (
            f"does not persist the planned values: {', '.join(problems)}"
            if problems
            else "differs from what apply writes (edited by hand?)"
        )
        return failed(f"{SYSCTL_FILE} {what}", evidence, fix=_APPLY)
    return passed(f"{SYSCTL_FILE} persists the planned values", evidence)


def firewall(ctx: NodeContext) -> List[Verdict]:
    """``disable``: no active ufw/firewalld (an error); ``check``: warn. nftables only warns:
    apply does not flush a ruleset it did not write (it may be Docker's or the site's). The
    same severities and fixes as plan's findings (drift.firewall_severity, firewall_fix)."""
    policy = ctx.desired.firewall
    verdicts = []
    for item in drift.firewall(policy, ctx.facts):
        name = item.key.split(":", 1)[1]
        state = getattr(ctx.facts.firewall, name)
        evidence: Dict[str, Any] = {
            "tool": name,
            "active": item.have,
            "detail": state.detail if state else None,
            "policy": policy,
        }
        severity = drift.firewall_severity(policy, name)
        if item.unknown is not None:
            verdicts.append(replace(could_not_check(item.unknown, evidence, subject=name), severity=severity))
        elif item.drifted:
            verdicts.append(
                failed(
                    drift.firewall_problem(name, evidence["detail"]),
                    evidence,
                    fix=drift.firewall_fix(ctx.desired, name),
                    severity=severity,
                    subject=name,
                )
            )
        else:
            verdicts.append(passed(f"{name} is installed but not active", evidence, subject=name))
    if not verdicts:
        verdicts.append(passed("no firewall front end (ufw, firewalld, nft) is installed", {"policy": policy}))
    return verdicts


def _firewall_policy(desired: DesiredState) -> Optional[str]:
    return "the inventory says firewall: leave" if desired.firewall == "leave" else None


def managed_files(ctx: NodeContext) -> List[Verdict]:
    verdicts = []
    for wanted in ctx.node.files:
        item = drift.managed_file(wanted, ctx.facts)
        have = ctx.facts.managed_files.get(wanted.path)
        evidence = {"path": wanted.path, "planned_sha256": item.want, "sha256": have.sha256 if have else None}
        if item.unknown is not None:
            verdicts.append(could_not_check(item.unknown, evidence, subject=wanted.path))
        elif item.have is None:
            verdicts.append(failed(f"{wanted.path} is missing", evidence, fix=_APPLY, subject=wanted.path))
        elif item.drifted:
            verdicts.append(
                failed(
                    f"{wanted.path} differs from the plan (edited by hand, or the inventory changed)",
                    evidence,
                    fix=_APPLY,
                    subject=wanted.path,
                )
            )
        else:
            verdicts.append(passed(f"{wanted.path} is as planned", evidence, subject=wanted.path))
    return verdicts


CHECKS: List[Check] = [
    Check(
        "sysctl.minimum",
        ("sysctl",),
        "node",
        Severity.ERROR,
        "kernel settings at least as planned",
        _APPLY,
        sysctl_minimum,
        requires=_NEEDS,
    ),
    Check(
        "sysctl.reserved_ports",
        ("sysctl",),
        "node",
        Severity.ERROR,
        "reserved ports cover HCCL's host ports",
        _APPLY,
        reserved_ports,
        probes=(f"sysctl:{sysctl_rules.RESERVED_PORTS}",),
        requires=_NEEDS,
    ),
    Check(
        "sysctl.persisted",
        ("sysctl",),
        "node",
        Severity.WARNING,
        f"{SYSCTL_FILE} keeps the planned values over a reboot",
        _APPLY,
        sysctl_persisted,
        probes=("sysctl_file",),
        requires=_NEEDS,
    ),
    Check(
        "firewall.active",
        ("firewall",),
        "node",
        Severity.ERROR,
        "no firewall in the way, per the inventory's policy",
        "",
        firewall,
        requires=_NEEDS,
        applies=_firewall_policy,
    ),
    Check(
        "files.managed",
        ("files",),
        "node",
        Severity.ERROR,
        "managed files exist and equal the plan",
        _APPLY,
        managed_files,
        requires=_NEEDS,
    ),
]
