"""Golden files for what apply writes (env.sh, set_env.sh, the rank table), and shell syntax.

Regenerate after an intended change with ``ASCENDPREP_UPDATE_GOLDEN=1 pytest tests/desired tests/commands`` (on a
workstation: under ``CI=true`` the session refuses the switch, tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ascendprep.base.paths import ENV_SH, RANK_TABLE, SET_ENV_SH
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import load_inventory

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"


def _files(inventory: str) -> dict[str, str]:
    desired = build_desired(load_inventory(ROOT / "inventories" / inventory))
    first, second = list(desired.nodes.values())[:2]
    by_path = lambda nd: {f.path: f.content for f in nd.files}  # noqa: E731
    return {
        "env.sh": by_path(first)[ENV_SH],
        f"set_env.{first.node.name}.sh": by_path(first)[SET_ENV_SH],
        f"set_env.{second.node.name}.sh": by_path(second)[SET_ENV_SH],
        "rank_table.json": by_path(first)[RANK_TABLE],
    }


@pytest.mark.parametrize("inventory", ["atlas800-2node.yaml", "a2-64node.yaml", "a3-superpod.yaml"])
def test_rendered_files_match_golden(inventory: str) -> None:
    folder = GOLDEN / Path(inventory).stem
    files = _files(inventory)
    if os.environ.get("ASCENDPREP_UPDATE_GOLDEN") == "1":
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (folder / name).write_text(content)
    for name, content in files.items():
        assert (folder / name).read_text() == content, f"{folder.name}/{name} differs from the golden file"


@pytest.mark.parametrize("inventory", ["atlas800-2node.yaml", "a2-64node.yaml", "a3-superpod.yaml"])
def test_shell_files_parse(inventory: str, tmp_path: Path) -> None:
    shells = [s for s in ("bash", "dash", "sh") if shutil.which(s)]
    assert shells
    for name, content in _files(inventory).items():
        if not name.endswith(".sh"):
            continue
        script = tmp_path / name
        script.write_text(content)
        for shell in shells:
            result = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
            assert result.returncode == 0, f"{shell} -n {name}: {result.stderr}"


def test_rank_table_follows_version_1_0() -> None:
    table = json.loads(_files("atlas800-2node.yaml")["rank_table.json"])
    assert table["version"] == "1.0" and table["status"] == "completed" and table["server_count"] == "2"
    ranks = [d["rank_id"] for s in table["server_list"] for d in s["device"]]
    assert ranks == [str(i) for i in range(16)]
    first = table["server_list"][0]
    assert first["server_id"] == "10.0.0.11"
    assert first["device"][0] == {"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"}
    assert all(isinstance(v, str) for s in table["server_list"] for d in s["device"] for v in d.values())


def test_env_sh_sources_cann_and_sets_hccl(tmp_path: Path) -> None:
    """Sourcing env.sh on a host with a CANN tree picks the toolkit's set_env.sh."""
    env_sh = tmp_path / "env.sh"
    env_sh.write_text(_files("atlas800-2node.yaml")["env.sh"])
    toolkit = tmp_path / "Ascend" / "ascend-toolkit"
    (toolkit / "latest").mkdir(parents=True)
    (toolkit / "set_env.sh").write_text("export ASCEND_TOOLKIT_HOME=from-toolkit\n")
    out = subprocess.run(
        [
            "sh",
            "-c",
            f'ASCENDPREP_CANN_PATH={tmp_path}/Ascend . {env_sh} && echo "$ASCEND_TOOLKIT_HOME $HCCL_WHITELIST_DISABLE $HCCL_CONNECT_TIMEOUT"',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "from-toolkit 1 1200"


def _gloo_after_sourcing(spec: str, sys_class_net: Path, before: str = "") -> str:
    """GLOO_SOCKET_IFNAME after the lines set_env.sh gets for HCCL_SOCKET_IFNAME=spec."""
    from ascendprep.desired.envfiles import render_gloo_from_hccl_ifname

    lines = render_gloo_from_hccl_ifname(spec).replace("/sys/class/net/", f"{sys_class_net}/")
    result = subprocess.run(
        ["sh", "-c", before + lines + 'printf %s "${GLOO_SOCKET_IFNAME-unset}"'],
        capture_output=True,
        text=True,
        timeout=30,
        env={},
    )
    return result.stdout


@pytest.mark.parametrize(
    "spec, gloo",
    [
        ("=bond0", "bond0"),
        ("bond0", "bond0"),
        ("bond", "unset"),
        ("^docker", "unset"),
        ("=eth9", "unset"),
        ("bond0,eth0", "unset"),
    ],
)
def test_gloo_follows_an_exact_hccl_socket_ifname(spec: str, gloo: str, tmp_path: Path) -> None:
    # gloo takes one exact interface name: a prefix, an exclusion or a list is not passed on
    # (gloo fails with "Unable to find address for: ^docker"), nor a NIC the host does not have.
    (tmp_path / "bond0").mkdir()
    (tmp_path / "eth0").mkdir()
    assert _gloo_after_sourcing(spec, tmp_path) == gloo
    assert _gloo_after_sourcing(spec, tmp_path, before="GLOO_SOCKET_IFNAME=eth0\n") == "eth0"


def test_ci_refuses_the_golden_update_switch() -> None:
    """Under CI=true a session with ASCENDPREP_UPDATE_GOLDEN set stops before any test runs."""
    env = {**os.environ, "CI": "true", "ASCENDPREP_UPDATE_GOLDEN": "1", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", str(Path(__file__))]
    refused = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout + refused.stderr
    assert "CI must never rewrite its own golden files" in refused.stderr
