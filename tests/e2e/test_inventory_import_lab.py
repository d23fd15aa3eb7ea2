"""``inventory import --hosts`` against the lab: a cluster addressed by hand, one node off the rule,
imported (with one address where no server answers: named, the rest imported, exit 1); ``plan``
of the imported inventory then changes no NPU address, gateway or detect IP.

The lab's hccn_tool keeps what it is told in the node's /etc/hccn.conf and answers ``-ip -g``,
``-gateway -g`` and ``-netdetect -g`` as the vendor tool does, so the import reads what a real
cluster's hosts would say.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from labsupport import start_test_lab

from ascendprep.lab.lab import Lab

pytestmark = pytest.mark.lab

NPU_KINDS = {"hccn.ip", "hccn.gateway", "hccn.netdetect"}


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    started = start_test_lab(nodes=4, npus=2, suffix="import")
    try:
        yield started
    finally:
        started.down()


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd), "COLUMNS": "200", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "ascendprep", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def address_by_hand(lab: Lab) -> dict[str, list[str]]:
    """node1, node2 and node4 packed from the bottom of 10.66.0.0/24; node3 re-cabled to .200."""
    by_hand = {"node1": ["10.66.0.1", "10.66.0.2"], "node2": ["10.66.0.3", "10.66.0.4"]}
    by_hand |= {"node3": ["10.66.0.200", "10.66.0.201"], "node4": ["10.66.0.5", "10.66.0.6"]}
    for node, ips in by_hand.items():
        for npu, ip in enumerate(ips):
            done = lab.ssh(
                node,
                f"hccn_tool -i {npu} -ip -s address {ip} netmask 255.255.255.0 && "
                f"hccn_tool -i {npu} -gateway -s gateway 10.66.0.254 && "
                f"hccn_tool -i {npu} -netdetect -s address 10.66.0.254",
            )
            assert done.returncode == 0, done.stdout + done.stderr
    return by_hand


def test_an_imported_lab_plans_no_npu_change(lab: Lab, tmp_path: Path) -> None:
    by_hand = address_by_hand(lab)
    hosts = tmp_path / "hosts"
    mgmt = {lab.node(name).mgmt_ip: name for name in by_hand}
    # and one address of the lab's network where no server answers: named, the rest imported
    silent = ".".join(lab.node("node1").mgmt_ip.split(".")[:3] + ["250"])
    hosts.write_text("".join(f"{ip}\n" for ip in [*mgmt, silent]))
    out = tmp_path / "imported.yaml"
    done = run_cli(
        "inventory", "import", "--hosts", str(hosts), "--key", str(lab.key_path),
        "--known-hosts", str(lab.known_hosts_path), "-o", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"not read: {silent}" in done.stderr and "The import is incomplete" in done.stderr
    text = out.read_text()
    assert "# INCOMPLETE" in text and f"#   {silent}:" in text
    node3 = lab.node("node3").mgmt_ip
    assert f"# off the pattern: {node3}" in text and '0: "10.66.0.200"' in text
    assert 'subnet: "10.66.0.0/24"' in text and 'gateway: "10.66.0.254"' in text

    plan = run_cli("plan", str(out), "--format", "json", cwd=tmp_path)
    document = json.loads(plan.stdout)
    assert document["complete"], plan.stderr
    npu_changes = [c for host in document["hosts"] for c in host["changes"] if c.get("kind") in NPU_KINDS]
    assert npu_changes == [], npu_changes

    offline = run_cli("plan", "--offline", "--format", "csv", str(out), cwd=tmp_path)
    rows = [line.split(",") for line in offline.stdout.splitlines()[1:]]
    assert {(mgmt[r[1]], int(r[2])): r[3] for r in rows} == {
        (node, npu): ip for node, ips in by_hand.items() for npu, ip in enumerate(ips)
    }


def test_adopted_sysctl_env_and_firewall_plan_no_change(lab: Lab, tmp_path: Path) -> None:
    """``--adopt sysctl,env,firewall`` on hosts tuned by hand (node2 above the others) and with the
    env.sh a previous apply wrote: plan of the imported inventory changes none of them."""
    from ascendprep.desired.envfiles import render_env_sh

    address_by_hand(lab)
    env_sh = render_env_sh({"HCCL_EXEC_TIMEOUT": "1800"}, nodes=4)
    names = ["node1", "node2", "node3", "node4"]
    for name in names:
        somaxconn = 16384 if name == "node2" else 8192
        done = lab.ssh(
            name,
            f"echo {somaxconn} > /proc/sys/net/core/somaxconn && echo 2048 > /proc/sys/net/ipv4/tcp_max_syn_backlog"
            " && echo 60000-60031,61000 > /proc/sys/net/ipv4/ip_local_reserved_ports"
            f" && mkdir -p /etc/ascendprep && printf %s {shlex.quote(env_sh)} > /etc/ascendprep/env.sh",
        )
        assert done.returncode == 0, done.stdout + done.stderr
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{lab.node(name).mgmt_ip}\n" for name in names))
    out = tmp_path / "adopted.yaml"
    done = run_cli(
        "inventory", "import", "--hosts", str(hosts), "--key", str(lab.key_path),
        "--known-hosts", str(lab.known_hosts_path), "--adopt", "sysctl,env,firewall", "-o", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = out.read_text()
    assert "  net.core.somaxconn: 8192\n" in text and "  net.ipv4.tcp_max_syn_backlog: 2048\n" in text
    assert '  net.ipv4.ip_local_reserved_ports: "60000-60031,61000"\n' in text
    assert f"# sysctl net.core.somaxconn: {lab.node('node2').mgmt_ip} have 16384" in text
    assert '  HCCL_EXEC_TIMEOUT: "1800"\n' in text and "\nfirewall: disable\n" in text

    plan = run_cli("plan", str(out), "--format", "json", cwd=tmp_path)
    document = json.loads(plan.stdout)
    assert document["complete"], plan.stderr
    changes = [c for host in document["hosts"] for c in host["changes"]]
    adopted = [
        c
        for c in changes
        if c["kind"] in ("sysctl", "firewall") or (c["kind"] == "file" and c["target"] == "/etc/ascendprep/env.sh")
    ]
    assert adopted == [], adopted
    assert [c for c in changes if c["kind"] in NPU_KINDS] == []
