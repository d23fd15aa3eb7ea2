"""The verdict over per-rank records: bandwidth math, stragglers, the gate, missing ranks.

Records are built with the worker's own RankReport, so these tests read exactly the JSON the
worker writes.
"""

import json

import pytest

from ascendprep.verify.allreduce.results import (
    VERDICT_SCHEMA_VERSION,
    CollectedOutput,
    StragglerRule,
    algorithm_bandwidth,
    build_verdict,
    bus_bandwidth,
    compress_ranks,
    find_stragglers,
    parse_worker_output,
    record_from_dict,
)
from ascendprep.verify.allreduce.worker import PHASES, RankReport

MB = 2**20


def record(rank, world=4, node=None, times=None, wrong=0, train=None, failed=None, local_world=2, injected=()):
    """A worker record: all phases passed unless ``failed=(phase, reason)``."""
    report = RankReport(rank, rank % local_world, world, local_world, node or f"node{rank // local_world}")
    report.data["backend"] = "hccl"
    for phase in PHASES:
        report.finish(phase, 0.01)
    for nbytes, time_us in sorted((times or {1 * MB: 100.0}).items()):
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
    report.data["train"] = train
    report.data["injected"] = list(injected)
    return report.data


def collected(*records, errors_text=""):
    text = "\n".join("ASCENDPREP_RESULT " + json.dumps(r) for r in records)
    return parse_worker_output(text + "\n" + errors_text)


def test_bandwidth_math_matches_nccl_tests():
    # 256 MiB in 10 ms: 26.84 GB/s algorithm bandwidth; on 8 ranks the bus carries 2*7/8 of it.
    algbw = algorithm_bandwidth(256 * MB, 10_000.0)
    assert algbw == pytest.approx(26.8435456)
    assert bus_bandwidth(algbw, 8) == pytest.approx(26.8435456 * 1.75)
    assert bus_bandwidth(algbw, 2) == pytest.approx(algbw)
    assert bus_bandwidth(algbw, 1) == 0.0


def test_size_row_uses_the_slowest_rank():
    verdict = build_verdict(
        collected(*(record(r, times={256 * MB: t}) for r, t in enumerate([9000.0, 10_000.0, 9500.0, 9800.0])))
    )
    (row,) = verdict.sizes
    assert row.time_us == 10_000.0 and row.slowest_rank == 1 and row.slowest_node == "node0"
    assert row.algbw_GBps == pytest.approx(26.8435456)
    assert row.busbw_GBps == pytest.approx(26.8435456 * 1.5)  # 2*(4-1)/4
    assert row.ranks_reporting == 4
    assert verdict.passed and verdict.connectivity_passed and verdict.correctness_passed


def test_straggler_needs_ratio_and_absolute_floor():
    slow = [record(r, times={MB: t}) for r, t in enumerate([100.0, 110.0, 105.0, 400.0])]
    (straggler,) = find_stragglers([record_from_dict(d) for d in slow])
    assert (straggler.rank, straggler.node, straggler.sizes) == (3, "node1", (MB,))
    assert straggler.worst_ratio == pytest.approx(400 / 107.5, rel=1e-3)

    jitter = [record(r, times={1024: t}) for r, t in enumerate([10.0, 10.0, 11.0, 40.0])]
    assert find_stragglers([record_from_dict(d) for d in jitter]) == []  # 4x, but only 29.5 us

    spread = [record(r, times={MB: t}) for r, t in enumerate([1000.0, 1000.0, 1000.0, 1400.0])]
    assert find_stragglers([record_from_dict(d) for d in spread]) == []  # 400 us, but 1.4x


def test_straggler_rule_needs_three_ranks_and_is_a_warning():
    pair = [record(r, world=2, times={MB: t}) for r, t in enumerate([100.0, 900.0])]
    assert build_verdict(collected(*pair)).stragglers == ()

    four = [record(r, times={MB: t}) for r, t in enumerate([100.0, 100.0, 100.0, 900.0])]
    verdict = build_verdict(collected(*four))
    assert verdict.passed
    assert verdict.straggler_nodes == ("node1",)
    assert any("rank 3 (node1) straggles at 1M" in w for w in verdict.warnings)
    loose = build_verdict(collected(*four), straggler_rule=StragglerRule(ratio=10.0))
    assert loose.stragglers == ()


