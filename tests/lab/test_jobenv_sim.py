"""The lab's job-environment pieces (lab/sim/jobenv.py): the torch_npu stand-in imports (and its
broken variant fails with the undefined-symbol text), the NNAL file parses, the wrappers are sh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ascendprep.facts.jobenv import parse_nnal_version
from ascendprep.lab.sim import cann
from ascendprep.lab.sim import jobenv as sim


def _import(tmp_path: Path, broken: bool) -> subprocess.CompletedProcess:
    purelib = tmp_path / "site"
    cann.install_torch_npu_metadata(purelib, "2.6.0.post1", "2.6.0")
    (purelib / "torch_npu").mkdir()
    (purelib / "torch_npu" / "__init__.py").write_text(sim.standin_module(broken=broken))
    code = "import torch_npu; print(torch_npu.__version__)"
    return subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {str(purelib)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_stand_in_imports_with_its_metadata_version(tmp_path):
    result = _import(tmp_path, broken=False)
    assert result.returncode == 0 and result.stdout.strip() == "2.6.0.post1", result.stderr


def test_the_broken_stand_in_fails_as_a_mismatched_build_does(tmp_path):
    result = _import(tmp_path, broken=True)
    assert result.returncode == 1
    assert (
        "ImportError:" in result.stderr and sim.UNDEFINED_SYMBOL in result.stderr and "libtorch_npu.so" in result.stderr
    )


def test_nnal_follows_the_cann_tree(tmp_path):
    cann.install_cann_tree(tmp_path, {"cann": "8.2.RC1", "driver": "25.2.0", "firmware": "7.7.0.1.231"}, "x86_64")
    info = parse_nnal_version("x", (tmp_path / sim.NNAL_VERSION_INFO).read_text())
    assert info.version == "8.2.RC1"
    assert (tmp_path / sim.DRIVER_LIB).exists()


@pytest.mark.parametrize("hiding", [False, True])
def test_container_wrappers_are_valid_sh(tmp_path, hiding):
    path = tmp_path / "wrap"
    path.write_text(sim.container_wrapper(hiding))
    assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    assert all(hidden in path.read_text() for hidden in sim.HIDDEN_BY_CONTAINER) is hiding
