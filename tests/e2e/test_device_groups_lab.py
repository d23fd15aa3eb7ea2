"""A routed, grouped fabric against the lab: plan → apply → verify with two leaves of two nodes.

The lab's simulated fabric answers a ping across subnets only when both ends have a gateway, and
a gateway only from inside its subnet; its hccn_tool refuses a gateway outside the device's
subnet. So a plan that gave a node another group's subnet or gateway would fail here.

The tests share one lab and run in file order: the unrouted variant first, on a fresh lab (apply
leaves a gateway it no longer plans in place, so the routed test comes second).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from labsupport import start_test_lab

from ascendprep.lab.lab import Lab

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    started = start_test_lab(nodes=4, npus=2, suffix="groups")
    try:
        yield started
    finally:
        started.down()


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd), "COLUMNS": "200", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "ascendprep", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def grouped_inventory(lab: Lab, folder: Path, gateway: str = "first") -> Path:
    data = yaml.safe_load(lab.inventory_path.read_text())
    data["ssh"]["key"] = str(lab.key_path)
    data["ssh"]["known_hosts"] = str(lab.known_hosts_path)
    hosts = [lab.node(f"node{i}").mgmt_ip for i in range(1, 5)]
    data["nodes"] = [
        {"name": f"node{i}", "host": hosts[i - 1], "labels": {"leaf": "l1" if i <= 2 else "l2"}} for i in range(1, 5)
    ]
    rule = {"supernet": "10.77.0.0/24", "by": "leaf", "prefix": 26, "rails": 2, "gateway": gateway}
    data["device_network"] = {"rule": rule, "detect": "gateway" if gateway != "none" else "peer"}
    path = folder / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_unrouted_groups_are_islands_and_verify_pings_only_inside_them(lab: Lab, tmp_path: Path) -> None:
    """The unlike variant: no gateways. Each leaf is its own L2 island; detect peers and the full
    mesh stay inside it (the lab's fabric drops a ping to another subnet without a gateway)."""
    path = grouped_inventory(lab, tmp_path, gateway="none")
    for step in (("plan", str(path)), ("apply",)):
        done = run_cli(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    conf = lab.ssh("node3", "cat /etc/hccn.conf").stdout
    assert "gateway_1=" not in conf
    node4_rail1 = next(
        line
        for line in run_cli("plan", str(path), "--offline", "--format", "csv", cwd=tmp_path).stdout.splitlines()
        if line.startswith("node4,") and line.split(",")[2] == "1"
    )
    assert f"netdetect_1={node4_rail1.split(',')[3]}\n" in conf  # node3 probes node4, its leaf peer
    verify = run_cli("verify", str(path), "--mesh", "full", "--format", "json", cwd=tmp_path)
    document = json.loads(verify.stdout)
    failed = [c for c in document["checks"] if c["status"] == "failed" and c["severity"] == "error"]
    assert verify.returncode == 0 and not failed, json.dumps(failed, indent=1)[:4000]
    pings = [c for c in document["checks"] if c["check"] == "cluster.reachability"]
    pairs = {frozenset((c["evidence"]["a"]["node"], c["evidence"]["b"]["node"])) for c in pings}
    assert len(pings) == 4 and pairs == {frozenset(("node1", "node2")), frozenset(("node3", "node4"))}
    ring = run_cli("verify", str(path), "--format", "json", cwd=tmp_path)  # the default mesh
    ring_pings = [c for c in json.loads(ring.stdout)["checks"] if c["check"] == "cluster.reachability"]
    assert ring.returncode == 0 and ring_pings and all(c["status"] == "passed" for c in ring_pings), ring.stdout[:4000]
    assert {frozenset((c["evidence"]["a"]["node"], c["evidence"]["b"]["node"])) for c in ring_pings} == pairs


def test_grouped_fabric_applies_and_verifies(lab: Lab, tmp_path: Path) -> None:
    path = grouped_inventory(lab, tmp_path)
    table = run_cli("plan", str(path), "--offline", "--format", "csv", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    rows = [line.split(",") for line in table.stdout.splitlines()[1:]]
    # leaf l1 (node1, node2): rail 0 10.77.0.0/26, rail 1 10.77.0.64/26; leaf l2: .128/26, .192/26
    for node, _, npu, ip, netmask, gateway, detect in rows:
        group = 0 if node in ("node1", "node2") else 1
        subnet = ipaddress.ip_network(f"10.77.0.{(group * 2 + int(npu)) * 64}/26")
        assert ipaddress.ip_address(ip) in subnet and netmask == "255.255.255.192"
        assert gateway == detect == str(subnet.network_address + 1)

    plan = run_cli("plan", str(path), cwd=tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    applied = run_cli("apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    conf = lab.ssh("node3", "cat /etc/hccn.conf").stdout
    assert "gateway_1=10.77.0.193\n" in conf and "netdetect_1=10.77.0.193\n" in conf

    verify = run_cli("verify", str(path), "--mesh", "full", "--format", "json", cwd=tmp_path)
    document = json.loads(verify.stdout)
    failed = [c for c in document["checks"] if c["status"] == "failed" and c["severity"] == "error"]
    assert verify.returncode == 0 and not failed, json.dumps(failed, indent=1)[:4000]
    pings = [c for c in document["checks"] if c["check"] == "cluster.reachability"]
    assert pings and all(c["status"] == "passed" for c in pings)
    # the full mesh crosses the leaves over the gateways: 4 nodes x 2 rails -> 6 pairs per rail
    assert len(pings) == 12
    crossing = {(c["evidence"]["a"]["node"], c["evidence"]["b"]["node"]) for c in pings}
    assert ("node1", "node3") in crossing or ("node3", "node1") in crossing
