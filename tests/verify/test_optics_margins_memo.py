"""The optics checks build an inventory's margins once, not per NPU (bench/bench_scale.py: 16
times per host at 4,096 hosts), and a different inventory still gets its own margins."""

from __future__ import annotations

from types import SimpleNamespace

from ascendprep.verify.checks import optics


def _desired(thresholds):
    return SimpleNamespace(inventory=SimpleNamespace(model=SimpleNamespace(thresholds=thresholds)))


def test_margins_follow_each_inventory_and_are_built_once_per_inventory(monkeypatch) -> None:
    built = []
    real = optics.margins_for
    monkeypatch.setattr(optics, "margins_for", lambda desired: built.append(1) or real(desired))
    tight, default = _desired({"lane_spread_db": 1.5}), _desired(None)
    for _ in range(16):
        margins, shown = optics._margins(tight)
    assert margins.lane_spread_db == 1.5 and shown["lane_spread_db"] == {
        "name": "lane_spread_db",
        "value": 1.5,
        "unit": shown["lane_spread_db"]["unit"],
        "source": "inventory",
    }
    assert len(built) == 1
    margins, shown = optics._margins(default)
    assert margins == optics.DEFAULT_MARGINS and shown["lane_spread_db"]["source"] == "default"
    assert optics._margins(tight)[0].lane_spread_db == 1.5 and len(built) == 3


def test_counter_limits_follow_each_inventory_and_are_built_once_per_inventory(monkeypatch) -> None:
    """network.counters reads its limits for every NPU: built once per inventory, shown from the
    right inventory, and an inventory with other thresholds gets its own."""
    from ascendprep.inventory import thresholds as grey_thresholds
    from ascendprep.verify.checks import counters

    built = []
    real = grey_thresholds.effective
    monkeypatch.setattr(grey_thresholds, "effective", lambda overrides=None: built.append(1) or real(overrides))
    strict, default = _desired({"fcs_errors_per_s": 0.1}), _desired({})
    for _ in range(16):
        limits, shown = counters._limits(strict)
    assert limits["fcs_errors_per_s"] == 0.1 and shown["fcs_errors_per_s"]["source"] == "inventory" and len(built) == 1
    limits, shown = counters._limits(default)
    assert limits["fcs_errors_per_s"] == real()["fcs_errors_per_s"] and shown["fcs_errors_per_s"]["source"] == "default"
    assert counters._limits(strict)[0]["fcs_errors_per_s"] == 0.1 and len(built) == 3
