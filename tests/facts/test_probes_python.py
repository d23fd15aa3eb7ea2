"""The interpreter probe: versions from importlib.metadata, torch_npu never imported."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

from ascendprep.facts.python_pkgs import PROBE_CODE, parse_python_probe


def _installed(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_probe_code_reports_this_interpreter():
    out = subprocess.run([sys.executable, "-c", PROBE_CODE], capture_output=True, text=True, check=True).stdout
    env, problem = parse_python_probe(sys.executable, out)
    assert problem is None
    assert env.python_version == "%d.%d.%d" % sys.version_info[:3]
    assert env.packages == {name: _installed(name) for name in ("torch", "torch_npu", "torchvision")}


def test_torch_npu_version_is_read_without_importing_it(tmp_path):
    marker = tmp_path / "imported"
    package = tmp_path / "site" / "torch_npu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    dist = tmp_path / "site" / "torch_npu-2.1.0.post17.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.1.0.post17\n")
    out = subprocess.run(
        [sys.executable, "-c", PROBE_CODE],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
    ).stdout
    env, _ = parse_python_probe("python3", out)
    assert env.packages["torch_npu"] == "2.1.0.post17"
    assert not marker.exists()
