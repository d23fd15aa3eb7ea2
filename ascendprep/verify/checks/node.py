"""Node checks: can we read the node at all, are its Ascend tools there, are its NPUs there and well.

``node.reachable``, ``node.hccn_tool`` and ``node.npu_smi`` are prerequisites: when one fails,
the checks that need it are skipped naming it, instead of each failing with the same cause.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ascendprep.base.findings import Severity
from ascendprep.base.paths import HCCN_TOOL_IN_HOME, NPU_SMI_IN_HOME
from ascendprep.verify.checks import health_codes
from ascendprep.verify.checks.context import NodeContext, chip_devids
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed

_REACH_FIX = {
    "unreachable": "check that the host is up and sshd listens on the inventory's address and port",
    "auth": "check ssh.user and ssh.key in the inventory (the public key must be in the user's authorized_keys)",
    "host_key": "check the host's key fingerprint, then rerun with --accept-new-host-keys (a changed key must be removed from known_hosts by hand)",
    "timeout": "fact gathering ran past ssh.command_timeout: look for a hung tool on the host, or raise the timeout",
    "sudo": "give the user passwordless sudo, or set ASCENDPREP_SUDO_PASSWORD",
}


def reachable(ctx: NodeContext) -> Verdict:
    host = ctx.host
    where = {"address": host.address}
    if host.facts is None:
        kind = host.error_kind or "error"
        fix = _REACH_FIX.get(kind, "read the error; run 'ascendprep verify' again once it is fixed")
        return failed(
            f"{ctx.name} ({host.address}) could not be read: {host.error or 'unknown error'}",
            {**where, "kind": kind, "error": host.error},
            fix=fix,
        )
    cut = host.facts.errors_for("gather")
    if cut:
        return failed(
            f"{ctx.name}: the fact-gathering script did not finish: {cut[0].message}",
            {**where, "errors": [e.message for e in cut]},
            fix="run the gather again; if it keeps stopping, look at the host's shell and /tmp (the script needs mktemp)",
        )
    return passed(
        f"{ctx.name} answered and its facts were gathered in {host.seconds:.1f}s",
        {**where, "seconds": round(host.seconds, 2), "hostname": host.facts.hostname},
    )


def _tool(ctx: NodeContext, attribute: str, probe: str, name: str, fallback: str) -> Verdict:
    facts = ctx.facts
    path = getattr(facts, attribute)
    if path:
        return passed(f"{name} is at {path}", {"path": path})
    errors = [e for e in facts.errors_for(probe) if e.kind != "missing"]
    if errors:
        return could_not_check(f"locating {name}: {errors[0].message}", {"errors": [e.message for e in errors]})
    home = facts.ascend_home or "/usr/local/Ascend"
    return failed(
        f"{name} is not installed (not on PATH, not at {home}/{fallback})",
        {"path": None},
        fix="install the Ascend driver package (it ships hccn_tool and npu-smi)",
    )


def hccn_tool(ctx: NodeContext) -> Verdict:
    return _tool(ctx, "hccn_tool", "hccn_tool", "hccn_tool", HCCN_TOOL_IN_HOME)


def npu_smi(ctx: NodeContext) -> Verdict:
    return _tool(ctx, "npu_smi_tool", "npu_smi", "npu-smi", NPU_SMI_IN_HOME)


def npu_count(ctx: NodeContext) -> Verdict:
    listing = ctx.facts.npu_smi
    if listing is None:
        return could_not_check("npu-smi info -l printed nothing usable")
    devids = sorted(chip_devids(ctx.facts).values())
    evidence = {
        "npu_smi_total": listing.total_count,
        "npus_listed": len(listing.devices),
        "device_ids": devids,
        "planned": ctx.node.nproc,
    }
    if len(devids) != ctx.node.nproc:
        chips = "" if len(devids) == len(listing.devices) else f" ({len(listing.devices)} NPUs)"
        return failed(
            f"npu-smi lists {len(devids)} NPU device ids{chips}; the inventory says {ctx.node.nproc}",
            evidence,
            fix="look for an NPU missing from npu-smi info (seating, power, driver load), or correct npus in the inventory",
        )
    return passed(f"npu-smi lists {len(devids)} NPU device ids, as planned", evidence)


def npu_health(ctx: NodeContext, npu: int) -> Verdict:
    facts = ctx.facts
    where = ctx.npu_smi_places.get(npu)
    if where is None:
        errors = facts.errors_for("npu_smi.list")
        if errors or facts.npu_smi is None:
            return could_not_check(errors[0].message if errors else "npu-smi info -l printed nothing usable")
        return failed(
            f"npu-smi does not list device id {npu}",
            {"listed": sorted(chip_devids(facts).values())},
            fix="look for the missing NPU in npu-smi info (seating, power, driver load)",
        )
    npu_id, chip = where
    health = next((h for h in facts.npu_health if h.npu_id == npu_id and h.chip == chip), None)
    evidence: Dict[str, Optional[object]] = {"npu_smi_id": npu_id, "chip": chip}
    if health is None:
        errors = facts.errors_for("npu_smi.health", npu_id)
        return could_not_check(
            errors[0].message if errors else f"npu-smi gave no health for NPU {npu_id} chip {chip}", evidence
        )
    evidence.update({"health": health.health, "error_code": health.error_code, "error_info": health.error_info})
    meanings = health_codes.decode(health.error_code, npu_id, chip)
    if meanings:
        evidence["codes"] = [meaning.to_dict() for meaning in meanings]
    if not health.ok:
        decider = health_codes.worst(meanings)
        detail = f": {health_codes.summary(meanings)}" if meanings else ""
        info = f" ({health.error_info})" if health.error_info else ""
        return failed(
            f"npu-smi health is {health.health}{detail}{info}",
            evidence,
            fix=(
                decider.action
                if decider is not None
                else f"read 'npu-smi info -i {npu_id} -c {chip} -t health' and the device log; an Alarm/Critical NPU needs a reset or a replacement"
            ),
            severity=health_codes.severity_of(health.health, meanings),
        )
    return passed("npu-smi health is OK", evidence)


CHECKS: List[Check] = [
    Check(
        "node.reachable",
        ("node",),
        "node",
        Severity.ERROR,
        "the node answers over SSH and its facts are gathered",
        "",
        reachable,
    ),
    Check(
        "node.hccn_tool",
        ("node",),
        "node",
        Severity.ERROR,
        "hccn_tool is installed",
        "install the Ascend driver package",
        hccn_tool,
        requires=("node.reachable",),
    ),
    Check(
        "node.npu_smi",
        ("node",),
        "node",
        Severity.ERROR,
        "npu-smi is installed",
        "install the Ascend driver package",
        npu_smi,
        requires=("node.reachable",),
    ),
    Check(
        "npu.count",
        ("npu", "node"),
        "node",
        Severity.ERROR,
        "npu-smi lists as many NPUs as the inventory",
        "",
        npu_count,
        probes=("npu_smi.list",),
        requires=("node.reachable", "node.npu_smi"),
    ),
    Check(
        "npu.health",
        ("npu",),
        "npu",
        Severity.ERROR,
        "npu-smi health is OK",
        "",
        npu_health,
        requires=("node.reachable", "node.npu_smi"),
    ),
]
