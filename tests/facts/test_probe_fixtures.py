"""Every case in tests/fixtures/probes/<section>/<case>.json through its probe unit (pyinfra style).

A case is one command's answer: the command as messages name it, its output (stdout, and
optionally stderr, exit status, tries), the section attributes and gather settings it ran
with, and what it must yield: the ``fact`` the unit fills in (as JSON; null when it records
nothing) and the ``errors`` the gather records (none when absent). The format is described in
tests/fixtures/probes/README.md. Each case is checked twice: through the unit alone
(``ProbeUnit.evaluate``) and framed as the gather script would print it, through
``parse_gather_output``, so the loop and the unit agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_core import to_jsonable_python

from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.sections import Section
from ascendprep.facts.unit import Where
from ascendprep.facts.units import by_section

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"
#: Directories under tests/fixtures/probes that hold raw tool output for other tests, not cases.
RAW_DIRS = {"fake_tools", "firewall", "hccn", "npu_smi", "ping", "versions"}
CASES = sorted(path for path in FIXTURES.glob("*/*.json") if path.parent.name not in RAW_DIRS)
_KEYS = {"source", "verbatim", "command", "attrs", "settings", "output", "stderr", "rc", "tries", "fact", "errors"}
_REQUIRED = {"command", "output", "fact"}
UNITS = by_section()


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_every_unit_has_cases_and_every_case_directory_is_a_unit():
    directories = {path.parent.name for path in CASES}
    assert directories <= set(UNITS), f"case directories without a probe unit: {sorted(directories - set(UNITS))}"
    without = set(UNITS) - directories - {"settings", "npus"}  # the script's own bookkeeping
    assert not without, f"probe units without fixture cases: {sorted(without)}"
    assert len(CASES) >= 100


@pytest.mark.parametrize("path", CASES, ids=[_case_id(p) for p in CASES])
def test_case_yields_its_fact_and_errors(path, transcript):
    case = json.loads(path.read_text(encoding="utf-8"))
    assert _REQUIRED <= set(case) <= _KEYS, (
        f"{path.name}: keys {sorted(set(case) - _KEYS)} unknown or {sorted(_REQUIRED - set(case))} missing"
    )
    unit = UNITS[path.parent.name]
    attrs = {key: str(value) for key, value in case.get("attrs", {}).items()}
    settings = {key: str(value) for key, value in case.get("settings", {}).items()}
    where = Where(attrs=attrs, ascend_home=settings.get("ascend_home"), python_path=settings.get("python", ""))
    assert unit.describe(where) == case["command"]

    rc, tries, stderr = case.get("rc", 0), case.get("tries", 1), case.get("stderr", "")
    section = Section(unit.section, attrs, case["output"], stderr, rc, tries)
    timeout = int(settings["timeout"]) if "timeout" in settings else None
    outcome = unit.evaluate(section, where, timeout)
    fact = json.loads(json.dumps(to_jsonable_python(outcome.value))) if outcome.has_value else None
    assert fact == case["fact"]

    framed = [{"name": "settings", "stdout": "".join(f"{k}={v}\n" for k, v in settings.items())}] if settings else []
    framed.append(
        {"name": unit.section, "attrs": attrs, "rc": rc, "tries": tries, "stdout": case["output"], "stderr": stderr}
    )
    facts = parse_gather_output(transcript("gather", framed))
    assert [{"kind": e.kind, "message": e.message} for e in facts.errors] == case.get("errors", [])
    if outcome.error is not None:
        assert {"kind": outcome.error.kind, "message": outcome.error.message} in case.get("errors", [])


@pytest.mark.parametrize("section", sorted({p.parent.name for p in CASES}))
def test_the_script_runs_the_units_whose_cases_are_here(section):
    """A case directory names a section the real script prints (not a unit left out of the registry);
    the Ascend 950 units print only in a script rendered for that generation."""
    script = render_gather_script(None, "python3") + render_gather_script(None, "python3", generation="950")
    assert f"ap_run {section} " in script or (section == "tool.hccn_tool" and "ap_hccn_tool" in script)
