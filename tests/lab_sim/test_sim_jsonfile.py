"""lab/sim/jsonfile.py reads what ``json.loads`` reads, the same way, and fails where it fails."""

from __future__ import annotations

import json

import pytest

from ascendprep.lab.sim import jsonfile

VALID = [
    '{"schema_version": 1, "devices": [{"ip": null, "tls_enable": 0, "admin_up": true, "x": 1.5e3}]}',
    '  \n\t[1, -2, 3.25, "\\u00e9\\n", {"a": {"b": []}}, false, null]\r\n',
    '"just text"',
    "NaN",
    "[Infinity, -Infinity, 1E400]",
    '{"a": 1, "a": 2}',
    "12345678901234567890123",
]
INVALID = ["", "   ", "{", '{"a" 1}', "[1,]", '{"a": 1} x', "\ufeff{}", "'single'", "[1] [2]", '"\x01"']


@pytest.mark.parametrize("text", VALID)
def test_valid_documents_read_exactly_as_json_reads_them(text):
    ours, theirs = jsonfile.loads(text), json.loads(text)
    assert repr(ours) == repr(theirs)  # repr: NaN != NaN, but prints the same


@pytest.mark.parametrize("text", INVALID)
def test_invalid_documents_fail_with_json_s_own_error(text):
    with pytest.raises(json.JSONDecodeError) as ours:
        jsonfile.loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_written_documents_read_back(tmp_path):
    doc = {"b": [1, {"c": None}], "a": "é"}
    path = tmp_path / "doc.json"
    path.write_text(jsonfile.dump_text(doc), encoding="utf-8")
    assert path.read_text(encoding="utf-8") == json.dumps(doc, indent=1, sort_keys=True)
    with open(path, encoding="utf-8") as handle:
        assert jsonfile.load(handle) == doc
