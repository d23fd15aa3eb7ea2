"""The rank table's text is ``json.dumps(table, indent=2)`` and a newline, byte for byte, whichever
encoder writes it (ranktable.render_rank_table): every host's copy is compared by sha256, so a
changed byte would show every node of every cluster as drifted."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ascendprep.desired.state import build_desired
from ascendprep.inventory.model import load_inventory
from ascendprep.desired.ranktable import build_rank_table, render_rank_table

ROOT = Path(__file__).resolve().parents[2]


def _stdlib(table: object) -> str:
    return json.dumps(table, indent=2) + "\n"


@pytest.mark.parametrize("inventory", sorted(p.name for p in (ROOT / "inventories").glob("*.yaml")))
def test_shipped_inventories_render_as_the_stdlib_does(inventory: str) -> None:
    loaded = load_inventory(ROOT / "inventories" / inventory)
    desired = build_desired(loaded)
    table = build_rank_table(loaded, desired.ipplan)
    assert render_rank_table(table) == _stdlib(table)


#: Characters where the two encoders could part: escapes, DEL, non-ASCII, line separators.
_AWKWARD = [chr(c) for c in range(0, 0x81)] + ["é", "\u2028", "\u2029", "\ufeff", "😀", "\ud800", "\udfff"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_AWKWARD) if rng.random() < 0.3 else rng.choice("0123456789.abc:") for _ in range(rng.randrange(0, 6)))


def _value(rng: random.Random, depth: int = 0) -> object:
    pick = rng.random()
    if depth > 3 or pick < 0.5:
        return rng.choice([_text(rng), _text(rng), 7, -1, 2**70, 1e16, 0.1, float("nan"), float("inf"), True, None])
    if pick < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    keys = [_text(rng) for _ in range(rng.randrange(0, 4))] + ([rng.choice([1, None, 2.5])] if rng.random() < 0.1 else [])
    return {key: _value(rng, depth + 1) for key in keys}


def test_any_table_renders_as_the_stdlib_does() -> None:
    """Hostile and odd tables (numbers, non-ASCII, control characters, lone surrogates, non-string
    keys): the text is still the stdlib's, or the stdlib's error."""
    rng = random.Random(12)
    for _ in range(3000):
        table = {"version": "1.0", "server_list": [_value(rng) for _ in range(rng.randrange(1, 4))], "status": _value(rng)}
        try:
            expected = _stdlib(table)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                render_rank_table(table)
            continue
        assert render_rank_table(table) == expected, repr(table)


def test_plain_tables_take_the_fast_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of strings (what build_rank_table makes) is not written by the stdlib's encoder."""
    table = build_rank_table(*_a2())
    monkeypatch.setattr(json, "dumps", lambda *a, **k: pytest.fail("the stdlib's encoder was used"))
    assert render_rank_table(table).startswith('{\n  "version": "1.0",\n')


def _a2():
    loaded = load_inventory(ROOT / "inventories" / "a2-64node.yaml")
    return loaded, build_desired(loaded).ipplan
