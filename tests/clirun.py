"""Run the CLI in a fresh interpreter and report what it imported (pytest helper, not shipped).

The test process has imported everything already, so a question such as "does ``plan
--offline`` load paramiko?" needs a new interpreter. The child runs ``ascendprep.cli.main``
in-process with the worktree's package first on the path, then writes its exit code and the
modules it loaded to a report file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RUN_CLI = textwrap.dedent(
    """
    import json, sys
    from ascendprep.cli import main
    report, args = sys.argv[1], sys.argv[2:]
    try:
        main(args, prog_name="ascendprep")
        code = 0
    except SystemExit as exit:
        code = exit.code
    with open(report, "w") as handle:
        json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
    """
)


def python_in_worktree(code: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -c CODE ARGS`` with this worktree's package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", code, *args], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def run_cli(tmp_path: Path, *args: str) -> dict:
    """The CLI's exit code, stdout and every module it loaded (``modules``, sorted)."""
    report = tmp_path / "cli-report.json"
    done = python_in_worktree(_RUN_CLI, str(report), *args, cwd=tmp_path)
    assert report.exists(), done.stderr
    return {**json.loads(report.read_text()), "stdout": done.stdout}


def top_level_packages(modules: list, among: tuple) -> list:
    """Which of the packages ``among`` appear (by their first dotted part) in ``modules``."""
    return sorted({m.split(".")[0] for m in modules} & set(among))
