"""Files installed into a node: CANN/driver version files, torch_npu metadata, tool wrappers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascendprep.lab.sim import cann, tools

REPO = Path(__file__).resolve().parents[2]


def read_kv(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_cann_tree_has_the_contract_files(tmp_path):
    cann.install_cann_tree(tmp_path, {"cann": "8.0.RC3", "driver": "24.1.rc2", "firmware": "7.5.0.1.129"}, "aarch64")
    driver = read_kv(tmp_path / "usr/local/Ascend/driver/version.info")
    assert driver["Version"] == "24.1.rc2" and driver["package_version"] == "24.1.rc2"
    assert driver["compatible_version_fw"] == "[7.0.0,7.5.99]"
    assert read_kv(tmp_path / "usr/local/Ascend/firmware/version.info")["Version"] == "7.5.0.1.129"
    info = read_kv(tmp_path / "usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info")
    assert (info["package_name"], info["version"], info["arch"]) == ("Ascend-cann-toolkit", "8.0.RC3", "aarch64")
    assert os.readlink(tmp_path / "usr/local/Ascend/ascend-toolkit/latest") == "8.0.RC3"
    env_sh = (tmp_path / "usr/local/Ascend/ascend-toolkit/set_env.sh").read_text()
    assert "export ASCEND_HOME_PATH=" in env_sh and "export ASCEND_OPP_PATH=" in env_sh
    assert read_kv(tmp_path / "etc/Ascend/ascend_cann_install.info") == {"Install_Path": "/usr/local/Ascend"}


def test_cann_tree_upgrade_repoints_latest(tmp_path):
    cann.install_cann_tree(tmp_path, cann.DEFAULT_VERSIONS, "x86_64")
    cann.install_cann_tree(tmp_path, {**cann.DEFAULT_VERSIONS, "cann": "8.1.RC1"}, "x86_64")
    info = read_kv(tmp_path / "usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info")
    assert info["version"] == "8.1.RC1"


@pytest.mark.parametrize(
    "versions, arch, message",
    [
        ({"cann": "8.0.RC3", "driver": "24.1.rc2"}, "x86_64", "missing firmware"),
        ({"cann": "8.0;rm -rf /", "driver": "24.1.rc2", "firmware": "7.5"}, "x86_64", "cann version"),
        (cann.DEFAULT_VERSIONS, "sparc", "arch"),
    ],
)
def test_cann_tree_rejects_bad_input(tmp_path, versions, arch, message):
    with pytest.raises(ValueError, match=message):
        cann.install_cann_tree(tmp_path, versions, arch)


def test_torch_npu_metadata_is_visible_but_not_importable(tmp_path):
    cann.install_torch_npu_metadata(tmp_path, "2.1.0.post6", "2.1.0")
    cann.install_torch_npu_metadata(tmp_path, "2.13.0", "2.13.0")
    code = (
        "import importlib.metadata as m, importlib.util as u, sys;"
        "print(m.version('torch_npu'), m.version('torch-npu'), m.requires('torch_npu'),"
        " u.find_spec('torch_npu') is None)"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.stdout.strip() == "2.13.0 2.13.0 ['torch==2.13.0'] True", result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["torch_npu-2.13.0.dist-info"]


def test_wrappers_run_the_simulator(lab):
    tools.install_node_tools(lab.root("node1"), sys.executable, str(REPO))
    hccn = lab.root("node1") / tools.HCCN_TOOL_PATH
    link = lab.root("node1") / tools.HCCN_TOOL_LINK
    assert os.access(hccn, os.X_OK)
    assert os.readlink(link) == "/usr/local/Ascend/driver/tools/hccn_tool"
    env = {k: v for k, v in lab.env("node1").items() if k != "PYTHONPATH"}
    result = subprocess.run([str(hccn), "-i", "0", "-link", "-g"], capture_output=True, text=True, env=env, timeout=30)
    assert (result.returncode, result.stdout) == (0, "link status: UP\n")
    smi = subprocess.run(
        [str(lab.root("node1") / tools.NPU_SMI_PATH), "info", "-l"], capture_output=True, text=True, env=env, timeout=30
    )
    assert smi.returncode == 0 and "Total Count" in smi.stdout


def test_wrapper_quotes_paths(tmp_path):
    text = tools.wrapper_script("/opt/my python/bin/python3", "/src/it's here", "ascendprep.lab.sim.npu_smi", "npu-smi")
    assert "PYTHONPATH='/src/it'\"'\"'s here'\n" in text
    assert (
        "exec '/opt/my python/bin/python3' -S -c 'import sys; from ascendprep.lab.sim.npu_smi import main; sys.exit(main())' \"$@\"\n"
        in text
    )
    with pytest.raises(ValueError, match="not a module name"):
        tools.wrapper_script("/usr/bin/python3", "/src", "x; import os", "npu-smi")
    with pytest.raises(ValueError, match="absolute"):
        tools.install_node_tools(tmp_path, "python3", str(REPO))


def test_simulator_imports_only_light_stdlib_modules():
    """Start-up cost guard: the tools must not pull typing, pathlib, dataclasses or project deps."""
    code = (
        "import sys; import ascendprep.lab.sim.hccn_tool, ascendprep.lab.sim.npu_smi;"
        "heavy = {'typing', 'pathlib', 'dataclasses', 'ipaddress', 'inspect', 'pydantic', 'yaml', 'rich',"
        " 'click', 'paramiko', 'torch'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.stdout.strip() == "[]", result.stderr


def test_one_query_stays_light(lab):
    """A query through the wrapper loads only the standard library and the simulator.

    The lab runs the tool hundreds of times per command, so its cost is its start-up: no ``site``
    and no third-party import (yaml, pydantic, rich, click, paramiko). Asserted on the imports the
    interpreter reports (``PYTHONPROFILEIMPORTTIME``), not on a wall time; bench/ measures time.
    """
    tools.install_node_tools(lab.root("node1"), sys.executable, str(REPO))
    hccn = str(lab.root("node1") / tools.HCCN_TOOL_PATH)
    lab.set_ip("node1", 0, "10.20.0.10")
    env = dict(lab.env("node1"), PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(
        [hccn, "-i", "0", "-ip", "-g"], capture_output=True, env=env, timeout=30, check=True, text=True
    )
    assert "ipaddr:10.20.0.10" in done.stdout
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "ascendprep" in imported and "site" not in imported
    assert not imported & {"yaml", "pydantic", "rich", "click", "paramiko", "fabric", "torch"}
