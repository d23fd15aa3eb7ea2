"""The all-reduce gate's per-product floor: no source gives one, so every product answers None."""

from __future__ import annotations

import pytest

from ascendprep.compat import ThresholdsError, min_busbw_gbps
from ascendprep.compat.thresholds import parse_thresholds


@pytest.mark.parametrize("product", ["atlas-800", "atlas-a2", "atlas-a3"])
def test_no_product_has_a_sourced_minimum(product: str) -> None:
    assert min_busbw_gbps(product) is None


def test_an_unknown_product_is_an_error_not_a_missing_value() -> None:
    with pytest.raises(ThresholdsError, match="unknown product 'atlas-a5'.*atlas-800, atlas-a2, atlas-a3"):
        min_busbw_gbps("atlas-a5")


def test_a_sourced_value_would_be_returned_as_a_float() -> None:
    table = parse_thresholds("schema_version: 1\nmin_busbw_gbps: {atlas-a2: 20, atlas-a3: null}\n")
    assert table == {"atlas-a2": 20.0, "atlas-a3": None}


@pytest.mark.parametrize(
    "text,problem",
    [
        ("min_busbw_gbps: {atlas-a2: 20}", "schema_version"),
        ("schema_version: 1\nmin_busbw_gbps: {atlas-a2: fast}", "min_busbw_gbps.atlas-a2"),
        ("schema_version: 1\nmin_busbw_gbps: {atlas-a2: -3}", "positive number"),
        ("schema_version: 1\nmin_busbw_gbps: {atlas-a2: true}", "positive number"),
        ("schema_version: 1\nmin_busbw_gbps: {}", "min_busbw_gbps"),
        ("schema_version: [1", "not valid YAML"),
    ],
)
def test_a_malformed_thresholds_file_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ThresholdsError, match=problem):
        parse_thresholds(text, "thresholds.yaml")
