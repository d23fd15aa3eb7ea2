"""The facts model and the probes' parsers are pure: no SSH stack, and facts knows no host paths."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK_AND_IMPORT = textwrap.dedent(
    """
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("paramiko", "fabric", "invoke"):
                raise ImportError(f"{name} is blocked: this module must stay pure")
            return None

    sys.meta_path.insert(0, Block())
    import importlib
    for name in sys.argv[1:]:
        importlib.import_module(name)
    print(" ".join(sorted(m for m in sys.modules if m.startswith("ascendprep"))))
    """
)


def _import(*modules: str) -> set:
    done = subprocess.run(
        [sys.executable, "-c", _BLOCK_AND_IMPORT, *modules],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_facts_imports_nothing_from_probes():
    loaded = _import("ascendprep.facts.model")
    assert not {m for m in loaded if m.startswith("ascendprep.facts.model")}, loaded


def test_units_parsers_and_the_gather_parser_import_without_the_ssh_stack():
    parsers = [f"ascendprep.facts.model.{p.stem}" for p in (ROOT / "ascendprep" / "probes").glob("*.py") if p.stem != "__init__"]
    loaded = _import(*parsers)
    assert "ascendprep.facts.units" in loaded and "ascendprep.facts.gather" in loaded
