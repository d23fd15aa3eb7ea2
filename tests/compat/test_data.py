"""The shipped compat.yaml: loads from the installed package, ships in the wheel, and a broken
file is refused with an error that says where."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest
import yaml

import ascendprep
from ascendprep.compat import CompatDataError, load_compat_data, parse_compat_text, parse_version

REPO = Path(__file__).resolve().parents[2]


def packaged_text() -> str:
    return resources.files("ascendprep").joinpath("data/compat.yaml").read_text(encoding="utf-8")


def test_data_loads_from_the_installed_package() -> None:
    resource = resources.files("ascendprep").joinpath("data/compat.yaml")
    assert resource.is_file()
    assert Path(str(resource)).resolve().is_relative_to(Path(ascendprep.__file__).resolve().parent)
    data = load_compat_data()
    assert len(data.torch_npu_releases) >= 60 and len(data.cann_hdk) >= 20
    assert load_compat_data() is data  # parsed once per process


def test_the_repo_level_data_folder_is_the_same_file() -> None:
    link = REPO / "data" / "compat.yaml"
    if not link.exists():
        pytest.skip("not a source checkout")
    assert link.resolve() == (REPO / "ascendprep" / "data" / "compat.yaml").resolve()


def test_the_copy_says_where_it_came_from_and_keeps_its_sources() -> None:
    text = packaged_text()
    header = "\n".join(text.splitlines()[:3])
    assert header.startswith("# Copied from ") and "docs/compat-notes.md" in header
    raw = yaml.safe_load(text)
    assert {"pt_compat", "cann_rm", "vision_readme", "ascend_docs_pkginfo"} <= set(raw["sources"])
    for source in raw["sources"].values():
        assert source.get("what") and (source.get("repo") or source.get("url"))


def test_rows_come_out_typed() -> None:
    data = load_compat_data()
    row = next(r for r in data.torch_npu_releases if r.torch_npu == parse_version("torch_npu", "2.1.0.post6"))
    assert row.torch == parse_version("torch", "2.1.0") and row.ascend_version == "6.0.rc2"
    assert parse_version("cann", "8.0.RC2") in row.cann and row.python == ("3.8", "3.9", "3.10")
    assert row.status == "eol" and "pt_compat" in row.sources
    hdk = next(r for r in data.cann_hdk if r.cann == parse_version("cann", "8.5.0"))
    assert parse_version("driver", "25.5.X") in hdk.hdk


def _broken(old: str, new: str) -> str:
    text = packaged_text()
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    "old,new,where",
    [
        ('cann: ["9.1.0"], cann_compatible', 'cann: ["nine"], cann_compatible', "torch_npu_releases[0].cann[0]"),
        (
            "source: [pt_compat, pt_relnotes_2610]",
            "source: [pt_compat, no_such_source]",
            "torch_npu_releases[0].source[1]: unknown source id 'no_such_source'",
        ),
        ('torch_npu: "2.11.0", torch', 'torch_npu: "2.12.0", torch', "torch_npu_releases[1]: duplicate of row 0"),
        ("schema_version: 1", "schema_version: 2", "schema_version: expected 1"),
        (
            "status: release, source: [pt_compat, pt_relnotes_2610]}",
            "status: shipped, source: [pt_compat, pt_relnotes_2610]}",
            "torch_npu_releases[0].status",
        ),
        (
            '"2.5.1": {policy: regular, status: maintained, launch: "2024-11-08", no_maintenance_from: "2026-08-08"}',
            '"2.5.1": {policy: regular, status: maintained, launch: "2024-11-08", no_maintenance_from: "someday"}',
            "pytorch_line_policy.lines.2.5.1.no_maintenance_from",
        ),
        ('python: ">=3.10,<=3.14"', 'python: "~=3.10"', "torchvision_by_torch[0].python"),
    ],
)
def test_a_broken_data_file_is_refused_with_a_located_error(old: str, new: str, where: str) -> None:
    with pytest.raises(CompatDataError) as info:
        parse_compat_text(_broken(old, new), "compat.yaml")
    assert str(info.value).startswith("compat.yaml: ") and where in str(info.value)


def test_invalid_yaml_and_missing_files_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(CompatDataError, match="not valid YAML"):
        parse_compat_text("sources: [unclosed", "x.yaml")
    with pytest.raises(CompatDataError, match="cannot read"):
        load_compat_data(tmp_path / "missing.yaml")
    good = tmp_path / "compat.yaml"
    good.write_text(packaged_text(), encoding="utf-8")
    assert len(load_compat_data(good).torch_npu_releases) == len(load_compat_data().torch_npu_releases)


def test_the_data_files_ship_in_the_wheel(tmp_path: Path) -> None:
    """Build the wheel offline from a copy of the tree (the checkout stays untouched)."""
    import setuptools  # noqa: F401  (installed with the test extras' build tooling)

    tree = tmp_path / "src"
    shutil.copytree(
        REPO / "ascendprep", tree / "ascendprep", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, tree / name)
        else:
            (tree / name).write_text("", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("ascendprep-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"ascendprep/data/compat.yaml", "ascendprep/data/thresholds.yaml"} <= names
