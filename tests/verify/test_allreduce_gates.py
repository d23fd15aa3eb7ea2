"""The all-reduce verdict as gates, each passing and failing, and nccl-tests' two closing lines.

Records are the worker's own (``RankReport``), as in test_allreduce_results.
"""

import io
import json

import pytest
from rich.console import Console

from ascendprep.report.allreduce import footer_lines, print_allreduce
from ascendprep.verify.allreduce.gates import (
    GATE_NAMES,
    GateResult,
    busbw_gate,
    connectivity_gate,
    self_test_gate,
    stragglers_gate,
    training_gate,
    wrong_elements_gate,
)
from ascendprep.verify.allreduce.options import AllreduceOptions, resolve_settings
from ascendprep.verify.allreduce.outcome import AllreduceOutcome, build_findings
from ascendprep.verify.allreduce.records import BusbwFloor, SizeRow, Straggler, TrainVerdict
from ascendprep.verify.allreduce.results import algorithm_bandwidth, build_verdict, bus_bandwidth, parse_worker_output
from ascendprep.verify.allreduce.worker import PHASES, RankReport

MB = 2**20


def record(rank, world=4, times=None, wrong=0, failed=None, injected=(), train=None):
    report = RankReport(rank, rank % 2, world, 2, f"node{rank // 2}")
    report.data["backend"] = "gloo"
    for phase in PHASES:
        report.finish(phase, 0.01)
    for nbytes, time_us in sorted((times or {MB: 100.0}).items()):
        report.data["sizes"].append(
            {
                "bytes": nbytes,
                "elements": nbytes // 4,
                "time_us": time_us,
                "algbw_GBps": 0.0,
                "busbw_GBps": 0.0,
                "wrong_elements": wrong,
            }
        )
    if failed:
        report.fail(*failed)
    report.data["injected"] = list(injected)
    report.data["train"] = train
    return report.data


def verdict_of(*records, **options):
    text = "\n".join("ASCENDPREP_RESULT " + json.dumps(r) for r in records)
    return build_verdict(parse_worker_output(text), **options)


def row(nbytes=MB, busbw=10.0, wrong=0, ranks=4):
    return SizeRow(nbytes, 100.0, busbw / 1.5, busbw, wrong, ranks, 100.0, 0, "node0")


# --- each gate, pass and fail -------------------------------------------------------------------


def test_connectivity_gate():
    ok = connectivity_gate(4, 4, [])
    assert (ok.ok, ok.figure, ok.reasons) == (True, "4/4 ranks", ())
    missing = connectivity_gate(4, 3, ["1 of 4 ranks sent no result: ranks 3"])
    assert not missing.ok and missing.figure == "3/4 ranks"
    assert missing.reason == "1 of 4 ranks sent no result: ranks 3"
    unknown = connectivity_gate(None, 0, [])
    assert not unknown.ok and unknown.figure == "0/? ranks" and unknown.reason == "the world size is unknown"


def test_wrong_elements_gate():
    clean = wrong_elements_gate([row(1024), row(MB)])
    assert (clean.ok, clean.figure) == (True, "0")
    wrong = wrong_elements_gate([row(1024), row(MB, wrong=6)])
    assert not wrong.ok and wrong.figure == "6" and wrong.reason == "6 wrong elements at sizes 1M"
    nothing = wrong_elements_gate([])
    assert not nothing.ok and nothing.figure == "none measured" and "correctness is unproven" in nothing.reason


def test_busbw_gate():
    rows = [row(1024, busbw=0.1), row(MB, busbw=12.0), row(4 * MB, busbw=50.0, ranks=3)]
    floor = BusbwFloor(10.0, True, "bus bandwidth 12.000 GB/s at 1M reaches --min-busbw 10 GB/s", 12.0, MB)
    ok = busbw_gate(floor, rows, 4)
    assert ok.ok and ok.figure == "12 GB/s at 1M"  # 4M was not measured by every rank
    low = BusbwFloor(20.0, False, "bus bandwidth 12.000 GB/s at 1M is below --min-busbw 20 GB/s", 12.0, MB)
    below = busbw_gate(low, rows, 4)
    assert not below.ok and below.reason == low.reason
    unset = busbw_gate(None, rows, 4)
    assert unset.ok and unset.reasons == () and unset.warnings == () and unset.figure == "12 GB/s at 1M"


