"""set_env.sh binds gloo and NCCL to the NIC that holds the node's inventory address.

The file is sourced by sh/dash/bash with a fake ``ip`` on PATH that prints what ``ip -o addr``
prints on a host, so the lookup is exercised exactly as on a node.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ascendprep.base.paths import SET_ENV_SH
from ascendprep.desired import envfiles
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text

IP_ADDR = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever
2: eth0@if7    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever
3: eth10    inet 10.0.0.110/24 brd 10.0.0.255 scope global eth10\\       valid_lft forever preferred_lft forever
"""

SHELLS = [s for s in ("sh", "dash", "bash") if shutil.which(s)]


def _source(shell: str, tmp_path: Path, text: str, before: str = "") -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake_ip = bin_dir / "ip"
    fake_ip.write_text("#!/bin/sh\ncat <<'EOF'\n" + IP_ADDR + "EOF\n")
    fake_ip.chmod(0o755)
    script = tmp_path / "binding.sh"
    script.write_text(text)
    command = (
        f"{before}PATH={bin_dir}:$PATH; . {script}; "
        'printf "gloo=%s nccl=%s left=%s\\n" "${GLOO_SOCKET_IFNAME-unset}" "${NCCL_SOCKET_IFNAME-unset}" '
        '"${ascendprep_ifname-unset}"'
    )
    return subprocess.run(
        [shell, "-c", command], capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}
    )


@pytest.mark.parametrize("shell", SHELLS)
def test_the_interface_holding_the_address_is_exported_exactly(shell: str, tmp_path: Path) -> None:
    done = _source(shell, tmp_path, envfiles.render_interface_binding("10.0.0.11"))
    assert done.returncode == 0, done.stderr
    # eth0 (not eth0@if7, not eth10 whose address merely starts the same); NCCL's '=' is exact.
    assert done.stdout.strip() == "gloo=eth0 nccl==eth0 left=unset"
    assert done.stderr == ""


@pytest.mark.parametrize("shell", SHELLS)
def test_an_address_no_interface_holds_sets_nothing_and_says_so(shell: str, tmp_path: Path) -> None:
    done = _source(shell, tmp_path, envfiles.render_interface_binding("10.0.0.12"))
    assert done.stdout.strip() == "gloo=unset nccl=unset left=unset"
    assert "no interface holds 10.0.0.12" in done.stderr


def test_a_value_the_user_set_before_is_kept(tmp_path: Path) -> None:
    done = _source(
        "sh",
        tmp_path,
        envfiles.render_interface_binding("10.0.0.11"),
        before="GLOO_SOCKET_IFNAME=bond0; export GLOO_SOCKET_IFNAME; ",
    )
    assert done.stdout.strip() == "gloo=bond0 nccl==eth0 left=unset"


def test_a_non_address_is_refused() -> None:
    with pytest.raises(ValueError):
        envfiles.render_interface_binding("node1; rm -rf /")


INVENTORY = """\
name: t
product: atlas-a2
npus_per_node: 8
device_network: {subnet: 10.20.0.0/24, gateway: 10.20.0.254, detect: gateway}
nodes:
  - {name: a, host: 10.0.0.11}
  - {name: b, host: node-b}
"""


def test_set_env_binds_nodes_given_by_address_and_not_those_given_by_name() -> None:
    desired = build_desired(inventory_from_text(INVENTORY))
    files = {name: {f.path: f.content for f in node.files}[SET_ENV_SH] for name, node in desired.nodes.items()}
    assert "awk -v a=10.0.0.11 " in files["a"] and "GLOO_SOCKET_IFNAME" in files["a"]
    # A node named by hostname: the address is unknown offline, so no binding (plan.hccl_if warns).
    assert "GLOO_SOCKET_IFNAME" not in files["b"]
    assert any(f.id == "plan.hccl_if" and f.node == "b" for f in desired.findings)
    # Deterministic: the same inventory renders the same file (plan diffs compare sha256).
    again = build_desired(inventory_from_text(INVENTORY))
    assert {f.path: f.content for f in again.nodes["a"].files}[SET_ENV_SH] == files["a"]
