"""Optical module checks: a link that is up but dimming is named before the job slows down.

Every reading is judged against the thresholds the module itself prints in the same
``-optical -g`` output (one set for all lanes), never a number of ours; what is ours are the
margins that make "close to a threshold" and "far below its sibling lanes" a warning:
:data:`DEFAULT_MARGINS`, shown in each finding's evidence. MindCluster's fault rules are the
model (docs/ascend-reference.md §4.7): a lane's Tx/Rx power outside the thresholds, any LoS/LoL
flag other than ``0x0``/``NA``, and a lane-to-lane power difference are faults.

Errors: a dark lane (0 mW), a reading beyond the module's alarm threshold, LoS or LoL on a
lane, a temperature or Vcc outside its thresholds. Warnings: within the margin of a threshold,
a lane the spread below its siblings, a temperature the module cannot read. Electrical (copper,
DAC) ports print ``NA`` for every power and are passed as such; a ``not present`` line followed
by real readings is a present module (the probe believes the readings).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from statistics import median
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.base.findings import Severity
from ascendprep.facts.model import OpticalInfo, OpticalLane
from ascendprep.facts.optics import flagged_lanes
from ascendprep.inventory import thresholds as grey_thresholds
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped


@dataclass(frozen=True)
class OpticsMargins:
    """What turns a healthy-but-close reading into a warning. The values are named thresholds
    (defaults in ``data/grey_thresholds.yaml``, overridable in the inventory's
    ``thresholds:``); ``margins_for`` is the one place they are read.

    ``power_margin_db``: a Tx/Rx power within this many dB above the module's low alarm (or below
    its high alarm) is a warning (1 dB ≈ 26 % of the power).
    ``lane_spread_db``: a lane this many dB below the median of its sibling lanes is a warning
    (MindCluster's toolkit flags a lane-to-lane power difference; 3 dB = half the power).
    ``temp_margin_c``: a temperature within this many °C of the module's high threshold.
    ``vcc_margin_pct``: a supply voltage within this percentage of either Vcc threshold.
    ``bias_spread_ratio``: a lane whose laser bias is below this fraction of its siblings'
    median (the v1 output prints no bias thresholds, so bias is judged against its siblings).
    """

    power_margin_db: float
    lane_spread_db: float
    temp_margin_c: float
    vcc_margin_pct: float
    bias_spread_ratio: float


_NEEDS = ("node.reachable", "node.hccn_tool")
_PROBES = ("hccn.optical",)
_FIX_POWER = "clean the fibre end faces and reseat the module; if the lane stays low, replace the module or the fibre (and check the switch-side module)"
_FIX_FLAGS = "a lane lost its signal or clock: check the fibre and the switch-side module, reseat or replace (hccn_tool -i {npu} -optical -g shows the flags)"
_FIX_MODULE = "check the port's airflow and the module; replace a module that runs outside its own thresholds"


def margins_for(desired: Any) -> OpticsMargins:
    """The margins verify uses for this inventory: the data file's defaults
    (``data/grey_thresholds.yaml``) with the inventory's ``thresholds:`` on top."""
    overrides = desired.inventory.model.thresholds if desired is not None else None
    values = grey_thresholds.effective(overrides)
    return OpticsMargins(**{name: values[name] for name in OpticsMargins.__dataclass_fields__})


#: The packaged defaults (what :func:`margins_for` gives an inventory without ``thresholds:``).
DEFAULT_MARGINS = margins_for(None)


def margins_evidence(desired: Any, margins: OpticsMargins) -> Dict[str, Any]:
    """The margins as a finding's evidence shows them: per name its value, unit and source."""
    overrides = desired.inventory.model.thresholds if desired is not None else None
    return {name: grey_thresholds.shown(name, value, overrides) for name, value in asdict(margins).items()}


#: (the inventory's ``thresholds:`` object, its margins, their evidence) of the last inventory
#: checked: power and module read them for every NPU of every node (16 times per 8-NPU host), and
#: they depend on the inventory alone. The evidence dict is shared by the results that show it
#: and never changed after it is built.
_LAST_MARGINS: Tuple[Any, Optional[OpticsMargins], Dict[str, Any]] = (None, None, {})


def _margins(desired: Any) -> Tuple[OpticsMargins, Dict[str, Any]]:
    """:func:`margins_for` and :func:`margins_evidence` of ``desired``, built once per inventory."""
    global _LAST_MARGINS
    overrides = desired.inventory.model.thresholds if desired is not None else None
    seen, margins, evidence = _LAST_MARGINS
    if margins is None or seen is not overrides:
        margins = margins_for(desired)
        evidence = margins_evidence(desired, margins)
        _LAST_MARGINS = (overrides, margins, evidence)
    return margins, evidence


def _db(ratio: float) -> float:
    return 10 * math.log10(ratio)


def _dbm(mw: Optional[float]) -> Optional[float]:
    return round(10 * math.log10(mw), 2) if mw is not None and mw > 0 else None


def metrics(info: OpticalInfo) -> Dict[str, Any]:
    """The module's figures under the MindCluster NPU exporter's metric names (same meaning and
    units: mW, °C, mV; ``npu_chip_optical_state`` 1 = present). Lane-less readings are lane 0."""
    out: Dict[str, Any] = {
        "npu_chip_optical_state": 1 if info.present else 0,
        "npu_chip_optical_temp": info.temperature_c,
        "npu_chip_optical_vcc": info.vcc_mv,
    }
    for lane in info.lanes:
        index = lane.lane if lane.lane is not None else 0
        out[f"npu_chip_optical_tx_power_{index}"] = lane.tx_power_mw
        out[f"npu_chip_optical_rx_power_{index}"] = lane.rx_power_mw
    return out


def _optics(ctx: NodeContext, npu: int) -> Optional[OpticalInfo]:
    live = ctx.facts.npus.get(npu)
    return getattr(live, "optics", None) if live is not None else None


def _not_optical(info: Optional[OpticalInfo]) -> Optional[Verdict]:
    """A verdict for ports with nothing optical to judge (absent, copper), else None."""
    if info is None:
        return skipped("no -optical -g reading for this NPU")
    medium = info.medium  # a property that looks at every lane: asked once
    if medium == "absent":
        return skipped("no module in the port (network.optical reports it)", {"present": False})
    if medium == "electrical":
        return passed(
            "electrical (copper/DAC) port: the tool prints no optical power to judge",
            {"medium": "electrical", "present_line": info.present_line},
        )
    return None


def _lane_name(lane: OpticalLane) -> str:
    return f"lane {lane.lane}" if lane.lane is not None else "the module (no lane number printed)"


def _power_findings(info: OpticalInfo, direction: str, margins: OpticsMargins) -> List[Verdict]:
    """Tx or Rx power of every lane against the module's thresholds and against its siblings."""
    attr = f"{direction}_power_mw"
    low = getattr(info.thresholds, f"{direction}_power_low_mw")
    high = getattr(info.thresholds, f"{direction}_power_high_mw")
    word = direction.capitalize()
    read = [(lane, value) for lane in info.lanes if (value := getattr(lane, attr)) is not None]
    verdicts: List[Verdict] = []
    margin_db = margins.power_margin_db
    for lane, value in read:
        severity: Optional[Severity] = None
        if value <= 0:
            what = "the lane is dark"
        elif low is not None and value < low:
            what = f"under the module's low alarm {low:.4f} mW"
        elif high is not None and value > high:
            what = f"over the module's high alarm {high:.4f} mW (overload: add an attenuator or check the module type)"
        elif low is not None and low > 0 and _db(value / low) < margin_db:
            what, severity = f"within {margin_db:g} dB of the module's low alarm {low:.4f} mW", Severity.WARNING
        elif high is not None and high > 0 and _db(high / value) < margin_db:
            what, severity = f"within {margin_db:g} dB of the module's high alarm {high:.4f} mW", Severity.WARNING
        else:
            continue
        where = _lane_name(lane)
        evidence = {
            "lane": lane.lane,
            "reading_mw": value,
            "reading_dbm": _dbm(value),
            "low_alarm_mw": low,
            "high_alarm_mw": high,
        }
        if severity is not None:
            evidence["margin_db"] = margin_db
        message = f"{word} power of {where} is {value:.4f} mW" + (": " if value <= 0 else ", ") + what
        verdicts.append(failed(message, evidence, fix=_FIX_POWER, severity=severity, subject=f"{where} {direction}"))
    # A lit lane is judged against the median of at least two lit siblings; a lane already named
    # above is not named twice.
    flagged = {v.subject for v in verdicts}
    for lane, value in read:
        siblings = [other for peer, other in read if peer is not lane and other > 0]
        if value <= 0 or len(siblings) < 2 or f"{_lane_name(lane)} {direction}" in flagged:
            continue
        reference = median(siblings)
        below = _db(reference / value)
        if below >= margins.lane_spread_db:
            verdicts.append(
                failed(
                    f"{word} power of {_lane_name(lane)} is {value:.4f} mW, {below:.1f} dB below its sibling lanes (median {reference:.4f} mW)",
                    {
                        "lane": lane.lane,
                        "reading_mw": value,
                        "siblings_median_mw": round(reference, 4),
                        "below_db": round(below, 2),
                        "spread_db": margins.lane_spread_db,
                    },
                    fix=_FIX_POWER,
                    severity=Severity.WARNING,
                    subject=f"{_lane_name(lane)} {direction} spread",
                )
            )
    return verdicts


def _plain(record: Any) -> Dict[str, Any]:
    """A flat dataclass of scalars as a dict: ``asdict`` without its deep copy of every value."""
    names = _FIELD_NAMES.get(type(record))
    if names is None:
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in fields(record))
    return {name: getattr(record, name) for name in names}


