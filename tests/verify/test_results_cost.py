"""What the checks hold per host at 4,096 hosts (bench/bench_scale.py) is kept small without
changing a verdict: results without evidence share one empty, read-only map; optics.power builds
evidence only for a lane it names, and its sibling-spread test still fires at its threshold."""

from __future__ import annotations

import json

import pytest

from ascendprep.base.findings import Severity
from ascendprep.facts.model import OpticalInfo, OpticalLane, OpticalThresholds
from ascendprep.verify.checks import optics
from ascendprep.verify.checks.model import NO_EVIDENCE, CheckResult, Status, failed, passed, skipped


def test_verdicts_without_evidence_share_one_empty_map_that_refuses_changes() -> None:
    a, b, c = passed("ok"), skipped("n/a"), failed("bad", {})
    assert a.evidence is b.evidence is c.evidence is NO_EVIDENCE and a.evidence == {}
    with pytest.raises(TypeError):
        a.evidence["added"] = 1
    with pytest.raises(TypeError):
        a.evidence.setdefault("added", 1)
    assert NO_EVIDENCE == {}
    result = CheckResult("node.x", Status.FAILED, Severity.ERROR, "bad", evidence=c.evidence)
    finding = result.finding()
    assert finding is not None and type(finding.evidence) is dict and finding.evidence == {}
    finding.evidence["mine"] = 1  # a finding's evidence is its own copy
    assert json.dumps(result.to_dict()["evidence"]) == "{}" and NO_EVIDENCE == {}


def _margins(spread_db: float) -> optics.OpticsMargins:
    return optics.OpticsMargins(
        power_margin_db=1.0, lane_spread_db=spread_db, temp_margin_c=5, vcc_margin_pct=2, bias_spread_ratio=0.5
    )


@pytest.mark.parametrize(
    "rx, spread_db, warned",
    [
        ((1.0, 1.0, 1.0, 0.5), 3.0, True),  # 0.5 mW is 3.0103 dB under its siblings' median 1.0 mW
        ((1.0, 1.0, 1.0, 0.5), 3.0103, False),
        ((1.0, 1.0, 1.0, 0.5), 3.01029, True),
        ((1.0, 1.0, 0.5), 3.0, True),
        ((1.0, 0.5), 1.0, False),  # one sibling is no median
        ((1.0, 1.0, 0.0, 0.5), 3.0, True),  # a dark sibling is not a reference; the dark lane is named on its own
        ((2.0, 0.9, 0.9, 0.45), 3.0, True),  # the median (0.9), not the brightest lane, is the reference
        ((2.0, 0.9, 0.9, 0.46), 3.0, False),
    ],
)
def test_the_sibling_spread_is_judged_against_the_median_at_its_threshold(rx, spread_db, warned) -> None:
    lanes = tuple(OpticalLane(i, rx_power_mw=value) for i, value in enumerate(rx))
    info = OpticalInfo(True, lanes=lanes, thresholds=OpticalThresholds(rx_power_low_mw=0.01, rx_power_high_mw=10.0))
    verdicts = optics._power_findings(info, "rx", _margins(spread_db))
    spread = [v for v in verdicts if v.subject and v.subject.endswith("spread")]
    assert bool(spread) is warned
    for verdict in spread:
        assert verdict.severity is Severity.WARNING and verdict.evidence["spread_db"] == spread_db


def test_a_check_result_is_whole_and_round_trips() -> None:
    import dataclasses

    result = CheckResult(
        "network.ip", Status.FAILED, Severity.ERROR, "wrong", "node1", 3, "eth", "fix it", {"live": "1"}
    )
    assert [getattr(result, f.name) for f in dataclasses.fields(result)] == [
        "network.ip",
        Status.FAILED,
        Severity.ERROR,
        "wrong",
        "node1",
        3,
        "eth",
        "fix it",
        {"live": "1"},
    ]
    bare = CheckResult("node.x", Status.PASSED, Severity.INFO, "ok")
    assert (bare.node, bare.npu, bare.subject, bare.fix, bare.evidence) == (None, None, None, "", {})
    assert dataclasses.replace(result, message="other").to_dict() == {**result.to_dict(), "message": "other"}
    assert CheckResult.from_dict(result.to_dict()) == result and CheckResult.from_dict(bare.to_dict()) == bare
    assert json.loads(json.dumps(result.to_dict())) == {
        "check": "network.ip",
        "status": "failed",
        "severity": "error",
        "message": "wrong",
        "node": "node1",
        "npu": 3,
        "subject": "eth",
        "fix": "fix it",
        "evidence": {"live": "1"},
    }


def test_odd_readings_a_dark_lane_and_no_sibling_spread_from_unlit_lanes() -> None:
    """A negative reading is a dark lane; a NaN is no reading any rule names, nor a sibling; a
    bias of 0 mA is under its siblings' median but no sibling of the others."""
    lanes = tuple(
        OpticalLane(i, rx_power_mw=rx, tx_bias_ma=bias)
        for i, (rx, bias) in enumerate([(float("nan"), 7.5), (-1.0, 0.0), (1.0, 7.5), (1.0, 3.0)])
    )
    info = OpticalInfo(True, lanes=lanes, thresholds=OpticalThresholds(rx_power_low_mw=0.1, rx_power_high_mw=3.0))
    named = [(v.subject, v.severity) for v in optics._power_findings(info, "rx", _margins(3.0))]
    assert named == [("lane 1 rx", None)]
    assert [v.subject for v in optics._bias_findings(lanes, _margins(3.0))] == ["lane 1 bias", "lane 3 bias"]
