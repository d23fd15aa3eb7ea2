"""The package's control side: importable without torch, and the worker uploadable alone."""

import ast
import subprocess
import sys

import pytest

from ascendprep.verify.allreduce import worker, worker_source


def test_control_side_import_does_not_pull_in_torch():
    """The CLI validates --sizes before uploading; that must not cost a torch import."""
    code = (
        "import sys, ascendprep.verify.allreduce.sizes, ascendprep.verify.allreduce.results; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_worker_source_is_the_uploadable_script():
    assert worker_source() == open(worker.__file__, encoding="utf-8").read()


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names is 3.10+")
def test_worker_imports_only_stdlib_and_torch():
    """It runs on nodes with nothing of ascendprep installed."""
    allowed = set(sys.stdlib_module_names) | {"torch", "torch_npu"}
    imported = set()
    for node in ast.walk(ast.parse(worker_source())):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in the worker"
            imported.add(node.module.split(".")[0])
    assert "torch" in imported
    assert imported <= allowed, imported - allowed


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names is 3.10+")
def test_no_module_beside_the_worker_shadows_the_standard_library():
    """Run as a script, the worker's folder is sys.path[0]: a ``bisect.py`` there broke
    ``import tempfile`` (random imports bisect) on Debian's Python 3.11."""
    from pathlib import Path

    folder = Path(worker.__file__).parent
    shadowing = {p.stem for p in folder.glob("*.py")} & set(sys.stdlib_module_names)
    assert shadowing == set()
