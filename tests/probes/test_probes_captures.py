"""Every captured tool answer in tests/fixtures/probes/captures/*.json through the gather parser.

Each file is one command's answer (``{source, command, probe, npu, rc, stdout, stderr, fact,
errors}``, pyinfra-style): the test frames it as the gather script would and asserts the exact
fact (the NPU's fields, the npu-smi list, or the health entry) and the exact recorded errors.
The ``source`` names where the text was published; ``verbatim: false`` marks a form built from
a documented format rather than copied.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendprep.probes.gather import parse_gather_output

CAPTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "captures").glob("*.json"))
_KEYS = {"source", "verbatim", "command", "probe", "npu", "chip", "rc", "tries", "stdout", "stderr", "fact", "errors"}


def test_there_are_captures():
    assert len(CAPTURES) >= 20


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_capture_gives_its_fact_or_error(path, transcript):
    case = json.loads(path.read_text(encoding="utf-8"))
    assert set(case) <= _KEYS and case["source"].strip(), f"{path.name}: unknown keys or no source"
    attrs = {"npu": case["npu"]}
    if "chip" in case:
        attrs["chip"] = case["chip"]
    section = {"name": case["probe"], "attrs": attrs, "rc": case["rc"], "tries": case["tries"], "stdout": case["stdout"], "stderr": case["stderr"]}
    facts = parse_gather_output(transcript("gather", [section]))
    data = facts.to_dict()

    if case["probe"].startswith("hccn."):
        npu = data["npus"][str(case["npu"])]
        assert {key: npu[key] for key in case["fact"]} == case["fact"]
    elif case["probe"] == "npu_smi.health":
        assert data["npu_health"] == ([case["fact"]] if case["fact"] else [])
    elif case["probe"] == "npu_smi.list":
        assert data["npu_smi"] == case["fact"]
    else:
        pytest.fail(f"{path.name}: no rule for probe {case['probe']!r}")
    assert [{"kind": e.kind, "message": e.message} for e in facts.errors] == case["errors"]
