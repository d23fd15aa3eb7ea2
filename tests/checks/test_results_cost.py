"""What the checks hold per host at 4,096 hosts (bench/bench_scale.py) is kept small without
changing a verdict: results without evidence share one empty, read-only map; optics.power builds
evidence only for a lane it names, and its sibling-spread test still fires at its threshold."""

from __future__ import annotations

import json

import pytest

from ascendprep.verify.checks import optics
from ascendprep.verify.checks.model import NO_EVIDENCE, CheckResult, Status, failed, passed, skipped
from ascendprep.facts.model import OpticalInfo, OpticalLane, OpticalThresholds
from ascendprep.base.findings import Severity


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
    return optics.OpticsMargins(power_margin_db=1.0, lane_spread_db=spread_db, temp_margin_c=5, vcc_margin_pct=2, bias_spread_ratio=0.5)


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

    result = CheckResult("network.ip", Status.FAILED, Severity.ERROR, "wrong", "node1", 3, "eth", "fix it", {"live": "1"})
    assert [getattr(result, f.name) for f in dataclasses.fields(result)] == ["network.ip", Status.FAILED, Severity.ERROR, "wrong", "node1", 3, "eth", "fix it", {"live": "1"}]
    bare = CheckResult("node.x", Status.PASSED, Severity.INFO, "ok")
    assert (bare.node, bare.npu, bare.subject, bare.fix, bare.evidence) == (None, None, None, "", {})
    assert dataclasses.replace(result, message="other").to_dict() == {**result.to_dict(), "message": "other"}
    assert CheckResult.from_dict(result.to_dict()) == result and CheckResult.from_dict(bare.to_dict()) == bare
    assert json.loads(json.dumps(result.to_dict())) == {
        "check": "network.ip", "status": "failed", "severity": "error", "message": "wrong", "node": "node1",
        "npu": 3, "subject": "eth", "fix": "fix it", "evidence": {"live": "1"},
    }


def _bias_flagged_lane_by_lane(biases, ratio):
    """The bias rule as written per lane (no shortcut): each lane against its siblings' median."""
    from statistics import median

    flagged = []
    for index, value in enumerate(biases):
        siblings = [other for peer, other in enumerate(biases) if peer != index and other > 0]
        if len(siblings) >= 2 and value < median(siblings) * ratio:
            flagged.append(f"lane {index} bias")
    return flagged


def _alarm_flagged_lane_by_lane(rx, low, high, margin_db):
    """The alarm rule as written per lane: dark, beyond an alarm, or within the margin of one."""
    import math

    def db(ratio):
        return 10 * math.log10(ratio)

    return [
        f"lane {index} rx"
        for index, value in enumerate(rx)
        if value <= 0
        or (low is not None and value < low)
        or (high is not None and value > high)
        or (low is not None and low > 0 and db(value / low) < margin_db)
        or (high is not None and high > 0 and db(high / value) < margin_db)
    ]


def _spread_flagged_lane_by_lane(rx, spread_db):
    """The sibling-spread rule as written per lane: each lit lane against its lit siblings' median."""
    import math
    from statistics import median

    flagged = []
    for index, value in enumerate(rx):
        siblings = [other for peer, other in enumerate(rx) if peer != index and other > 0]
        if value > 0 and len(siblings) >= 2 and 10 * math.log10(median(siblings) / value) >= spread_db:
            flagged.append(f"lane {index} rx spread")
    return flagged


def test_the_whole_module_shortcuts_flag_the_same_lanes_as_the_rule_lane_by_lane() -> None:
    """power's "every lane far from the alarms, told from the dimmest and the brightest" and "dimmest
    lane within the spread of the brightest", and module's "no lane under the ratio of the largest
    bias" skip the per-lane tests; on random modules (dark, negative and NaN readings, readings at
    an alarm, equal lanes, values at the boundary) they name exactly the lanes the per-lane rules do."""
    import random

    rng = random.Random(12)
    for _ in range(4000):
        lanes = rng.choice((2, 3, 4, 8))
        base = rng.uniform(0.2, 2.0)
        rx = tuple(rng.choice((0.0, base, base / 2, base / 1.995, base * rng.uniform(0.3, 1.2))) for _ in range(lanes))
        bias = tuple(rng.choice((0.0, base, base / 2, base * 0.499, base * rng.uniform(0.2, 1.2))) for _ in range(lanes))
        spread_db, ratio = rng.choice((3.0, 3.0103, 1.0)), rng.choice((0.5, 0.0, 1.0, 0.499))
        info = OpticalInfo(True, lanes=tuple(OpticalLane(i, rx_power_mw=v, tx_bias_ma=b) for i, (v, b) in enumerate(zip(rx, bias))),
                           thresholds=OpticalThresholds(rx_power_low_mw=1e-6, rx_power_high_mw=100.0))
        margins = optics.OpticsMargins(power_margin_db=0.0, lane_spread_db=spread_db, temp_margin_c=5, vcc_margin_pct=2, bias_spread_ratio=ratio)
        spread = [v.subject for v in optics._power_findings(info, "rx", margins) if v.subject and v.subject.endswith("spread")]
        assert spread == _spread_flagged_lane_by_lane(rx, spread_db), (rx, spread_db)
        assert [v.subject for v in optics._bias_findings(info.lanes, margins)] == _bias_flagged_lane_by_lane(bias, ratio), (bias, ratio)
        low, high = rng.choice((None, 0.0, base / 4, base / 2, base * 0.9)), rng.choice((None, 0.0, base * 1.1, base * 2, base * 4))
        margin_db = rng.choice((0.0, 1.0, 3.0))
        rx = tuple(value if rng.random() < 0.9 else rng.choice((float("nan"), -1.0, low or 0.0, high or 0.0)) for value in rx)
        info = OpticalInfo(True, lanes=tuple(OpticalLane(i, rx_power_mw=v) for i, v in enumerate(rx)),
                           thresholds=OpticalThresholds(rx_power_low_mw=low, rx_power_high_mw=high))
        margins = optics.OpticsMargins(power_margin_db=margin_db, lane_spread_db=99.0, temp_margin_c=5, vcc_margin_pct=2, bias_spread_ratio=ratio)
        named = [v.subject for v in optics._power_findings(info, "rx", margins)]
        assert named == _alarm_flagged_lane_by_lane(rx, low, high, margin_db), (rx, low, high, margin_db)
