"""Per-product pass marks for the all-reduce bandwidth gate (data in data/thresholds.yaml).

Today every product's minimum is null: no source gives one (see the YAML's header). The function
still exists so that the gate has one place to read a default from and so that "no default" is an
explicit answer (None) the caller has to handle by failing closed, not a silent 0.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Dict, Optional

import yaml

DATA_PACKAGE = "ascendprep"
DATA_PATH = "data/thresholds.yaml"


class ThresholdsError(ValueError):
    """thresholds.yaml is malformed, or a product it does not know was asked for."""


def parse_thresholds(text: str, origin: str = DATA_PATH) -> Dict[str, Optional[float]]:
    """Validate thresholds.yaml text into {product: GB/s or None}."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ThresholdsError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        raise ThresholdsError(f"{origin}: expected a mapping with schema_version: 1")
    table = raw.get("min_busbw_gbps")
    if not isinstance(table, dict) or not table:
        raise ThresholdsError(f"{origin}: min_busbw_gbps: expected a mapping of product -> GB/s or null")
    result: Dict[str, Optional[float]] = {}
    for product, value in table.items():
        if value is None:
            result[product] = None
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            result[product] = float(value)
        else:
            raise ThresholdsError(
                f"{origin}: min_busbw_gbps.{product}: expected a positive number or null, got {value!r}"
            )
    return result


@functools.lru_cache(maxsize=1)
def _packaged() -> Dict[str, Optional[float]]:
    text = resources.files(DATA_PACKAGE).joinpath(DATA_PATH).read_text(encoding="utf-8")
    return parse_thresholds(text, f"{DATA_PACKAGE}/{DATA_PATH}")


def min_busbw_gbps(product: str) -> Optional[float]:
    """Minimum bus bandwidth (GB/s) for ``product`` (atlas-800 / atlas-a2 / atlas-a3), or None
    when no source gives one. A gate that needs a number and gets None must fail closed.
    Raises ThresholdsError for a product the file does not list (a typo is not "no data").
    """
    table = _packaged()
    if product not in table:
        raise ThresholdsError(f"unknown product {product!r}; thresholds.yaml lists {', '.join(sorted(table))}")
    return table[product]