def test_gate_reads_largest_size_measured_by_every_rank():
    times = {1024: 20.0, 64 * MB: 4000.0}
    records = [record(r, times=times) for r in range(4)]
    busbw = bus_bandwidth(algorithm_bandwidth(64 * MB, 4000.0), 4)
    passing = build_verdict(collected(*records), min_busbw_GBps=busbw - 0.1)
    assert passing.passed and passing.busbw_floor.passed and passing.busbw_floor.at_bytes == 64 * MB
    failing = build_verdict(collected(*records), min_busbw_GBps=busbw + 0.1)
    assert not failing.passed and not failing.busbw_floor.passed
    assert "is below --min-busbw" in failing.busbw_floor.reason
    assert failing.busbw_floor.measured_busbw_GBps == pytest.approx(busbw)


def test_gate_fails_closed_without_measurements():
    no_sizes = [record(r, times={}) for r in range(4)]
    for rec in no_sizes:
        rec["sizes"] = []
    verdict = build_verdict(collected(*no_sizes), min_busbw_GBps=1.0)
    assert not verdict.passed and not verdict.busbw_floor.passed
    assert verdict.busbw_floor.measured_busbw_GBps is None
    assert "bandwidth is unproven" in verdict.busbw_floor.reason

    # A size only some ranks measured cannot vouch for the fabric either.
    partial = [record(r, times={MB: 100.0}) for r in range(3)]
    assert not build_verdict(collected(*partial), expected_world_size=4, min_busbw_GBps=0.001).busbw_floor.passed


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_gate_threshold_must_be_positive(bad):
    with pytest.raises(ValueError, match="positive number of GB/s"):
        build_verdict(collected(record(0)), min_busbw_GBps=bad)


def test_missing_ranks_and_nodes_are_named():
    records = [record(r, world=8) for r in (0, 1, 2, 3, 6, 7)]
    errors = "ASCENDPREP_ERROR phase=init rank=4 node=node2 reason=DistStoreError: Timed out\n"
    verdict = build_verdict(
        collected(*records, errors_text=errors), expected_nodes=["node0", "node1", "node2", "node3"]
    )
    assert not verdict.passed and not verdict.connectivity_passed
    assert verdict.missing_ranks == (4, 5)
    assert verdict.missing_nodes == ("node2",)
    assert "2 of 8 ranks sent no result: ranks 4-5" in verdict.reasons
    assert "nodes with no result: node2" in verdict.reasons
    assert any(f.rank == 4 and f.phase == "init" for f in verdict.failures)


def test_expected_world_size_reveals_ranks_beyond_the_records():
    verdict = build_verdict(collected(record(0, world=2), record(1, world=2)), expected_world_size=4)
    assert verdict.missing_ranks == (2, 3)
    assert any("but 4 were launched" in reason for reason in verdict.reasons)


def test_no_records_at_all_fails():
    verdict = build_verdict(CollectedOutput(), expected_world_size=2)
    assert not verdict.passed and verdict.missing_ranks == (0, 1)
    assert "no rank reported a result" in verdict.reasons


def test_wrong_elements_fail_correctness():
    verdict = build_verdict(collected(*(record(r, wrong=2) for r in range(4))))
    assert not verdict.passed and not verdict.correctness_passed
    assert "8 wrong elements at sizes 1M" in verdict.reasons


def test_failures_are_grouped_and_launcher_stops_listed_last():
    records = [
        record(0, failed=("performance", "stopped by SIGTERM (torchrun ...)")),
        record(1, failed=("performance", "timed out after 2s in the timed all_reduce")),
        record(2, failed=("performance", "stopped by SIGTERM (torchrun ...)")),
        record(3),
    ]
    verdict = build_verdict(collected(*records))
    failure_lines = [r for r in verdict.reasons if "failed in" in r]
    assert failure_lines == [
        "rank 1 (node0) failed in performance: timed out after 2s in the timed all_reduce",
        "ranks 0, 2 (node0, node1) failed in performance: stopped by SIGTERM (torchrun ...)",
    ]


def test_duplicate_ranks_and_disagreeing_world_sizes_fail():
    verdict = build_verdict(collected(record(0), record(0, node="other"), record(1, world=8)))
    assert any("rank 0 reported more than once" in r for r in verdict.reasons)
    assert any("disagree on the world size" in r for r in verdict.reasons)


def test_injected_faults_never_pass():
    records = [record(r, injected=["inject_wrong=1"]) for r in range(4)]
    verdict = build_verdict(collected(*records))
    assert not verdict.passed
    assert any("self-test faults were injected" in r for r in verdict.reasons)


