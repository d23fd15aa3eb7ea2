"""Host checks: kernel settings, firewall policy, and the files ascendprep manages.

sysctl values have "at least" semantics (a host tuned higher is fine), the reserved port
ranges must *cover* HCCL's (a host may reserve more), and managed files must be byte-identical
to what the plan renders (compared by sha256, so no file content travels back).
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional, Union

from ascendprep import sysctl as sysctl_rules
from ascendprep.checks.context import NodeContext
from ascendprep.checks.model import Check, Verdict, could_not_check, failed, passed
from ascendprep.desired import DesiredState
from ascendprep.findings import Severity
from ascendprep.probes.paths import SYSCTL_FILE

_APPLY = "run 'ascendprep plan' and 'ascendprep apply'"
_NEEDS = ("node.reachable",)


def _at_least(have: str, want: Union[int, str]) -> bool:
    """``want`` an int: ``have`` is a number >= it; otherwise the same words (whitespace aside)."""
    if isinstance(want, int):
        text = have.strip()
        return text.isdigit() and int(text) >= want
    return have.split() == str(want).split()


def sysctl_minimum(ctx: NodeContext) -> List[Verdict]:
    facts = ctx.facts
    verdicts = []
    for key, want in ctx.node.sysctl_minimums.items():
        errors = facts.errors_for(f"sysctl:{key}")
        have = facts.sysctl.get(key)
        if errors:
            verdicts.append(could_not_check(errors[0].message, subject=key))
        elif have is None:
            verdicts.append(could_not_check(f"{key} is not among the kernel settings the gather script reads", subject=key))
        elif not _at_least(have, want):
            relation = "at least " if isinstance(want, int) else ""
            verdicts.append(failed(f"{key} is {have.strip() or '(empty)'}; it must be {relation}{want}", {"key": key, "live": have, "wanted": want}, fix=_APPLY, subject=key))
        else:
            verdicts.append(passed(f"{key} = {have.strip()}", {"key": key, "live": have, "wanted": want}, subject=key))
    return verdicts


def reserved_ports(ctx: NodeContext) -> Verdict:
    key = sysctl_rules.RESERVED_PORTS
    have = ctx.facts.sysctl.get(key)
    wanted = sysctl_rules.format_port_ranges(ctx.node.reserved_ports)
    if have is None:
        return could_not_check(f"{key} was not read")
    evidence = {"live": have.strip(), "required": wanted}
    try:
        covered = sysctl_rules.covers(have, ctx.node.reserved_ports)
    except sysctl_rules.PortRangeError as exc:
        return failed(f"{key} cannot be read: {exc}", evidence, fix=_APPLY)
    if not covered:
        return failed(
            f"{key} is '{have.strip() or '(empty)'}': HCCL's host ports {wanted} are not all reserved, so an ephemeral connection can take one",
            evidence,
            fix=_APPLY,
        )
    return passed(f"{key} covers {wanted}", evidence)


def sysctl_persisted(ctx: NodeContext) -> Verdict:
    """The live values are what counts now; the file is what the next boot gets."""
    saved = ctx.facts.sysctl_file
    if saved is None:
        return failed(f"{SYSCTL_FILE} does not exist: the kernel settings are lost at the next reboot", {"file": None}, fix=_APPLY)
    problems = []
    for key, want in ctx.node.sysctl_minimums.items():
        have = saved.values.get(key)
        if have is None or not _at_least(have, want):
            problems.append(f"{key}={have if have is not None else '(missing)'}")
    ports = saved.values.get(sysctl_rules.RESERVED_PORTS)
    try:
        ports_ok = ports is not None and sysctl_rules.covers(ports, ctx.node.reserved_ports)
    except sysctl_rules.PortRangeError:
        ports_ok = False
    if not ports_ok:
        problems.append(f"{sysctl_rules.RESERVED_PORTS}={ports if ports is not None else '(missing)'}")
    evidence = {"file": SYSCTL_FILE, "values": dict(saved.values)}
    if problems:
        return failed(f"{SYSCTL_FILE} does not persist the planned values: {', '.join(problems)}", evidence, fix=_APPLY)
    return passed(f"{SYSCTL_FILE} persists the planned values", evidence)


def firewall(ctx: NodeContext) -> List[Verdict]:
    """``disable``: no active ufw/firewalld (an error); ``check``: warn. nftables only warns:
    apply does not flush a ruleset it did not write (it may be Docker's or the site's)."""
    policy = ctx.desired.firewall
    facts = ctx.facts
    verdicts = []
    for name in ("ufw", "firewalld", "nftables"):
        state = getattr(facts.firewall, name)
        errors = facts.errors_for(f"firewall.{name}")
        if errors:
            verdicts.append(could_not_check(errors[0].message, subject=name))
            continue
        if state is None or not state.installed:
            continue
        evidence: Dict[str, Any] = {"tool": name, "active": state.active, "detail": state.detail, "policy": policy}
        if state.active is None:
            verdicts.append(could_not_check(f"{name}'s state could not be read", evidence, subject=name))
        elif state.active:
            severity = Severity.ERROR if policy == "disable" and name != "nftables" else Severity.WARNING
            what = f"an nftables ruleset is loaded ({state.detail or 'tables present'})" if name == "nftables" else f"{name} is active"
            fix = (
                "review the ruleset: HCCL needs ports 60000-60031, the master port and the device ports between nodes"
                if name == "nftables"
                else ("run 'ascendprep plan' and 'ascendprep apply' (firewall: disable)" if policy == "disable" else "open HCCL's ports between nodes, or set firewall: disable in the inventory")
            )
            verdicts.append(failed(f"{what} and may block HCCL's ports", evidence, fix=fix, severity=severity, subject=name))
        else:
            verdicts.append(passed(f"{name} is installed but not active", evidence, subject=name))
    if not verdicts:
        verdicts.append(passed("no firewall front end (ufw, firewalld, nft) is installed", {"policy": policy}))
    return verdicts


def _firewall_policy(desired: DesiredState) -> Optional[str]:
    return "the inventory says firewall: leave" if desired.firewall == "leave" else None


def managed_files(ctx: NodeContext) -> List[Verdict]:
    facts = ctx.facts
    verdicts = []
    for wanted in ctx.node.files:
        digest = hashlib.sha256(wanted.content.encode()).hexdigest()
        errors = facts.errors_for(f"file:{wanted.path}")
        have = facts.managed_files.get(wanted.path)
        evidence = {"path": wanted.path, "planned_sha256": digest, "sha256": have.sha256 if have else None}
        if errors:
            verdicts.append(could_not_check(errors[0].message, evidence, subject=wanted.path))
        elif have is None:
            verdicts.append(could_not_check(f"{wanted.path} is not among the files the gather script reads", evidence, subject=wanted.path))
        elif not have.exists:
            verdicts.append(failed(f"{wanted.path} is missing", evidence, fix=_APPLY, subject=wanted.path))
        elif have.sha256 != digest:
            verdicts.append(failed(f"{wanted.path} differs from the plan (edited by hand, or the inventory changed)", evidence, fix=_APPLY, subject=wanted.path))
        else:
            verdicts.append(passed(f"{wanted.path} is as planned", evidence, subject=wanted.path))
    return verdicts


CHECKS: List[Check] = [
    Check("sysctl.minimum", ("sysctl",), "node", Severity.ERROR, "kernel settings at least as planned", _APPLY, sysctl_minimum, requires=_NEEDS),
    Check("sysctl.reserved_ports", ("sysctl",), "node", Severity.ERROR, "reserved ports cover HCCL's host ports", _APPLY, reserved_ports, probes=(f"sysctl:{sysctl_rules.RESERVED_PORTS}",), requires=_NEEDS),
    Check("sysctl.persisted", ("sysctl",), "node", Severity.WARNING, f"{SYSCTL_FILE} keeps the planned values over a reboot", _APPLY, sysctl_persisted, probes=("sysctl_file",), requires=_NEEDS),
    Check("firewall.active", ("firewall",), "node", Severity.ERROR, "no firewall in the way, per the inventory's policy", "", firewall, requires=_NEEDS, applies=_firewall_policy),
    Check("files.managed", ("files",), "node", Severity.ERROR, "managed files exist and equal the plan", _APPLY, managed_files, requires=_NEEDS),
]
