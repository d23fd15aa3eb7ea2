"""--format json of plan and verify: compact (one line), the same document json.dumps writes
(as values: orjson spells some floats' exponents otherwise and writes UTF-8 rather than \\u
escapes), strict JSON (no NaN), and written in slices so a 4,096-host document is neither
indented by the pure-Python encoder nor held as one string."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.report import jsondoc
from ascendprep.report.jsondoc import SLICE_ITEMS, json_chunks, write_json


def _compact(document) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False) + "\n"


def _strict(text: str):
    """The document ``text`` holds, refusing NaN and Infinity as a strict JSON reader does."""

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "document",
    [
        {},
        [],
        {"a": 1, "b": [1, 2, {"c": None}]},
        {"checks": [{"n": i, "e": {"x": [i, "é"]}} for i in range(3 * SLICE_ITEMS + 7)], "tail": True},
        {
            "hosts": {f"node{i:04d}": {"ok": i % 2 == 0, "npus": list(range(8))} for i in range(2 * SLICE_ITEMS + 3)},
            "n": 0,
        },
        {
            "deep": {"inner": [{"i": i} for i in range(5 * SLICE_ITEMS)], "k": "v"},
            2: "int key",
            None: 2.5,
            True: "bool key",
            1.5: "float key",
        },
        [{"i": i} for i in range(4 * SLICE_ITEMS + 1)],
        {"big": list(range(2 * SLICE_ITEMS + 1)), "small": list(range(3))},
    ],
)
def test_the_chunks_make_exactly_the_compact_document(document) -> None:
    assert "".join(json_chunks(document)) == _compact(document)


def test_a_large_list_is_encoded_a_slice_at_a_time(monkeypatch) -> None:
    calls = []
    real = jsondoc.orjson.dumps

    def counting(value, **kwargs):
        calls.append(len(value) if isinstance(value, (list, dict)) else 0)
        return real(value, **kwargs)

    monkeypatch.setattr(jsondoc.orjson, "dumps", counting)
    stream = io.StringIO()
    document = {"checks": [{"i": i} for i in range(10 * SLICE_ITEMS)]}
    write_json(document, stream)
    assert json.loads(stream.getvalue()) == document
    assert max(calls) <= SLICE_ITEMS  # never the whole list at once
    assert stream.getvalue().count("\n") == 1


@pytest.mark.parametrize("count", [0, 1, SLICE_ITEMS, 3 * SLICE_ITEMS + 5])
def test_entries_are_written_as_the_list_of_their_values_made_a_slice_at_a_time(count, monkeypatch) -> None:
    made = []

    def convert(i):
        made.append(i)
        return {"i": i, "s": "é" * (i % 3)}

    lazy = jsondoc.Entries(list(range(count)), convert)
    assert made == []  # nothing made until written
    eager = [convert(i) for i in range(count)]
    made.clear()
    document = {"checks": lazy, "n": 1}
    chunks = json_chunks(document)
    assert "".join(chunks) == _compact({"checks": eager, "n": 1})
    assert made == list(range(count))
    assert (
        len(lazy) == count and list(lazy) == eager and (count == 0 or lazy[-1] == eager[-1]) and lazy[1:3] == eager[1:3]
    )


def test_run_json_lines_are_one_key_per_line_and_the_same_document() -> None:
    document = {
        "schema_version": 1,
        "hosts": {f"n{i}": {"ssh_execs": 2} for i in range(3 * SLICE_ITEMS)},
        "pings": {"pairs": [[i, i + 1] for i in range(2 * SLICE_ITEMS + 1)]},
        3: None,
    }
    text = b"".join(jsondoc.json_lines(document)).decode("utf-8")
    assert json.loads(text) == json.loads(json.dumps(document))
    assert text.count("\n") == len(document) + 2 and text.startswith('{\n "schema_version":1,\n')


def test_what_orjson_refuses_is_written_by_the_stdlib_and_nothing_is_lost() -> None:
    huge = 10**30  # beyond 64 bits: a hostile counter
    lone = "bad \udcff byte"  # a lone surrogate, as surrogateescape decodes undecodable bytes
    document = {"checks": [{"value": huge, "nan": float("nan")}, {"text": lone}, {"ok": 1.5}], "tail": "é"}
    text = "".join(json_chunks(document))
    assert text.count("\n") == 1
    assert _strict(text) == {"checks": [{"value": huge, "nan": None}, {"text": lone}, {"ok": 1.5}], "tail": "é"}


def test_non_finite_floats_are_null_and_text_is_utf8_whatever_the_locale() -> None:
    document = {"temperature": "45 °C", "readings": [float("nan"), float("inf"), -float("inf"), 0.5], 3: [1e16]}
    binary = io.BytesIO()
    ascii_terminal = io.TextIOWrapper(binary, encoding="ascii")  # LANG=C on an old system, a Latin-1 pipe...
    ascii_terminal.write("before ")
    write_json(document, ascii_terminal)
    ascii_terminal.write("after")
    ascii_terminal.flush()
    raw = binary.getvalue()
    assert raw.startswith(b"before {") and raw.endswith(b"}\nafter")
    assert _strict(raw[len(b"before ") : -len(b"after")].decode("utf-8")) == {
        "temperature": "45 °C",
        "readings": [None, None, None, 0.5],
        "3": [1e16],
    }
    text = io.StringIO()  # a stream with no binary layer gets the same text
    write_json(document, text)
    assert text.getvalue().encode("utf-8") == raw[len(b"before ") : -len(b"after")]


INVENTORY = (
    "name: x\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\n"
    "ssh: {port: 1, connect_timeout: 3, known_hosts: known_hosts}\n"
    "nodes: [{name: 'n[1-2]', host: '127.0.0.[1-2]'}]\n"
)


@pytest.fixture
def inventory(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "inv.yaml"
    path.write_text(INVENTORY)
    return path


def test_plan_and_verify_write_their_json_compact(inventory: Path, tmp_path: Path) -> None:
    from ascendprep.commands.plan import plan_command
    from ascendprep.commands.verify import verify_command

    for command, args in [(plan_command, ["-o", str(tmp_path / "p.json")]), (verify_command, ["--skip", "cluster"])]:
        outcome = CliRunner().invoke(command, [str(inventory), "--format", "json", *args])
        assert outcome.stdout.count("\n") == 1 and outcome.stdout.endswith("}\n"), outcome.stdout[:300]
        document = _strict(outcome.stdout)
        assert outcome.stdout == _compact(document)
        assert [h["node"] if isinstance(h, dict) and "node" in h else h for h in document["hosts"]] == ["n1", "n2"]


def test_offline_plan_json_is_compact(inventory: Path) -> None:
    from ascendprep.commands.plan import plan_command

    outcome = CliRunner().invoke(plan_command, [str(inventory), "--offline", "--format", "json"])
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout == _compact(json.loads(outcome.stdout))