_FIELD_NAMES: Dict[type, Tuple[str, ...]] = {}


def power(ctx: NodeContext, npu: int) -> List[Verdict]:
    info = _optics(ctx, npu)
    early = _not_optical(info)
    if early is not None:
        return [early]
    assert info is not None
    margins, shown_margins = _margins(ctx.desired)
    verdicts = _power_findings(info, "rx", margins) + _power_findings(info, "tx", margins)
    figures = metrics(info)
    if verdicts:
        for verdict in verdicts:  # every lane's figures beside the one named, for --format json
            verdict.evidence.setdefault("metrics", figures)
        return verdicts
    evidence = {"metrics": figures, "thresholds": _plain(info.thresholds), "margins": shown_margins}
    lanes = sum(1 for lane in info.lanes if lane.has_readings)
    return [passed(f"Tx/Rx power of {lanes} lane{'s' if lanes != 1 else ''} within the module's thresholds", evidence)]


_FLAG_WORDS = {
    "rx_los": "Rx loss of signal (LoS)",
    "tx_los": "Tx loss of signal (LoS)",
    "rx_lol": "Rx loss of lock (LoL)",
    "tx_lol": "Tx loss of lock (LoL)",
}


def signal(ctx: NodeContext, npu: int) -> List[Verdict]:
    """LoS/LoL masks decoded per lane. Only lanes this output shows with readings count: an A3
    DR4 die prints the other die's lanes as ``NA``, and their bits are not this port's."""
    info = _optics(ctx, npu)
    early = _not_optical(info)
    if early is not None:
        return [early]
    assert info is not None
    verdicts: List[Verdict] = []
    live_lanes: Optional[List[Optional[int]]] = None  # worked out when a flag is set (rarely)
    for name, words in _FLAG_WORDS.items():
        mask = info.flags.get(name)
        if not mask:
            continue
        if info.indexed:
            if live_lanes is None:
                live_lanes = [lane.lane for lane in info.lanes if lane.has_readings]
            lanes = [bit for bit in flagged_lanes(mask, MAX_BITS) if bit in live_lanes]
            if not lanes:
                continue
            where = f"lane{'s' if len(lanes) > 1 else ''} {', '.join(str(bit) for bit in lanes)}"
        else:
            lanes, where = [], "the module (the tool prints no lane numbers)"
        evidence: Dict[str, Any] = {
            "flag": name,
            "mask": f"{mask:#x}",
            "lanes": lanes,
            "rx_power_mw": {str(lane.lane): lane.rx_power_mw for lane in info.lanes},
        }
        if not info.present_line:
            # The presence bit and the flags come from the same status read, which here says
            # "not present" beside live readings: a warning to look, not a verdict on the lane.
            evidence["present_line"] = False
            verdicts.append(
                failed(
                    f"{words} flag set on {where} (flag {mask:#x}), but the module also reports 'not present' while giving readings: its status flags are not to be trusted",
                    evidence,
                    fix=_FIX_FLAGS.format(npu=npu),
                    severity=Severity.WARNING,
                    subject=name,
                )
            )
            continue
        verdicts.append(
            failed(f"{words} on {where} (flag {mask:#x})", evidence, fix=_FIX_FLAGS.format(npu=npu), subject=name)
        )
    if verdicts:
        return verdicts
    shown = {name: (f"{mask:#x}" if mask is not None else None) for name, mask in info.flags.items()}
    missing = [name for name in _FLAG_WORDS if name not in info.flags]
    note = f" ({', '.join(missing)} not printed by this driver)" if missing else ""
    return [passed(f"no LoS/LoL flag set{note}", {"flags": shown, "not_printed": missing})]


