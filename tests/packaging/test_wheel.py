"""The package as users install it without the scripts: a wheel, into a virtualenv of its own.

Built with ``python -m build`` from a copy of the checkout (so nothing in the checkout changes),
installed into a fresh venv with its dependencies, then run from outside the checkout: the
all-reduce worker and the data files must travel in the wheel, not be read from the tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(
    ".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".ascendprep*", ".pytest_cache", ".hypothesis"
)


def _run(argv: list, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{' '.join(map(str, argv))} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def test_wheel_carries_worker_and_data_and_plans_offline_from_a_fresh_venv(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=_SKIP, symlinks=True)
    _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(source)],
        tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("ascendprep-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ascendprep/verify/allreduce/worker.py" in names
    assert "ascendprep/data/compat.yaml" in names
    assert "ascendprep/report/templates/verify.html.j2" in names  # verify --html
    assert "ascendprep/data/diagnose/knowledge.yaml" in names  # diagnose, and the all-reduce verdict
    assert not any(name.startswith("tests/") for name in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inventory = shutil.copy(REPO / "inventories" / "atlas800-2node.yaml", elsewhere / "inventory.yaml")
    result = _run([str(env_dir / "bin" / "ascendprep"), "plan", "--offline", str(inventory)], elsewhere, timeout=120)
    assert "192.168.100.101" in result.stdout and "Atlas 800 training server" in result.stdout, result.stdout
    where = _run([str(env_dir / "bin" / "python"), "-c", "import ascendprep; print(ascendprep.__file__)"], elsewhere)
    assert where.stdout.strip().startswith(str(env_dir)), "the wheel's copy must be the one that ran"
