"""The bundle's results.json is the verdict (report.verify.bundle_document): the results that did
not pass in full, the passed ones counted per check on a host range, and the command that gives
every result back; ``verify --format json`` itself still prints every result."""

from __future__ import annotations

import json

from ascendprep.base.findings import Severity
from ascendprep.report import jsondoc
from ascendprep.report.verify import CLUSTER, bundle_document, passed_by_check, verify_document
from ascendprep.verify.checks.model import CheckResult, Status


def _result(check: str, status: Status, node, npu=None) -> CheckResult:
    return CheckResult(
        check=check,
        status=status,
        severity=Severity.ERROR,
        message=f"{check} on {node}",
        node=node,
        npu=npu,
        evidence={"seen": [1, 2]},
    )


def _results():
    results = []
    for index in range(1, 5):
        node = f"node{index:04d}"
        results += [_result("npu.ip", Status.PASSED, node, npu) for npu in range(8)]
        results.append(_result("node.reachable", Status.PASSED, node))
    results.append(_result("npu.health", Status.SKIPPED, "node0002"))
    results.append(_result("network.link", Status.FAILED, "node0003", 5))
    results += [_result("cluster.reachability", Status.PASSED, None) for _ in range(3)]
    results.append(_result("npu.ip", Status.FAILED, "node0005", 0))
    results.append(_result("npu.ip", Status.PASSED, "node0006", 1))
    return results


def _document(results, bundle="/runs/20261125T120000Z"):
    document = verify_document(
        inventory={"path": "inv.yaml"},
        results=results,
        hosts={},
        ssh_execs={},
        mesh="ring",
        selection={},
        exit_code=1,
        bundle=bundle,
        lazy_checks=True,
    )
    document["limits_hit"] = []
    document["only_hosts"] = None
    return document


def test_passed_results_are_counted_per_check_on_a_host_range_in_first_seen_order() -> None:
    assert passed_by_check(_results()) == {
        "npu.ip": {"count": 33, "nodes": "node[0001-0004,0006]"},
        "node.reachable": {"count": 4, "nodes": "node[0001-0004]"},
        "cluster.reachability": {"count": 3, "nodes": CLUSTER},
    }
    assert list(passed_by_check(_results())) == ["npu.ip", "node.reachable", "cluster.reachability"]
    assert passed_by_check([_result("npu.ip", Status.FAILED, "node0001")]) == {}


def test_the_verdict_keeps_every_key_and_every_result_but_the_passed_ones_in_full() -> None:
    results = _results()
    document = _document(results)
    full = json.loads("".join(jsondoc.json_chunks(document)))
    verdict = json.loads("".join(jsondoc.json_chunks(bundle_document(document, results))))
    assert list(verdict) == [
        *list(full)[: list(full).index("checks")],
        "checks",
        "passed",
        "full",
        *list(full)[list(full).index("checks") + 1 :],
    ]
    assert verdict["checks"] == [c for c in full["checks"] if c["status"] != "passed"]
    assert [(c["check"], c["status"]) for c in verdict["checks"]] == [
        ("npu.health", "skipped"),
        ("network.link", "failed"),
        ("npu.ip", "failed"),
    ]
    assert {k: v for k, v in verdict.items() if k not in ("checks", "passed", "full")} == {
        k: v for k, v in full.items() if k != "checks"
    }
    assert sum(entry["count"] for entry in verdict["passed"].values()) == full["summary"]["passed"] == 40
    assert verdict["full"] == "ascendprep verify --from-bundle /runs/20261125T120000Z --format json"


def test_the_hint_quotes_the_bundle_folder_for_a_shell() -> None:
    results = _results()
    verdict = bundle_document(_document(results, bundle="/tmp/my runs/x;rm"), results)
    assert verdict["full"] == "ascendprep verify --from-bundle '/tmp/my runs/x;rm' --format json"


def test_no_passed_result_is_made_into_a_dict(monkeypatch) -> None:
    results = _results()
    made = []
    real = CheckResult.to_dict
    monkeypatch.setattr(CheckResult, "to_dict", lambda self: made.append(self.status) or real(self))
    document = _document(results)
    "".join(jsondoc.json_chunks(bundle_document(document, results)))
    assert made and Status.PASSED not in made and len(made) == 3