#: Flag masks are one byte (eight lanes).
MAX_BITS = 8


def module(ctx: NodeContext, npu: int) -> List[Verdict]:
    """Temperature and Vcc against the module's thresholds; laser bias against its sibling lanes."""
    info = _optics(ctx, npu)
    early = _not_optical(info)
    if early is not None:
        return [early]
    assert info is not None
    margins, shown_margins = _margins(ctx.desired)
    t = info.thresholds
    verdicts: List[Verdict] = []
    temp = info.temperature_c
    temp_evidence = {"temperature_c": temp, "high_c": t.temp_high_c, "low_c": t.temp_low_c}
    if temp is None:
        if (info.temperature_note or "").lower() == "get failed":
            verdicts.append(
                failed(
                    "the module's temperature could not be read ('get failed')",
                    {**temp_evidence, "note": info.temperature_note},
                    fix=_FIX_MODULE,
                    severity=Severity.WARNING,
                    subject="temperature",
                )
            )
    elif t.temp_high_c is not None and temp > t.temp_high_c:
        verdicts.append(
            failed(
                f"module temperature {temp:g} °C is over its high threshold {t.temp_high_c:g} °C",
                temp_evidence,
                fix=_FIX_MODULE,
                subject="temperature",
            )
        )
    elif t.temp_low_c is not None and temp < t.temp_low_c:
        verdicts.append(
            failed(
                f"module temperature {temp:g} °C is under its low threshold {t.temp_low_c:g} °C",
                temp_evidence,
                fix=_FIX_MODULE,
                subject="temperature",
            )
        )
    elif t.temp_high_c is not None and t.temp_high_c - temp < margins.temp_margin_c:
        verdicts.append(
            failed(
                f"module temperature {temp:g} °C is within {margins.temp_margin_c:g} °C of its high threshold {t.temp_high_c:g} °C",
                {**temp_evidence, "margin_c": margins.temp_margin_c},
                fix=_FIX_MODULE,
                severity=Severity.WARNING,
                subject="temperature",
            )
        )
    vcc = info.vcc_mv
    vcc_evidence = {"vcc_mv": vcc, "high_mv": t.vcc_high_mv, "low_mv": t.vcc_low_mv}
    if vcc is not None:
        if (t.vcc_high_mv is not None and vcc > t.vcc_high_mv) or (t.vcc_low_mv is not None and vcc < t.vcc_low_mv):
            over = t.vcc_high_mv is not None and vcc > t.vcc_high_mv
            bound = t.vcc_high_mv if over else t.vcc_low_mv
            verdicts.append(
                failed(
                    f"module supply {vcc:g} mV is {'over' if over else 'under'} its {'high' if over else 'low'} threshold {bound:g} mV",
                    vcc_evidence,
                    fix=_FIX_MODULE,
                    subject="vcc",
                )
            )
        else:
            near = [
                bound
                for bound in (t.vcc_low_mv, t.vcc_high_mv)
                if bound and abs(vcc - bound) < bound * margins.vcc_margin_pct / 100
            ]
            if near:
                verdicts.append(
                    failed(
                        f"module supply {vcc:g} mV is within {margins.vcc_margin_pct:g} % of its threshold {near[0]:g} mV",
                        {**vcc_evidence, "margin_pct": margins.vcc_margin_pct},
                        fix=_FIX_MODULE,
                        severity=Severity.WARNING,
                        subject="vcc",
                    )
                )
    verdicts += _bias_findings(info.lanes, margins)
    if verdicts:
        return verdicts
    evidence = {
        **temp_evidence,
        **vcc_evidence,
        "tx_bias_ma": {str(lane.lane): lane.tx_bias_ma for lane in info.lanes if lane.tx_bias_ma is not None},
        "margins": shown_margins,
    }
    shown = f"{temp:g} °C" if temp is not None else f"'{info.temperature_note or 'not printed'}'"
    return [passed(f"module temperature {shown} and supply within the module's thresholds", evidence)]


