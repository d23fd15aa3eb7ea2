"""What the CLI imports per command: the lab's modules only for ``lab``, never for plan/apply/verify.

Each case runs the CLI in a fresh interpreter (this test process has imported everything
already) with the worktree's package first on the path, and reports which ``ascendprep.lab``
modules and SSH packages it loaded.
"""

from __future__ import annotations

import socket
from pathlib import Path

import yaml
from clirun import run_cli, top_level_packages

SSH_PACKAGES = ("paramiko", "fabric", "invoke")


def _cli(tmp_path: Path, *args: str) -> dict:
    result = run_cli(tmp_path, *args)
    modules = result.pop("modules")
    lab = [m for m in modules if m == "ascendprep.lab" or m.startswith("ascendprep.lab.")]
    return {**result, "lab": lab, "ssh": top_level_packages(modules, SSH_PACKAGES)}


def _inventory(tmp_path: Path, port: int) -> Path:
    document = {
        "name": "t",
        "product": "atlas-a2",
        "npus_per_node": 2,
        "device_network": {"subnet": "10.20.0.0/24", "tls": False},
        "nodes": [{"name": "n[1-2]", "host": "127.0.0.[1-2]"}],
        "software": {"cann": "8.0.RC3"},
        "ssh": {"port": port, "connect_timeout": 2},
    }
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed once the with ends: connections are refused


def test_plan_offline_and_a_live_plan_import_no_lab_module(tmp_path: Path) -> None:
    inventory = _inventory(tmp_path, _refused_port())
    offline = _cli(tmp_path, "plan", "--offline", str(inventory))
    assert offline["code"] == 0 and offline["lab"] == []
    live = _cli(tmp_path, "plan", str(inventory), "--timeout", "20")
    assert live["code"] == 1  # both hosts refuse the connection
    assert live["lab"] == [] and {"paramiko", "fabric"} <= set(live["ssh"])


def test_the_lab_command_is_still_listed_and_loads_when_named(tmp_path: Path) -> None:
    """The unlike case: naming ``lab`` imports the lab's CLI (so the check above can fail)."""
    listed = _cli(tmp_path, "--help")
    assert listed["code"] == 0 and "lab " in listed["stdout"] and "A virtual Ascend cluster" in listed["stdout"]
    named = _cli(tmp_path, "lab", "status", "--help")
    assert named["code"] == 0 and "ascendprep.lab.cli" in named["lab"]
    assert "Nodes, whether their sshd answers" in named["stdout"]


def test_the_groups_summaries_are_the_commands_own() -> None:
    """``ascendprep --help`` lists each command from ``cli.COMMANDS`` without importing it; its
    summary must say what the command's own help says first."""
    import importlib

    from ascendprep.cli import COMMANDS

    for name, lazy in COMMANDS.items():
        command = getattr(importlib.import_module(lazy.module), lazy.attribute)
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert lazy.summary == first, name


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    listed = run_cli(tmp_path, "--help")
    assert listed["code"] == 0 and {"plan ", "apply ", "verify ", "lab "} <= {w + " " for w in listed["stdout"].split()}
    assert not [
        m for m in listed["modules"] if m.startswith(("ascendprep.commands.", "ascendprep.run", "ascendprep.lab"))
    ]
