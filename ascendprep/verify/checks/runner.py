"""Run the selected checks over a cluster's evidence: pure, deterministic, no host contacted.

Per node, in inventory order: node checks, then each NPU's checks; then the cluster checks.
The runner applies the rules every check shares, so that no check can forget them:

* a check whose prerequisite failed on this node is skipped, naming the prerequisite;
* a probe the check depends on that failed (timeout, error) makes it fail as "could not check",
  naming the node/NPU and the probe's message; a probe the product does not support skips it;
* a check function that raises fails as "could not check" with the exception (a bug must not
  turn into a pass, nor stop the other checks).
"""

from __future__ import annotations

from datetime import date
from typing import Dict, Iterable, List, Mapping, Optional, Union

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import HostFacts, ProbeError
from ascendprep.verify.checks.context import ClusterContext, HostEvidence, NodeContext
from ascendprep.verify.checks.model import (
    COULD_NOT_CHECK,
    Check,
    CheckResult,
    Status,
    Verdict,
    could_not_check,
    skipped,
)
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.mesh import PingPlan


def _probe_errors(check: Check, facts: HostFacts, npu: Optional[int]) -> List[ProbeError]:
    errors: List[ProbeError] = []
    for probe in check.probes:
        errors.extend(facts.errors_for(probe, npu))
    return errors


_FAILED = Status.FAILED

#: What a check function returns: one verdict, or a list (or generator) of them.
_Outcome = Union[Verdict, List[Verdict]]


def _add(
    results: List[CheckResult],
    check: Check,
    outcome: Optional[_Outcome],
    context: object,
    node: Optional[str],
    npu: Optional[int],
) -> None:
    """Append the results of ``check`` on one node, NPU or the cluster: ``outcome`` when a
    shared rule decided it, else the check function's verdicts (node and cluster checks take the
    context, NPU checks the NPU too).

    Called here rather than through a helper of its own, and appended in place rather than
    returned as a list to extend with: ~170 results per host at 4,096 hosts, almost every call
    with one verdict, so a frame and a list per call add up.
    Results are positional; the evidence dict is the verdict's own, not a copy."""
    if outcome is None:
        try:
            outcome = check.run(context) if npu is None else check.run(context, npu)
            if not isinstance(outcome, (Verdict, list)):
                outcome = list(outcome)  # a generator's bug shows while it is listed: inside the try
        except Exception as exc:  # a check's bug is reported as such, never as a pass
            outcome = could_not_check(f"the check itself failed: {type(exc).__name__}: {exc}")
    check_id, severity, fix = check.id, check.severity, check.fix
    for verdict in (outcome,) if isinstance(outcome, Verdict) else outcome:
        results.append(
            CheckResult(
                check_id,
                verdict.status,
                verdict.severity or severity,
                verdict.message,
                verdict.node if verdict.node is not None else node,
                verdict.npu if verdict.npu is not None else npu,
                verdict.subject,
                verdict.fix if verdict.fix is not None else (fix if verdict.status is _FAILED else ""),
                verdict.evidence,
            )
        )


# The rules every check shares, split by what they depend on: the node's (a failed
# prerequisite, facts not gathered: one answer for every NPU of the node, so asked once per
# node and check, not once per NPU) and the NPU's (its probes' errors). Node and NPU checks
# both go through both, in this order; a rule is written once, in one of them.


def _node_rule(check: Check, ctx: NodeContext, failed_here: Dict[str, str]) -> Optional[Verdict]:
    """The verdict the node's state gives ``check`` before it may run, or None when it may run."""
    if failed_here and check.requires:  # usually nothing failed: no search
        blocker = next((required for required in check.requires if required in failed_here), None)
        if blocker is not None:
            return skipped(f"not checked: {blocker} failed ({failed_here[blocker]})")
    if ctx.host.facts is None and check.id != "node.reachable":
        return skipped("not checked: the node's facts were not gathered")
    return None


def _probe_rule(check: Check, facts: HostFacts, npu: Optional[int]) -> Optional[Verdict]:
    """The verdict a failed probe of ``check`` gives it (on ``npu``), or None when none failed.
    Asked only on a host with probe errors, for a check that names probes (~290 lookups per
    healthy host otherwise)."""
    errors = _probe_errors(check, facts, npu)
    real = [e for e in errors if e.kind != "unsupported"]
    if real:
        return could_not_check(
            "; ".join(dict.fromkeys(e.message for e in real)),
            {"probe_errors": [{"probe": e.probe, "kind": e.kind, "message": e.message} for e in real]},
        )
    if errors:
        return skipped(f"not supported on this product: {errors[0].message}")
    return None


def run_checks(
    desired: DesiredState,
    hosts: Mapping[str, HostEvidence],
    pings: Optional[PingPlan],
    selection: Selection = Selection(),
    today: Optional[date] = None,
    local_node: Optional[str] = None,
) -> List[CheckResult]:
    """Every selected check's results. ``today``: the day compatibility is judged on (a bundle's date).
    ``local_node``: the node a ``verify --local`` run read (ClusterContext.local_node).

    Nodes without an entry in ``hosts`` were not part of the run (``verify --hosts``): they get
    no node results, and the cluster checks judge the nodes that were."""
    results: List[CheckResult] = []
    checks = []
    for check in selection.checks():
        reason = check.applies(desired) if check.applies is not None else None
        if reason is None:
            checks.append(check)
        else:
            _add(results, check, skipped(reason), None, None, None)
    node_checks = [c for c in checks if c.scope == "node"]
    npu_checks = [c for c in checks if c.scope == "npu"]
    for inventory_node in desired.inventory.nodes:
        name = inventory_node.name
        if name not in hosts:
            continue
        ctx = NodeContext(desired, desired.nodes[name], hosts[name])
        facts = ctx.host.facts
        probe_errors = facts is not None and bool(facts.errors)
        failed_here: Dict[str, str] = {}
        for check in node_checks:
            outcome = _node_rule(check, ctx, failed_here)
            if outcome is None and probe_errors and check.probes:
                outcome = _probe_rule(check, facts, None)  # type: ignore[arg-type]
            first = len(results)
            _add(results, check, outcome, ctx, name, None)
            for index in range(first, len(results)):  # the check's first failure, if any
                if results[index].status is _FAILED:
                    failed_here[check.id] = results[index].message.removeprefix(COULD_NOT_CHECK)
                    break
        # Per NPU check, the node's rule is the same on every NPU: asked once here.
        gated = [
            (check, _node_rule(check, ctx, failed_here), probe_errors and bool(check.probes)) for check in npu_checks
        ]
        for npu in ctx.npus:
            for check, early, probed in gated:
                outcome = early
                if outcome is None and probed:
                    outcome = _probe_rule(check, facts, npu)  # type: ignore[arg-type]
                _add(results, check, outcome, ctx, name, npu)
    cluster_ctx = ClusterContext(desired, dict(hosts), pings, today or date.today(), local_node)
    for check in (c for c in checks if c.scope == "cluster"):
        _add(results, check, None, cluster_ctx, None, None)
    return results


def no_errors(results: Iterable[CheckResult]) -> bool:
    """True when no result failed at error severity (what exit code 0 means)."""
    error = Severity.ERROR
    return not any(r.status is _FAILED and r.severity is error for r in results)
