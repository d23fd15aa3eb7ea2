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
from typing import Dict, Iterable, List, Mapping, Optional

from ascendprep.checks.context import ClusterContext, HostEvidence, NodeContext
from ascendprep.checks.mesh import PingPlan
from ascendprep.checks.model import COULD_NOT_CHECK, Check, CheckResult, Status, Verdict, could_not_check, skipped
from ascendprep.checks.registry import Selection
from ascendprep.desired import DesiredState
from ascendprep.facts import ProbeError
from ascendprep.findings import Severity

def _probe_errors(check: Check, ctx: NodeContext, npu: Optional[int]) -> List[ProbeError]:
    errors: List[ProbeError] = []
    for probe in check.probes:
        errors.extend(ctx.facts.errors_for(probe, npu))
    return errors


_FAILED = Status.FAILED


def _results(check: Check, verdicts: List[Verdict], node: Optional[str], npu: Optional[int]) -> List[CheckResult]:
    """The verdicts of one check call as results (positional: ~170 per host at 4,096 hosts; the
    evidence dict is the verdict's own, not a copy). A loop, not a list comprehension: almost
    every call has one verdict, and a comprehension's own frame cost ~5 % of run_checks."""
    check_id, severity, fix = check.id, check.severity, check.fix
    results = []
    for verdict in verdicts:
        results.append(CheckResult(
            check_id,
            verdict.status,
            verdict.severity or severity,
            verdict.message,
            verdict.node if verdict.node is not None else node,
            verdict.npu if verdict.npu is not None else npu,
            verdict.subject,
            verdict.fix if verdict.fix is not None else (fix if verdict.status is _FAILED else ""),
            verdict.evidence,
        ))
    return results


def _call(check: Check, context: object, npu: Optional[int] = None) -> List[Verdict]:
    """The check's verdicts (node and cluster checks take the context, NPU checks the NPU too)."""
    try:
        verdicts = check.run(context) if npu is None else check.run(context, npu)
        # a generator's bug shows while it is listed: inside the try
        return [verdicts] if isinstance(verdicts, Verdict) else list(verdicts)
    except Exception as exc:  # a check's bug is reported as such, never as a pass
        return [could_not_check(f"the check itself failed: {type(exc).__name__}: {exc}")]


def _node_check(check: Check, ctx: NodeContext, npu: Optional[int], failed_here: Dict[str, str]) -> List[Verdict]:
    if failed_here and check.requires:  # usually nothing failed: no search (~150 checks per host)
        blocker = next((required for required in check.requires if required in failed_here), None)
        if blocker is not None:
            return [skipped(f"not checked: {blocker} failed ({failed_here[blocker]})")]
    if ctx.host.facts is not None:
        # A healthy host has no probe errors: skip asking per probe (~290 lookups per host).
        errors = _probe_errors(check, ctx, npu) if ctx.host.facts.errors and check.probes else []
        real = [e for e in errors if e.kind != "unsupported"]
        if real:
            return [could_not_check("; ".join(dict.fromkeys(e.message for e in real)), {"probe_errors": [{"probe": e.probe, "kind": e.kind, "message": e.message} for e in real]})]
        if errors:
            return [skipped(f"not supported on this product: {errors[0].message}")]
    elif check.id != "node.reachable":
        return [skipped("not checked: the node's facts were not gathered")]
    return _call(check, ctx, npu)


def run_checks(
    desired: DesiredState,
    hosts: Mapping[str, HostEvidence],
    pings: Optional[PingPlan],
    selection: Selection = Selection(),
    today: Optional[date] = None,
) -> List[CheckResult]:
    """Every selected check's results. ``today``: the day compatibility is judged on (a bundle's date).

    Nodes without an entry in ``hosts`` were not part of the run (``verify --hosts``): they get
    no node results, and the cluster checks judge the nodes that were."""
    results: List[CheckResult] = []
    checks = []
    for check in selection.checks():
        reason = check.applies(desired) if check.applies is not None else None
        if reason is None:
            checks.append(check)
        else:
            results.extend(_results(check, [skipped(reason)], None, None))
    node_checks = [c for c in checks if c.scope == "node"]
    npu_checks = [c for c in checks if c.scope == "npu"]
    for inventory_node in desired.inventory.nodes:
        name = inventory_node.name
        if name not in hosts:
            continue
        ctx = NodeContext(desired, desired.nodes[name], hosts[name])
        failed_here: Dict[str, str] = {}
        for check in node_checks:
            node_results = _results(check, _node_check(check, ctx, None, failed_here), name, None)
            failures = [r for r in node_results if r.status is _FAILED]
            if failures:
                failed_here[check.id] = failures[0].message.removeprefix(COULD_NOT_CHECK)
            results.extend(node_results)
        for npu in ctx.npus:
            for check in npu_checks:
                results.extend(_results(check, _node_check(check, ctx, npu, failed_here), name, npu))
    cluster_ctx = ClusterContext(desired, dict(hosts), pings, today or date.today())
    for check in (c for c in checks if c.scope == "cluster"):
        results.extend(_results(check, _call(check, cluster_ctx), None, None))
    return results


def no_errors(results: Iterable[CheckResult]) -> bool:
    """True when no result failed at error severity (what exit code 0 means)."""
    error = Severity.ERROR
    return not any(r.status is _FAILED and r.severity is error for r in results)
