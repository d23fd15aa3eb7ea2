"""Where host I/O may happen: only in ascendprep.run, and only when a command contacts hosts.

Each case runs in a fresh interpreter (``sys.modules`` of the test process already holds
paramiko), with the worktree's package first on the path.
"""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest
import yaml
from clirun import python_in_worktree, run_cli, top_level_packages

#: The SSH stack: paramiko, and fabric with its invoke.
SSH_PACKAGES = ("paramiko", "fabric", "invoke")
#: The pure core: what plan and verify decide with, readable without any SSH library.
PURE_PACKAGES = (
    "ascendprep.base",
    "ascendprep.inventory",
    "ascendprep.compat",
    "ascendprep.facts",
    "ascendprep.desired",
    "ascendprep.plan",
    "ascendprep.apply",
    "ascendprep.verify",
)
PURE_MODULES = (
    "ascendprep.plan.diff",
    "ascendprep.desired.state",
    "ascendprep.inventory.addressing",
    "ascendprep.facts.model",
    "ascendprep.plan.drift",
    "ascendprep.plan.changes",
    "ascendprep.apply.script",
    "ascendprep.verify.allreduce.jobs",
)

BLOCK_SSH = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockSSH(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ImportError(name + " is blocked: this module must not need SSH")
            return None

    sys.meta_path.insert(0, BlockSSH())
    """
).format(blocked=SSH_PACKAGES)


def test_the_pure_core_imports_with_paramiko_and_fabric_blocked() -> None:
    code = BLOCK_SSH + textwrap.dedent(
        """
        import importlib, json, pkgutil
        try:
            import paramiko
        except ImportError:
            blocked = True
        else:
            blocked = False
        imported = []
        for package in {packages!r}:
            root = importlib.import_module(package)
            imported.append(package)
            for info in pkgutil.walk_packages(root.__path__, package + "."):
                importlib.import_module(info.name)
                imported.append(info.name)
        for module in {modules!r}:
            importlib.import_module(module)
            imported.append(module)
        fleet = sorted(m for m in sys.modules if m.startswith("ascendprep.run"))
        print(json.dumps({{"blocked": blocked, "imported": imported, "fleet": fleet}}))
        """
    ).format(packages=PURE_PACKAGES, modules=PURE_MODULES)
    done = python_in_worktree(code)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["blocked"], "the blocker let paramiko through: this test would prove nothing"
    assert {
        "ascendprep.verify.checks.registry",
        "ascendprep.facts.gather",
        "ascendprep.facts.ping",
        "ascendprep.compat.data",
    } <= set(result["imported"])
    assert result["fleet"] == [], "the pure core imports host I/O"


def test_a_module_that_needs_ssh_fails_under_the_blocker() -> None:
    """The unlike case: the same blocker stops the SSH transport (so the test above can fail)."""
    done = python_in_worktree(BLOCK_SSH + "import ascendprep.remote.ssh\n")
    assert done.returncode != 0
    assert "is blocked: this module must not need SSH" in done.stderr


def _cli(tmp_path: Path, *args: str) -> dict:
    result = run_cli(tmp_path, *args)
    return {"code": result["code"], "loaded": top_level_packages(result["modules"], SSH_PACKAGES)}


def _inventory(tmp_path: Path, host: str = "10.0.0.[11-12]", **ssh: object) -> Path:
    document = {
        "name": "t",
        "product": "atlas-a2",
        "npus_per_node": 2,
        "device_network": {"subnet": "10.20.0.0/24", "tls": False},
        "nodes": [{"name": "n[1-2]", "host": host}],
        "software": {"cann": "8.0.RC3"},
    }
    if ssh:
        document["ssh"] = ssh
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["plan", "--help"],
        ["verify", "--help"],
        ["plan", "--offline", "INVENTORY"],
        ["plan", "--offline", "INVENTORY", "--format", "json"],
        ["plan", "--offline", "INVENTORY", "--format", "csv"],
    ],
    ids=lambda args: " ".join(args),
)
def test_help_and_offline_plan_load_no_ssh_library(tmp_path: Path, args: list) -> None:
    inventory = _inventory(tmp_path)
    result = _cli(tmp_path, *[str(inventory) if a == "INVENTORY" else a for a in args])
    assert result == {"code": 0, "loaded": []}


def test_a_bundle_recheck_loads_no_ssh_library(tmp_path: Path) -> None:
    """``verify --from-bundle`` contacts no host, so it needs no SSH library either."""
    from datetime import date

    from ascendprep.run.bundle import Bundle, write_bundle
    from ascendprep.verify.checks.context import HostEvidence

    text = _inventory(tmp_path).read_text()
    hosts = {
        name: HostEvidence(name, address, None, error=f"{name}: connection refused", error_kind="unreachable")
        for name, address in (("n1", "10.0.0.11"), ("n2", "10.0.0.12"))
    }
    target = write_bundle(
        Bundle(str(tmp_path / "inventory.yaml"), text, hosts, None, "ring", {"only": [], "skip": []}, date(2026, 1, 5)),
        tmp_path / "runs" / "20260105T000000Z",
        {},
    )
    result = _cli(tmp_path, "verify", "--from-bundle", str(target), "--format", "json")
    assert result == {"code": 1, "loaded": []}  # 1: the recorded hosts were unreachable


def test_a_live_plan_loads_the_ssh_stack(tmp_path: Path) -> None:
    """The unlike case: contacting hosts loads paramiko and fabric (so the runner above can see it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the with ends: connections are refused
    inventory = _inventory(tmp_path, host="127.0.0.[1-2]", port=port, connect_timeout=2)
    result = _cli(tmp_path, "plan", str(inventory), "--timeout", "20")
    assert result["code"] == 1
    assert {"paramiko", "fabric"} <= set(result["loaded"])