def _train(status="pass", digest="ab" * 8, reason=None):
    entry = {"status": status, "api": "DistributedDataParallel", "param_digest": digest, "amp": {"status": "on"}}
    if reason:
        entry["reason"] = reason
    return entry


def test_training_pass_fail_skip_and_digest_mismatch():
    skipped = {"status": "skipped", "reason": "torch < 2.2"}
    records = [record(r, train={"ddp": _train(), "hsdp": skipped}) for r in range(4)]
    verdict = build_verdict(collected(*records))
    assert verdict.passed
    assert [(t.mode, t.status) for t in verdict.train] == [("ddp", "pass"), ("hsdp", "skipped")]
    assert verdict.train[0].amp == "on"
    assert "training hsdp skipped: torch < 2.2" in verdict.warnings

    records[2]["train"] = {"ddp": _train("fail", reason="loss is not finite (nan)"), "hsdp": skipped}
    failed = build_verdict(collected(*records))
    assert not failed.passed
    assert "training ddp failed on ranks 2: loss is not finite (nan)" in failed.reasons

    records[2]["train"] = {"ddp": _train(digest="cd" * 8), "hsdp": skipped}
    mismatch = build_verdict(collected(*records))
    assert not mismatch.passed
    assert mismatch.train[0].reason == "parameter digests differ between ranks (2 distinct)"


def test_parse_tolerates_prefixes_and_reports_garbled_lines():
    good = json.dumps(record(0, world=2))
    text = "\n".join(
        [
            "[default0]:ASCENDPREP_RESULT " + good,
            'ASCENDPREP_RESULT {"schema_version": 1, "rank": 1, ASCENDPREP_RESULT {...',
            "ASCENDPREP_RESULT " + json.dumps(dict(record(1, world=2), schema_version=99)),
            "ASCENDPREP_RESULT " + json.dumps(dict(record(1, world=2), rank="one")),
            "[default1]:ASCENDPREP_ERROR phase=connectivity rank=1 node=n1 reason=timed out after 2s",
            "some unrelated torchrun chatter",
        ]
    )
    out = parse_worker_output(text, source="node-a")
    assert [r.rank for r in out.records] == [0]
    assert len(out.problems) == 3
    assert "node-a line 2: result record is not valid JSON" in out.problems[0]
    assert "schema_version 99" in out.problems[1]
    assert "'rank' should be int" in out.problems[2]
    (error,) = out.errors
    assert (error.rank, error.node, error.phase, error.reason) == (1, "n1", "connectivity", "timed out after 2s")
    verdict = build_verdict(out)
    assert not verdict.passed and verdict.missing_ranks == (1,)


def test_to_dict_is_json_ready_and_versioned():
    records = [record(r, times={MB: t}, train={"ddp": _train()}) for r, t in enumerate([100.0, 100.0, 100.0, 900.0])]
    data = build_verdict(collected(*records), min_busbw_GBps=0.001).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["schema_version"] == VERDICT_SCHEMA_VERSION
    assert data["sizes"][0]["bytes"] == MB and data["straggler_nodes"] == ["node1"]
    assert data["busbw_floor"]["passed"] is True and data["train"][0]["mode"] == "ddp"


def test_compress_ranks():
    assert compress_ranks([7, 0, 1, 2, 3, 9, 10]) == "0-3, 7, 9-10"
    assert compress_ranks([5]) == "5"
    assert compress_ranks([]) == ""


def test_every_ranks_time_at_the_largest_size_is_kept_for_the_report():
    four = [record(r, times={MB: 100.0, 64 * MB: t}) for r, t in enumerate([1000.0, 1010.0, 990.0, 2600.0])]
    verdict = build_verdict(collected(*reversed(four)))
    times = verdict.rank_times
    assert times is not None and times.bytes == 64 * MB and times.median_us == pytest.approx(1005.0)
    assert [(t.rank, t.node, t.time_us) for t in times.ranks] == [
        (0, "node0", 1000.0),
        (1, "node0", 1010.0),
        (2, "node1", 990.0),
        (3, "node1", 2600.0),
    ]
    doc = verdict.to_dict()["rank_times"]
    assert doc["ranks"][3] == [3, "node1", 2600.0] and json.loads(json.dumps(doc)) == doc
    assert build_verdict(collected()).rank_times is None
