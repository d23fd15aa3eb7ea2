"""``hccn_tool -i N -optical -g``: the optical module of one NPU port, read in full.

The format is the driver's ``tool_show_optical_info`` (``tool.c``, docs/ascend-reference.md
§1.4 ``-optical -g`` and §4.7): ``optical info:`` then ``name : value`` lines. What a parser must
survive, each seen in a real capture or in the driver source:

* per-lane readings ``Tx Power0..3`` / ``Rx Power0..3`` / ``Tx Bias0..3`` in mW / mA;
* the older single-reading form ``Tx Power : 4.4035 mW`` (no lane index), read as one lane
  whose number is unknown (``OpticalInfo.indexed`` is False);
* ``NA`` for every reading of an electrical (copper, DAC) port, or of a reading the module
  cannot give; an A3 DR4 module shows two lanes per die with values and the other two ``NA``;
* ``temperature : NA`` / ``not supported`` / ``get failed`` instead of ``47 C``;
* ``present : not present`` followed by real readings (a 910A capture in the MindCluster docs):
  the module is there, the presence bit is not to be believed;
* ``Tx/Rx Los Flag`` and ``Tx/Rx LoL Flag`` as hex masks, bit i = lane i (``0x0`` = none);
* the module's own alarm thresholds (``Vcc High Thres``, ``RxPower Low Thres`` ...), which
  apply to every lane.

The ``v2`` table form (``-optical -g v2``, powers in dBm) is not what the gather asks for; met
anyway it is refused as an unsupported format rather than misread.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ascendprep.facts.model import OpticalInfo, OpticalLane, OpticalThresholds
from ascendprep.facts.text import UnexpectedOutput, not_as_expected

#: How many lanes a module may report (QSFP-DD / OSFP modules have 8); a lane index beyond it
#: is refused as output this parser does not know.
MAX_LANES = 8

#: The widest flag mask accepted: the driver prints one byte; two leave room for 16-lane modules.
MAX_MASK = 0xFFFF

#: Values that mean "no reading" (copper ports, a module that cannot say).
_NO_VALUE = ("na", "n/a", "not supported", "get failed", "")


_PRESENT = {"present": True, "not present": False}
_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)$")
_LANE_KEY = re.compile(r"^(tx power|rx power|tx bias)\s*(\d*)$")
_FLAG_KEYS = {"tx los flag": "tx_los", "rx los flag": "rx_los", "tx lol flag": "tx_lol", "rx lol flag": "rx_lol"}
#: A reading in one unit (``_NUMBER`` with that unit, in any case): the usual line, one match.
_IN_UNIT = {unit: re.compile(r"(-?\d+(?:\.\d+)?)\s*" + "".join(f"[{c}{c.upper()}]" for c in unit)) for unit in ("mw", "ma", "c", "mv")}
_LANE_FIELDS = {"tx power": ("tx_power_mw", "mw"), "rx power": ("rx_power_mw", "mw"), "tx bias": ("tx_bias_ma", "ma")}
#: (field, unit, the reading's pattern) of each kind of lane reading, as its lines' actions carry it.
_LANE_DETAILS = {kind: (field_name, unit, _IN_UNIT[unit]) for kind, (field_name, unit) in _LANE_FIELDS.items()}
_THRESHOLD_KEYS = {
    "temp high thres": ("temp_high_c", "c"),
    "temp low thres": ("temp_low_c", "c"),
    "vcc high thres": ("vcc_high_mv", "mv"),
    "vcc low thres": ("vcc_low_mv", "mv"),
    "txpower high thres": ("tx_power_high_mw", "mw"),
    "txpower low thres": ("tx_power_low_mw", "mw"),
    "rxpower high thres": ("rx_power_high_mw", "mw"),
    "rxpower low thres": ("rx_power_low_mw", "mw"),
}
#: The lane keys as drivers print them (``tx power0``, ``rx power 3``, ``tx bias``) → (kind, lane), looked
#: up before :data:`_LANE_KEY` reads any other spelling (``tx power07``, ``tx power9``).
_LANE_KEYS = {
    f"{kind}{sep}{index}": (kind, int(index) if index else None)
    for kind in _LANE_FIELDS
    for sep in ("", " ")
    for index in ["", *map(str, range(MAX_LANES))]
    if not (sep and not index)
}
_TEXT_KEYS = {
    "vendor name": "vendor_name",
    "vendor part number": "part_number",
    "vendor serial number": "serial_number",
    "xsfp identifier": "identifier",
}

# What a (normalised, lower-case) key means: (what, name, detail), one dict lookup per line.
_SKIP, _PRESENT_LINE, _TEMPERATURE, _VCC, _HIGH_POWER, _WAVE_LENGTH = "skip", "present", "temperature", "vcc", "high_power", "wave"
_TEXT, _THRESHOLD, _FLAG, _LANE = "text", "threshold", "flag", "lane"
_KEY_ACTIONS: Dict[str, tuple] = {
    "optical info": (_SKIP, None, None),
    "present": (_PRESENT_LINE, None, None),
    "temperature": (_TEMPERATURE, None, None),
    "vcc": (_VCC, None, None),
    "high power enable reg": (_HIGH_POWER, None, None),
    "xsfp wave length": (_WAVE_LENGTH, None, None),
    **{key: (_TEXT, name, None) for key, name in _TEXT_KEYS.items()},
    **{key: (_THRESHOLD, name, (unit, _IN_UNIT[unit])) for key, (name, unit) in _THRESHOLD_KEYS.items()},
    **{key: (_FLAG, name, None) for key, name in _FLAG_KEYS.items()},
    **{key: (_LANE, index, _LANE_DETAILS[kind]) for key, (kind, index) in _LANE_KEYS.items()},
}


def _read_key(raw_key: str) -> Tuple[str, tuple]:
    """(normalised name, action) of a name as printed: lower case, outer spaces dropped, inner runs
    of whitespace read as one space (``tx  power 0``, a tab); a lane name in any other spelling
    (``tx power07``) by :data:`_LANE_KEY`; a name not judged (vendor org unique id, date code, SNR
    lines, vendor rev ...) is skipped."""
    key = raw_key.strip().lower()
    action = _KEY_ACTIONS.get(key)
    if action is None:
        key = " ".join(key.split())
        action = _KEY_ACTIONS.get(key)
    if action is None:
        lane_key = _LANE_KEY.match(key)
        if lane_key is None:
            action = (_SKIP, None, None)
        else:
            kind, index_text = lane_key.groups()
            action = (_LANE, int(index_text) if index_text else None, _LANE_DETAILS[kind])
    return key, action


def _reading(key: str, value: str, unit: str) -> Optional[float]:
    """``4.4035 mW`` → 4.4035 (unit checked, case-insensitive); ``NA`` and the like → None.
    ``value`` comes stripped (parse_optical_info strips every value once)."""
    match = _NUMBER.match(value)
    if match is None:
        if value.lower() in _NO_VALUE:
            return None
        raise UnexpectedOutput(f"optical {key} {value!r} is not a number in {unit}")
    number, its_unit = match.groups()
    if its_unit.lower() != unit:
        raise UnexpectedOutput(f"optical {key} {value!r} is not a number in {unit}")
    return float(number)


#: The masks as the driver prints them (``0x0`` .. ``0xff``, one byte) → their value: a flag line
#: is one lookup, and :func:`_flag` reads any other spelling (``NA``, ``0X3``, ``3``, a wider mask).
_DRIVER_MASKS: Dict[str, int] = {f"{mask:#x}": mask for mask in range(256)}


def _flag(key: str, value: str) -> Optional[int]:
    text = value.strip().lower()
    if text in _NO_VALUE:
        return None
    try:
        mask = int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        raise UnexpectedOutput(f"optical {key} {value.strip()!r} is not a hex mask") from None
    if not 0 <= mask <= MAX_MASK:
        raise UnexpectedOutput(f"optical {key} {value.strip()[:40]!r} is wider than a lane mask (at most {MAX_MASK:#x})")
    return mask


def parse_optical_info(stdout: str) -> OpticalInfo:
    """:class:`OpticalInfo` from ``-optical -g``; UnexpectedOutput for any other text."""
    if "digital diagnostic monitoring" in stdout.lower():
        raise UnexpectedOutput("the 'v2' table form of -optical -g (powers in dBm) is not supported; expected 'name : value' lines")
    present: Optional[bool] = None
    values: Dict[str, object] = {}
    thresholds: Dict[str, Optional[float]] = {}
    flags: Dict[str, Optional[int]] = {}
    lanes: Dict[Optional[int], Dict[str, Optional[float]]] = {}
    # One pass, one dict lookup per line (this runs for every NPU of every host a verify reads).
    # A line is split before it is stripped: its name and value are stripped on their own, which
    # is the same, and the whole line only for the words of a refusal.
    for line in stdout.splitlines():
        raw_key, sep, value = line.partition(":")
        if not sep:
            line = line.strip()
            if not line or line.lower() in ("optical info", "..."):
                continue
            raise UnexpectedOutput(f"unrecognised optical line {line!r}")
        key, (what, name, detail) = _read_key(raw_key)
        if what is _SKIP:
            continue
        value = value.strip()
        if what is _LANE:  # name: the lane's index; detail: (field, unit, pattern)
            if name is not None and name >= MAX_LANES:
                raise UnexpectedOutput(f"optical lane {name} in {line.strip()!r}: at most {MAX_LANES} lanes are known")
            readings = lanes.get(name)
            if readings is None:
                readings = lanes[name] = {}
            field_name, unit, in_unit = detail
            number = in_unit.fullmatch(value)  # a number in its unit read here, all else by _reading (~20 per module)
            readings[field_name] = float(number[1]) if number is not None else _reading(key, value, unit)
        elif what is _THRESHOLD:  # detail: (unit, pattern)
            unit, in_unit = detail
            number = in_unit.fullmatch(value)
            thresholds[name] = float(number[1]) if number is not None else _reading(key, value, unit)
        elif what is _FLAG:
            mask = _DRIVER_MASKS.get(value)
            flags[name] = mask if mask is not None else _flag(key, value)
        elif what is _TEXT:
            values[name] = value or None
        elif what is _PRESENT_LINE:
            if value.lower() not in _PRESENT:
                raise UnexpectedOutput(f"optical present value {value!r}")
            present = _PRESENT[value.lower()]
        elif what is _TEMPERATURE:
            if value.lower() in _NO_VALUE:
                values["temperature_note"] = value or "NA"
            else:
                values["temperature_c"] = _reading(key, value, "c")
        elif what is _VCC:
            values["vcc_mv"] = _reading(key, value, "mv")
        elif what is _HIGH_POWER:
            values["high_power_enabled"] = {"enabled": True, "not enabled": False}.get(value.lower())
        elif what is _WAVE_LENGTH:
            wave = _reading(key, value, "nm")
            values["wavelength_nm"] = int(wave) if wave else None
    if present is None:
        raise not_as_expected("'present : present|not present'", stdout)
    if None in lanes and len(lanes) > 1:
        indexed_only = {k: v for k, v in lanes.items() if k is not None}
        unindexed = lanes.pop(None)
        if any(v is not None for v in unindexed.values()) or not indexed_only:
            raise UnexpectedOutput("optical readings mix lane-numbered and unnumbered lines")
    indexed = None not in lanes
    masks = [flags.get(name) for name in _LANE_FLAGS]
    return OpticalInfo(
        present_line=present,
        lanes=tuple(_lane(index, lanes[index], masks) for index in (sorted(lanes) if indexed else lanes)),
        indexed=indexed,
        thresholds=OpticalThresholds(**thresholds),
        flags=flags,
        **values,  # type: ignore[arg-type]
    )


#: The flag masks in OpticalLane's field order (after its lane and three readings).
_LANE_FLAGS = ("tx_los", "rx_los", "tx_lol", "rx_lol")


def _lane(index: Optional[int], readings: Dict[str, Optional[float]], masks: List[Optional[int]]) -> OpticalLane:
    """A lane with its flag bits (``masks``: the module's, in :data:`_LANE_FLAGS` order). The
    unnumbered form has one reading for the module: any bit set in a mask flags it (the tool does
    not say which lane carries it).

    Built positionally (four per module, eight modules per host of a 4,096-host verify)."""
    get = readings.get
    if index is None:
        bits = [None if mask is None else mask != 0 for mask in masks]
    else:
        bits = [None if mask is None else bool(mask >> index & 1) for mask in masks]
    return OpticalLane(index, get("tx_power_mw"), get("rx_power_mw"), get("tx_bias_ma"), *bits)


def flagged_lanes(mask: Optional[int], lanes: int) -> List[int]:
    """Lane numbers whose bit is set in ``mask`` below ``lanes`` (the lanes this output covers)."""
    if not mask:
        return []
    return [bit for bit in range(lanes) if mask >> bit & 1]


def parse_optical(stdout: str) -> Dict[str, object]:
    """The NpuFacts fields of ``-optical -g``: ``optical_present`` and the full ``optics``.

    ``optical_present`` believes readings over a ``not present`` line (see the module doc), so
    that network.optical does not call a working module missing.
    """
    info = parse_optical_info(stdout)
    return {"optical_present": info.present, "optics": info}
