"""Every broken inventory in tests/fixtures/broken fails with its expected file:line and message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.base import exitcodes
from ascendprep.cli import main

BROKEN = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "broken").glob("*.yaml"))


def _expectation(path: Path) -> tuple[int, str]:
    first = path.read_text().splitlines()[0]
    match = re.match(r"# expect: (\d+): (.*)$", first)
    assert match, f"{path.name} lacks an '# expect: LINE: message' first line"
    return int(match.group(1)), match.group(2)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_inventory_is_located_and_never_a_traceback(path: Path) -> None:
    line, fragment = _expectation(path)
    result = CliRunner().invoke(main, ["plan", str(path), "--offline"])
    output = result.output
    assert result.exit_code == exitcodes.INVALID, output
    assert "Traceback" not in output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert f"{path}:{line}: {fragment}" in " ".join(output.split()), output


def test_corpus_is_not_empty() -> None:
    assert len(BROKEN) >= 20


def test_ask_sudo_password_needs_a_terminal(tmp_path: Path) -> None:
    inventory = Path(__file__).resolve().parents[2] / "inventories" / "atlas800-2node.yaml"
    result = CliRunner().invoke(main, ["plan", str(inventory), "--ask-sudo-password"], input="")
    assert result.exit_code == exitcodes.INVALID
    assert "--ask-sudo-password needs a terminal" in result.output
