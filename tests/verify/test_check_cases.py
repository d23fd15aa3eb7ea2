"""The checks' fault cases as data: every ``tests/fixtures/checks/<check>/<case>.json`` runs here.

A case changes one node of the healthy 4-node cluster (the ``verify_cluster`` fixture) by a JSON
merge patch (RFC 7386) on that node's facts as ``HostFacts.to_dict`` writes them, runs every
check, and asserts that exactly the listed (check, node, NPU, severity) fail: nothing else. A
new case is a new file: see tests/fixtures/checks/README.md.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

from ascendprep.facts.model import HostFacts
from ascendprep.verify.checks import registry
from ascendprep.verify.checks.registry import BY_ID

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "checks"
CASE_KEYS = {"description", "node", "facts_patch", "fails"}
FAIL_KEYS = {"check", "node", "npu", "severity"}

Failure = Tuple[str, Optional[str], Optional[int], str]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: an object patch merges key by key (``null`` removes the key), anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _cases() -> list[Path]:
    return sorted(CASES.glob("*/*.json"))


def _name(path: Path) -> str:
    return str(path.relative_to(CASES.parent.parent.parent))


def _show(failures: "Counter[Failure]") -> str:
    return (
        ", ".join(
            f"{check}[{node} npu {npu}] {severity}"
            for check, node, npu, severity in sorted(failures.elements(), key=str)
        )
        or "none"
    )


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_check_case(path: Path, verify_cluster, monkeypatch) -> None:
    name = _name(path)
    case: Dict[str, Any] = json.loads(path.read_text())
    assert set(case) == CASE_KEYS, f"{name}: keys must be {sorted(CASE_KEYS)}, not {sorted(case)}"
    assert path.parent.name in BY_ID, f"{name}: the folder {path.parent.name!r} is no check id"
    assert all(set(f) == FAIL_KEYS for f in case["fails"]), f"{name}: each of fails has exactly {sorted(FAIL_KEYS)}"
    assert not case["fails"] or path.parent.name in {f["check"] for f in case["fails"]}, (
        f"{name}: its own check is not among the failures"
    )
    node = case["node"]
    healthy = verify_cluster.healthy(node)
    facts = HostFacts.from_dict(merge_patch(healthy.to_dict(), case["facts_patch"]))
    assert facts != healthy, f"{name}: facts_patch changes nothing"

    own = BY_ID[path.parent.name]
    if own.applies is not None and own.applies(verify_cluster.desired) is not None:
        # A check of another product (the Ascend 950 UB checks): the atlas-a2 cluster stands in for
        # that product's nodes, the case's facts carry what its tools print, and the check's
        # product gate is lifted for this case.
        lifted = tuple(replace(check, applies=None) if check is own else check for check in registry.CHECKS)
        monkeypatch.setattr(registry, "CHECKS", lifted)
    results = verify_cluster.judge({node: facts})

    failed = [r for r in results if r.failed]
    got: "Counter[Failure]" = Counter((r.check, r.node, r.npu, r.severity.value) for r in failed)
    want: "Counter[Failure]" = Counter((f["check"], f["node"], f["npu"], f["severity"]) for f in case["fails"])
    assert got == want, (
        f"{name} ({case['description']}): expected to fail {_show(want)}; failed {_show(got)}"
        f" (missing: {_show(want - got)}; unexpected: {_show(got - want)}); messages: {[r.message for r in failed]}"
    )
    for result in failed:
        assert result.fix, f"{name}: {result.check} failed without a fix"
        finding = result.finding()
        assert finding is not None and (finding.node, finding.npu) == (result.node, result.npu), (
            f"{name}: {result.check}'s finding"
        )


def test_the_cases_cover_node_npu_and_cluster_checks_and_passing_variants() -> None:
    cases = [json.loads(p.read_text()) for p in _cases()]
    scopes = {BY_ID[f["check"]].scope for case in cases for f in case["fails"]}
    assert {"node", "npu", "cluster"} <= scopes
    assert any(not case["fails"] for case in cases) and {"error", "warning"} <= {
        f["severity"] for case in cases for f in case["fails"]
    }