def _bias_findings(lanes: Sequence[OpticalLane], margins: OpticsMargins) -> List[Verdict]:
    biased: List[Tuple[OpticalLane, float]] = [(lane, lane.tx_bias_ma) for lane in lanes if lane.tx_bias_ma is not None]
    verdicts: List[Verdict] = []
    for lane, value in biased:
        siblings = [other for peer, other in biased if peer is not lane and other > 0]
        if len(siblings) < 2:
            continue
        reference = median(siblings)
        if value < reference * margins.bias_spread_ratio:
            verdicts.append(
                failed(
                    f"laser bias of {_lane_name(lane)} is {value:.4f} mA, under {margins.bias_spread_ratio:g} x its sibling lanes' median {reference:.4f} mA",
                    {
                        "lane": lane.lane,
                        "bias_ma": value,
                        "siblings_median_ma": round(reference, 4),
                        "ratio": margins.bias_spread_ratio,
                    },
                    fix=_FIX_MODULE,
                    severity=Severity.WARNING,
                    subject=f"{_lane_name(lane)} bias",
                )
            )
    return verdicts


def _check(id: str, title: str, run: Any) -> Check:
    return Check(
        id, ("optics", "network"), "npu", Severity.ERROR, title, _FIX_POWER, run, probes=_PROBES, requires=_NEEDS
    )


CHECKS: List[Check] = [
    _check(
        "optics.power", "each lane's Tx/Rx power is inside the module's own thresholds and near its siblings", power
    ),
    _check("optics.signal", "no lane has loss of signal or loss of lock", signal),
    _check(
        "optics.module",
        "module temperature and supply inside the module's thresholds; laser bias even across lanes",
        module,
    ),
]
