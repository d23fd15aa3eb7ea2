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
import sys
from typing import Dict, List, Optional

from ascendprep.facts.model import OpticalInfo, OpticalLane, OpticalThresholds
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected

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
_LANE_FIELDS = {"tx power": ("tx_power_mw", "mw"), "rx power": ("rx_power_mw", "mw"), "tx bias": ("tx_bias_ma", "ma")}
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
_TEXT_KEYS = {
    "vendor name": "vendor_name",
    "vendor part number": "part_number",
    "vendor serial number": "serial_number",
    "xsfp identifier": "identifier",
}


def _reading(key: str, value: str, unit: str) -> Optional[float]:
    """``4.4035 mW`` → 4.4035 (unit checked, case-insensitive); ``NA`` and the like → None."""
    if value.lower() in _NO_VALUE:
        return None
    match = _NUMBER.match(value)
    if not match or match.group(2).lower() != unit:
        raise UnexpectedOutput(f"optical {key} {value!r} is not a number in {unit}")
    return float(match.group(1))


def _flag(key: str, value: str) -> Optional[int]:
    """A flag mask (``0x3``, or decimal); ``NA`` and the like → None."""
    text = value.lower()
    if text in _NO_VALUE:
        return None
    try:
        mask = int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        raise UnexpectedOutput(f"optical {key} {value!r} is not a hex mask") from None
    if not 0 <= mask <= MAX_MASK:
        raise UnexpectedOutput(f"optical {key} {value[:40]!r} is wider than a lane mask (at most {MAX_MASK:#x})")
    return mask


def parse_optical_info(stdout: str) -> OpticalInfo:
    """:class:`OpticalInfo` from ``-optical -g``; UnexpectedOutput for any other text."""
    if "digital diagnostic monitoring" in stdout.lower():
        raise UnexpectedOutput(
            "the 'v2' table form of -optical -g (powers in dBm) is not supported; expected 'name : value' lines"
        )
    present: Optional[bool] = None
    values: Dict[str, object] = {}
    thresholds: Dict[str, Optional[float]] = {}
    flags: Dict[str, Optional[int]] = {}
    lanes: Dict[Optional[int], Dict[str, Optional[float]]] = {}
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if not sep:
            if line.lower() in ("optical info", "..."):
                continue
            raise UnexpectedOutput(f"unrecognised optical line {line!r}")
        key = " ".join(key.split()).lower()
        value = value.strip()
        if key == "optical info":
            continue
        if key == "present":
            if value.lower() not in _PRESENT:
                raise UnexpectedOutput(f"optical present value {value!r}")
            present = _PRESENT[value.lower()]
        elif key == "temperature":
            if value.lower() in _NO_VALUE:
                values["temperature_note"] = value or "NA"
            else:
                values["temperature_c"] = _reading(key, value, "c")
        elif key == "vcc":
            values["vcc_mv"] = _reading(key, value, "mv")
        elif key == "high power enable reg":
            values["high_power_enabled"] = {"enabled": True, "not enabled": False}.get(value.lower())
        elif key == "xsfp wave length":
            wave = _reading(key, value, "nm")
            values["wavelength_nm"] = int(wave) if wave else None
        elif key in _TEXT_KEYS:
            name = _TEXT_KEYS[key]
            # vendor, part number and module type repeat across a fleet; serial numbers do not
            values[name] = (value if name == "serial_number" else sys.intern(value)) or None
        elif key in _THRESHOLD_KEYS:
            name, unit = _THRESHOLD_KEYS[key]
            thresholds[name] = _reading(key, value, unit)
        elif key in _FLAG_KEYS:
            flags[_FLAG_KEYS[key]] = _flag(key, value)
        else:
            lane_key = _LANE_KEY.match(key)
            if lane_key is None:
                continue  # vendor org unique id, date code, SNR lines, vendor rev ...: not judged
            kind, index_text = lane_key.groups()
            index = int(index_text) if index_text else None
            if index is not None and index >= MAX_LANES:
                raise UnexpectedOutput(f"optical lane {index} in {line!r}: at most {MAX_LANES} lanes are known")
            name, unit = _LANE_FIELDS[kind]
            lanes.setdefault(index, {})[name] = _reading(key, value, unit)
    if present is None:
        raise not_as_expected("'present : present|not present'", stdout)
    if None in lanes and len(lanes) > 1:
        indexed_only = {k: v for k, v in lanes.items() if k is not None}
        unindexed = lanes.pop(None)
        if any(v is not None for v in unindexed.values()) or not indexed_only:
            raise UnexpectedOutput("optical readings mix lane-numbered and unnumbered lines")
    masks = [flags.get(name) for name in _LANE_FLAGS]
    return OpticalInfo(
        present_line=present,
        lanes=tuple(
            _lane(index, lanes[index], masks)
            for index in sorted(lanes, key=lambda index: -1 if index is None else index)
        ),
        indexed=None not in lanes,
        thresholds=OpticalThresholds(**thresholds),
        flags=flags,
        **values,  # type: ignore[arg-type]
    )


#: The flag masks, named as OpticalLane names its flag bits.
_LANE_FLAGS = ("tx_los", "rx_los", "tx_lol", "rx_lol")


def _lane(index: Optional[int], readings: Dict[str, Optional[float]], masks: List[Optional[int]]) -> OpticalLane:
    """A lane with its flag bits (``masks``: the module's, in :data:`_LANE_FLAGS` order). The
    unnumbered form has one reading for the module: any bit set in a mask flags it (the tool does
    not say which lane carries it)."""
    if index is None:
        bits = [None if mask is None else mask != 0 for mask in masks]
    else:
        bits = [None if mask is None else bool(mask >> index & 1) for mask in masks]
    return OpticalLane(lane=index, **readings, **dict(zip(_LANE_FLAGS, bits)))  # type: ignore[arg-type]


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
