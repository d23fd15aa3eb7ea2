"""Named thresholds of the grey-failure checks: defaults in ``data/grey_thresholds.yaml``, overridable
per inventory (``thresholds:``), and shown in the evidence of every finding that used one.

One mapping of named numbers rather than one model field per check, so that every family of grey
checks (counter rates here, optics margins elsewhere) adds its keys to the data file only; the
inventory validates a key against the names the file lists, with a located error for a typo or a
value out of range (:func:`override_problem`).

Imports nothing from the rest of ascendprep: :mod:`ascendprep.inventory.model` calls it at load time.
"""

from __future__ import annotations

import difflib
import functools
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, Mapping, Optional

import yaml

DATA_PACKAGE = "ascendprep"
DATA_PATH = "data/grey_thresholds.yaml"


class GreyThresholdsError(ValueError):
    """grey_thresholds.yaml is malformed (a packaging bug, not a user error)."""


@dataclass(frozen=True)
class ThresholdSpec:
    """One named threshold: its default, unit, the range an override may take, and what it judges."""

    name: str
    default: float
    unit: str
    low: float
    high: float
    about: str


def _number(value: Any) -> Optional[float]:
    """A finite int/float (bools refused: ``yes`` in YAML is not a threshold), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def parse_specs(text: str, origin: str = DATA_PATH) -> Dict[str, ThresholdSpec]:
    """Validate the data file's text into {name: spec}; GreyThresholdsError names what is wrong."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GreyThresholdsError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        raise GreyThresholdsError(f"{origin}: expected a mapping with schema_version: 1")
    table = raw.get("thresholds")
    if not isinstance(table, dict) or not table:
        raise GreyThresholdsError(
            f"{origin}: thresholds: expected a mapping of name -> {{default, unit, min, max, about}}"
        )
    specs: Dict[str, ThresholdSpec] = {}
    for name, entry in table.items():
        where = f"{origin}: thresholds.{name}"
        if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name.islower():
            raise GreyThresholdsError(f"{where}: a name is lower-case letters, digits and '_'")
        if not isinstance(entry, dict):
            raise GreyThresholdsError(f"{where}: expected a mapping")
        default, low, high = (_number(entry.get(key)) for key in ("default", "min", "max"))
        if default is None or low is None or high is None:
            raise GreyThresholdsError(f"{where}: default, min and max must be numbers")
        if not low <= default <= high:
            raise GreyThresholdsError(f"{where}: default {default:g} is outside min {low:g} .. max {high:g}")
        unit, about = entry.get("unit"), entry.get("about")
        if not isinstance(unit, str) or not isinstance(about, str) or not unit or not about:
            raise GreyThresholdsError(f"{where}: unit and about must be non-empty text")
        specs[name] = ThresholdSpec(name, default, unit, low, high, about)
    return specs


@functools.lru_cache(maxsize=1)
def known() -> Dict[str, ThresholdSpec]:
    """Every threshold the packaged data file defines."""
    text = resources.files(DATA_PACKAGE).joinpath(DATA_PATH).read_text(encoding="utf-8")
    return parse_specs(text, f"{DATA_PACKAGE}/{DATA_PATH}")


def override_problem(name: object, value: object) -> Optional[str]:
    """Why ``thresholds: {name: value}`` in an inventory is refused, or None when it is fine."""
    specs = known()
    if not isinstance(name, str) or name not in specs:
        close = difflib.get_close_matches(str(name), list(specs), n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(specs)})"
        return f"unknown threshold '{name}'{hint}"
    spec = specs[name]
    number = _number(value)
    if number is None:
        return f"{value!r} is not a number ({spec.unit}; default {spec.default:g})"
    if not spec.low <= number <= spec.high:
        return f"{number:g} is outside {spec.low:g} .. {spec.high:g} ({spec.unit})"
    return None


def effective(overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, float]:
    """Defaults with the inventory's overrides on top (overrides already validated at load)."""
    values = {name: spec.default for name, spec in known().items()}
    for name, value in (overrides or {}).items():
        if name in values and override_problem(name, value) is None:
            values[name] = float(value)
    return values


def shown(name: str, value: float, overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """How a finding's evidence shows the threshold it used: name, value, unit, and where it came from."""
    spec = known()[name]
    source = "inventory" if overrides and name in overrides else "default"
    return {"name": name, "value": value, "unit": spec.unit, "source": source}
