"""Grey-failure thresholds: packaged defaults, inventory overrides validated against the known names."""

from __future__ import annotations

import pytest

from ascendprep.base.yamlsource import InputError
from ascendprep.inventory import thresholds as grey_thresholds
from ascendprep.inventory.load import inventory_from_text
from ascendprep.inventory.thresholds import GreyThresholdsError, effective, override_problem, parse_specs

_INVENTORY = """name: r
product: atlas-a2
device_network: {subnet: 10.0.0.0/24}
nodes:
  - host: node1
"""


def test_packaged_defaults_load_and_cover_the_counter_rates() -> None:
    specs = grey_thresholds.known()
    assert {"fcs_errors_per_s", "pfc_frames_per_s", "pause_frames_per_s", "roce_qp_errors_per_s"} <= set(specs)
    assert specs["pfc_frames_per_s"].default == 1000.0
    assert all(spec.low <= spec.default <= spec.high for spec in specs.values())


def test_an_inventory_override_replaces_only_its_default() -> None:
    inventory = inventory_from_text(_INVENTORY + "thresholds:\n  fcs_errors_per_s: 0.25\n")
    values = effective(inventory.model.thresholds)
    assert values["fcs_errors_per_s"] == 0.25
    assert values["pfc_frames_per_s"] == grey_thresholds.known()["pfc_frames_per_s"].default
    assert grey_thresholds.shown("fcs_errors_per_s", 0.25, inventory.model.thresholds)["source"] == "inventory"
    assert grey_thresholds.shown("pfc_frames_per_s", 1000.0, inventory.model.thresholds)["source"] == "default"


def test_every_bad_override_is_reported_with_its_line() -> None:
    text = _INVENTORY + "thresholds:\n  fcs_errors_per_s: true\n  pfc_frames_per_s: .inf\n  nope: 1\n"
    with pytest.raises(InputError) as caught:
        inventory_from_text(text)
    problems = {(p.line, p.path) for p in caught.value.problems}
    assert problems == {(7, "thresholds.fcs_errors_per_s"), (8, "thresholds.pfc_frames_per_s"), (9, "thresholds.nope")}


@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("fcs_errors_per_s", "1", "is not a number"),
        ("fcs_errors_per_s", -1, "outside"),
        ("pfc_frame_per_s", 1, "did you mean 'pfc_frames_per_s'"),
    ],
)
def test_override_problem_says_why(name: str, value: object, fragment: str) -> None:
    problem = override_problem(name, value)
    assert problem is not None and fragment in problem
    assert override_problem("fcs_errors_per_s", 0) is None


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("thresholds: {a: {default: 1, unit: x, min: 0, max: 2, about: y}}", "schema_version"),
        ("schema_version: 1\nthresholds: {a: {default: 3, unit: x, min: 0, max: 2, about: y}}", "outside"),
        ("schema_version: 1\nthresholds: {a: {default: 1, min: 0, max: 2, about: y}}", "unit and about"),
        ("schema_version: 1\nthresholds: {A-b: {default: 1, unit: x, min: 0, max: 2, about: y}}", "lower-case"),
    ],
)
def test_a_malformed_data_file_names_the_entry(text: str, fragment: str) -> None:
    with pytest.raises(GreyThresholdsError, match=fragment):
        parse_specs(text)