def test_training_gate():
    assert training_gate([]).ok and training_gate([]).figure == "not run"
    passed = training_gate([TrainVerdict("ddp", "pass"), TrainVerdict("hsdp", "skipped", "torch < 2.2")])
    assert passed.ok and passed.figure == "ddp pass, hsdp skipped"
    assert passed.warnings == ("training hsdp skipped: torch < 2.2",)
    failed = training_gate([TrainVerdict("ddp", "fail", "loss is not finite (nan)", (2, 3))])
    assert not failed.ok and failed.reason == "training ddp failed on ranks 2-3: loss is not finite (nan)"


def test_stragglers_gate_warns_but_never_blocks():
    none = stragglers_gate([])
    assert none.ok and none.figure == "0 ranks" and not none.fails_verdict
    one = stragglers_gate([Straggler(3, "node1", (MB,), 8.5)])
    assert not one.ok and not one.fails_verdict and one.figure == "1 rank"
    assert one.reason == "rank 3 (node1) straggles at 1M: up to 8.5x the median time"


def test_self_test_gate():
    assert self_test_gate([]).ok
    injected = self_test_gate(["inject_wrong=1"])
    assert not injected.ok and injected.fails_verdict and "not a verdict on the cluster" in injected.reason


def test_a_gate_cannot_fail_without_saying_why():
    with pytest.raises(ValueError, match="without a reason"):
        GateResult("connectivity", False, "3/4 ranks")


# --- the verdict is the gates' combination --------------------------------------------------------


def test_a_clean_run_passes_every_gate_in_order():
    verdict = verdict_of(*(record(r) for r in range(4)), min_busbw_GBps=0.001)
    assert [g.name for g in verdict.gates] == list(GATE_NAMES)
    assert all(g.ok for g in verdict.gates) and verdict.passed and verdict.reasons == ()


@pytest.mark.parametrize(
    "case, failing",
    [
        ("wrong", "wrong_elements"),
        ("slow", "busbw"),
        ("missing", "connectivity"),
        ("sweep", "connectivity"),
        ("train", "training"),
        ("injected", "self_test"),
    ],
)
def test_each_failure_fails_its_own_gate_and_the_verdict(case, failing):
    records = [record(r) for r in range(4)]
    options = {"expected_world_size": 4}
    if case == "wrong":
        records = [
            record(r, wrong=1, failed=("performance", "all_reduce returned wrong elements: 1M")) for r in range(4)
        ]
    elif case == "slow":
        options["min_busbw_GBps"] = 1e6
    elif case == "missing":
        records = records[:3]
    elif case == "sweep":
        records[1] = record(1, failed=("performance", "timed out after 2s in the timed all_reduce of 1M bytes"))
    elif case == "train":
        failed = {"ddp": {"status": "fail", "reason": "loss is not finite (nan)"}}
        records = [
            record(r, train=failed if r == 2 else {"ddp": {"status": "pass", "param_digest": "ab"}}) for r in range(4)
        ]
    elif case == "injected":
        records = [record(r, injected=["inject_stall=9"]) for r in range(4)]
    verdict = verdict_of(*records, **options)
    assert not verdict.passed
    assert [g.name for g in verdict.gates if not g.ok] == [failing]
    assert verdict.reasons == verdict.gate_named(failing).reasons


def test_wrong_element_failures_belong_to_the_correctness_gate_not_connectivity():
    records = [
        record(
            r,
            wrong=1 if r == 0 else 0,
            failed=("performance", "all_reduce returned wrong elements: 1M") if r == 0 else None,
        )
        for r in range(4)
    ]
    verdict = verdict_of(*records)
    assert verdict.connectivity_passed and not verdict.correctness_passed
    assert verdict.gate_named("wrong_elements").reasons == (
        "1 wrong elements at sizes 1M",
        "rank 0 (node0) failed in performance: all_reduce returned wrong elements: 1M",
    )


def test_stragglers_alone_leave_a_passing_verdict_with_a_warning():
    records = [record(r, times={MB: t}) for r, t in enumerate([100.0, 100.0, 100.0, 900.0])]
    verdict = verdict_of(*records)
    assert verdict.passed and not verdict.gate_named("stragglers").ok
    assert verdict.warnings[0].startswith("rank 3 (node1) straggles at 1M")


