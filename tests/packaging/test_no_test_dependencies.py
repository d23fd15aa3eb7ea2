"""The wheel's modules import nothing of the test extras: pytest and hypothesis are not
dependencies, so an installed ascendprep must not need them (the pytest helpers for lab
tests live in tests/labsupport.py, outside the wheel)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ascendprep"
TEST_ONLY = {"pytest", "hypothesis", "_pytest", "prometheus_client", "ansible"}


def test_no_packaged_module_imports_a_test_dependency():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [
                f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {name}"
                for name in names
                if name.split(".")[0] in TEST_ONLY
            ]
    assert offenders == []
