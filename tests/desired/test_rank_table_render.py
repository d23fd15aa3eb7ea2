"""The rank table's text is ``json.dumps(table, indent=2)`` and a newline, byte for byte
(ranktable.render_rank_table): every host's copy is compared by sha256, so a changed byte would
show every node of every cluster as drifted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendprep.desired.ranktable import build_rank_table, render_rank_table
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import load_inventory

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("inventory", sorted(p.name for p in (ROOT / "inventories").glob("*.yaml")))
def test_shipped_inventories_render_as_the_stdlib_does(inventory: str) -> None:
    loaded = load_inventory(ROOT / "inventories" / inventory)
    desired = build_desired(loaded)
    table = build_rank_table(loaded, desired.ipplan)
    text = render_rank_table(table)
    assert text == json.dumps(table, indent=2) + "\n"
    assert text.startswith('{\n  "version": "1.')