def test_no_measured_size_is_not_a_pass():
    """Before the gates, records with every phase passed but no size passed without a floor."""
    records = [record(r) for r in range(4)]
    for rec in records:
        rec["sizes"] = []
    verdict = verdict_of(*records)
    assert not verdict.passed and [g.name for g in verdict.gates if not g.ok] == ["wrong_elements"]
    findings = build_findings(verdict=verdict, problems={}, nodes=["node0", "node1"])
    assert [f.id for f in findings] == ["allreduce.wrong_elements"]
    assert "correctness is unproven" in findings[0].message


def test_gates_are_in_the_json_document():
    verdict = verdict_of(*(record(r) for r in range(4)), min_busbw_GBps=1e6)
    data = json.loads(json.dumps(verdict.to_dict()))
    gates = {g["name"]: g for g in data["gates"]}
    assert list(gates) == list(GATE_NAMES)
    assert gates["busbw"]["ok"] is False and "is below --min-busbw" in gates["busbw"]["reasons"][0]
    assert gates["wrong_elements"] == {
        "name": "wrong_elements",
        "ok": True,
        "figure": "0",
        "reasons": [],
        "warnings": [],
        "blocking": True,
    }
    assert gates["stragglers"]["blocking"] is False
    assert data["busbw_floor"]["min_busbw_GBps"] == 1e6 and data["passed"] is False


def test_a_sweep_failure_is_a_connectivity_finding():
    records = [record(r) for r in range(4)]
    records[1] = record(1, failed=("performance", "timed out after 2s in the timed all_reduce of 1M bytes"))
    findings = build_findings(verdict=verdict_of(*records), problems={}, nodes=["node0", "node1"])
    assert [f.id for f in findings] == ["allreduce.connectivity"]
    assert "rank 1 (node0) failed in performance: timed out after 2s" in findings[0].message


# --- the footer ---------------------------------------------------------------------------------


def test_footer_passing_with_a_floor():
    times = {1024: 20.0, 64 * MB: 4000.0}
    verdict = verdict_of(*(record(r, times=times) for r in range(4)), min_busbw_GBps=1.0)
    small = bus_bandwidth(algorithm_bandwidth(1024, 20.0), 4)
    large = bus_bandwidth(algorithm_bandwidth(64 * MB, 4000.0), 4)
    wrong, busbw = footer_lines(verdict)
    assert wrong == "wrong elements: 0 OK"
    assert busbw == f"avg busbw: {(small + large) / 2:.4g} GB/s over 2 sizes OK ({large:.4g} GB/s at 64M, floor 1 GB/s)"


def test_footer_failing_names_the_reasons():
    records = [record(r, wrong=2, failed=("performance", "all_reduce returned wrong elements: 1M")) for r in range(4)]
    wrong, busbw = footer_lines(verdict_of(*records, min_busbw_GBps=1e6))
    assert wrong.startswith("wrong elements: 8 FAIL (8 wrong elements at sizes 1M; ")
    assert busbw.startswith("avg busbw: ") and " FAIL (bus bandwidth " in busbw
    assert busbw.endswith("at 1M is below --min-busbw 1e+06 GB/s)")


def test_footer_without_a_floor_or_complete_sizes():
    _, unset = footer_lines(verdict_of(*(record(r) for r in range(4))))
    assert unset.endswith("GB/s over 1 size (no floor set: --min-busbw)") and "OK" not in unset
    _, partial = footer_lines(verdict_of(*(record(r) for r in range(3)), expected_world_size=4, min_busbw_GBps=1.0))
    assert partial.startswith("avg busbw: none (no size was measured by every rank) FAIL (")
    assert "bandwidth is unproven" in partial


def test_the_text_report_ends_the_table_with_the_footer():
    verdict = verdict_of(*(record(r) for r in range(4)), min_busbw_GBps=1e6)
    settings, _ = resolve_settings(AllreduceOptions(nproc_per_node=2), [("node0", 8), ("node1", 8)], None)
    text = io.StringIO()
    print_allreduce(Console(file=text, width=300), AllreduceOutcome("r1", "done", settings, verdict=verdict))
    lines = text.getvalue().splitlines()
    at = lines.index("wrong elements: 0 OK")
    assert lines[at + 1].startswith("avg busbw: ") and " FAIL (bus bandwidth " in lines[at + 1]
    assert "busbw (GB/s)" in "\n".join(lines[:at])  # after the table
