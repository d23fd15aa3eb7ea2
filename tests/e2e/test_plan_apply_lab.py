"""plan → apply → plan against a real lab over real SSH (issue 4's end-to-end tests).

The tests share one 3-node lab and run in file order; each leaves it converged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from labsupport import own_lab  # noqa: F401  (this module's own "lab" fixture: plan/apply change it)

from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected

pytestmark = pytest.mark.lab

NODES = ("node1", "node2", "node3")


def run_cli(*args: str, cwd: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    """``ascendprep ARGS`` as a user runs it, with HOME at ``cwd`` (no personal known_hosts)."""
    environment = {**os.environ, "HOME": str(cwd), "COLUMNS": "200"}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ascendprep", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def inventory_copy(lab: Lab, folder: Path, *, known_hosts: Path | None = None, **changes) -> Path:
    """The lab's inventory with absolute key/known_hosts paths and ``changes`` merged in."""
    data = yaml.safe_load(lab.inventory_path.read_text())
    data["ssh"]["key"] = str(lab.key_path)
    data["ssh"]["known_hosts"] = str(known_hosts or lab.known_hosts_path)
    data.update(changes)
    path = folder / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def sh(lab: Lab, node: str, command: str) -> str:
    done = lab.ssh(node, command)
    assert done.returncode == 0, done.stderr
    return done.stdout


def converge(path: Path, cwd: Path) -> None:
    plan = run_cli("plan", str(path), cwd=cwd)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    applied = run_cli("apply", cwd=cwd)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = run_cli("plan", str(path), "--detailed-exitcode", cwd=cwd)
    assert again.returncode == 0, again.stdout + again.stderr


def test_unknown_host_keys_are_refused_unless_accepted(lab: Lab, tmp_path: Path) -> None:
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    path = inventory_copy(lab, tmp_path, known_hosts=known)
    refused = run_cli("plan", str(path), cwd=tmp_path)
    assert refused.returncode == 1
    output = refused.stdout + refused.stderr
    for node in NODES:
        assert node in output
    assert "--accept-new-host-keys" in output
    assert known.read_text() == ""
    accepted = run_cli("plan", str(path), "--accept-new-host-keys", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    recorded = known.read_text()
    assert all(lab.node(n).mgmt_ip in recorded for n in NODES)


def test_plan_apply_converges_and_a_second_apply_changes_nothing(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    plan = run_cli("plan", str(path), "--detailed-exitcode", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 3, plan.stderr
    document = json.loads(plan.stdout)
    node1 = next(h for h in document["hosts"] if h["node"] == "node1")
    summaries = [c["text"] for c in node1["changes"]]
    assert any(s.startswith("npu 0: ip none → 10.20.0.") for s in summaries), summaries
    assert "sysctl net.core.somaxconn 4096 → 65535" in summaries
    assert any(
        s.startswith("/etc/ascendprep/env.sh: create: adds HCCL_WHITELIST_DISABLE=1, HCCL_CONNECT_TIMEOUT=")
        for s in summaries
    ), summaries

    applied = run_cli("apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert list((tmp_path / ".ascendprep" / "journal").glob("apply-*.json"))

    desired = {
        h["name"]: h
        for h in json.loads(run_cli("plan", str(path), "--offline", "--format", "json", cwd=tmp_path).stdout)["nodes"]
    }
    for node in NODES:
        conf = sh(lab, node, "cat /etc/hccn.conf")
        for npu in desired[node]["npu"]:
            assert f"address_{npu['npu']}={npu['ip']}\n" in conf
            assert f"netdetect_{npu['npu']}={npu['detect']}\n" in conf
        assert (
            sh(lab, node, "hccn_tool -i 3 -ip -g") == f"ipaddr:{desired[node]['npu'][3]['ip']}\nnetmask:255.255.255.0\n"
        )
        assert sh(lab, node, "cat /proc/sys/net/core/somaxconn").strip() == "65535"
        assert "60000-60015" in sh(lab, node, "cat /proc/sys/net/ipv4/ip_local_reserved_ports")
        assert "net.core.somaxconn = 65535" in sh(lab, node, "cat /etc/sysctl.d/90-ascendprep.conf")
        assert sh(lab, node, "head -1 /etc/ascendprep/env.sh").startswith("# Managed by ascendprep")
        assert f"NODE_RANK={NODES.index(node)}" in sh(lab, node, "cat /etc/ascendprep/set_env.sh")

    second = run_cli("apply", cwd=tmp_path)
    assert second.returncode == 0
    assert "Nothing was touched" in second.stdout
    replan = run_cli("plan", str(path), "--detailed-exitcode", cwd=tmp_path)
    assert replan.returncode == 0, replan.stdout
    assert "No changes" in replan.stdout


def test_a_stale_plan_is_refused_and_changes_nothing(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    sh(lab, "node1", "echo 1024 > /proc/sys/net/core/somaxconn")
    plan = run_cli("plan", str(path), cwd=tmp_path)
    assert "sysctl net.core.somaxconn 1024 → 65535" in plan.stdout
    sh(lab, "node1", "echo 512 > /proc/sys/net/core/somaxconn")
    refused = run_cli("apply", cwd=tmp_path)
    assert refused.returncode == 1
    assert "stale" in refused.stderr and "was 1024 at planning, is now 512" in refused.stderr
    assert sh(lab, "node1", "cat /proc/sys/net/core/somaxconn").strip() == "512"
    converge(path, tmp_path)


def test_an_unreachable_host_is_reported_and_the_others_planned(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    sh(lab, "node1", "echo 2048 > /proc/sys/net/core/somaxconn")
    with fault_injected(lab, "node3", "sshd-down"):
        started = time.monotonic()
        plan = run_cli("plan", str(path), "--format", "json", cwd=tmp_path)
        assert time.monotonic() - started < 60
    assert plan.returncode == 1
    hosts = {h["node"]: h for h in json.loads(plan.stdout)["hosts"]}
    assert hosts["node3"]["reachable"] is False and hosts["node3"]["error"]
    assert [c["key"] for c in hosts["node1"]["changes"]] == ["sysctl:net.core.somaxconn"]
    assert hosts["node2"]["reachable"] and hosts["node2"]["changes"] == []
    converge(path, tmp_path)


def test_a_hanging_hccn_tool_is_cut_off(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    with fault_injected(lab, "node2", "hccn-hang"):
        started = time.monotonic()
        plan = run_cli("plan", str(path), "--format", "json", cwd=tmp_path, timeout=200)
        elapsed = time.monotonic() - started
    assert elapsed < 60, f"plan took {elapsed:.0f}s with a hung hccn_tool"
    assert plan.returncode == 1
    hosts = {h["node"]: h for h in json.loads(plan.stdout)["hosts"]}
    assert any("timed out" in reason for reason in hosts["node2"]["incomplete"]), hosts["node2"]
    assert hosts["node1"]["incomplete"] == [] and hosts["node3"]["incomplete"] == []


def _disturb(lab: Lab) -> None:
    """Move every node away from the plan: other device IPs, low somaxconn, env files gone."""
    for index, node in enumerate(NODES):
        ips = "; ".join(
            f"hccn_tool -i {n} -ip -s address 10.20.0.{200 + 8 * index + n} netmask 255.255.255.0 >/dev/null"
            for n in range(8)
        )
        sh(
            lab,
            node,
            f"{ips}; echo 1000 > /proc/sys/net/core/somaxconn; rm -f /etc/ascendprep/env.sh /etc/ascendprep/set_env.sh",
        )


def test_kill_during_apply_then_apply_again_converges(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    _disturb(lab)
    plan = run_cli("plan", str(path), cwd=tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    env = {**os.environ, "HOME": str(tmp_path)}
    victim = subprocess.Popen(
        [sys.executable, "-m", "ascendprep", "apply"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Kill as soon as the first device IP has been set on node1 (its hccn.conf shows it).
    deadline = time.monotonic() + 60
    first = json.loads(run_cli("plan", str(path), "--offline", "--format", "json", cwd=tmp_path).stdout)["nodes"][0][
        "npu"
    ][0]["ip"]
    while time.monotonic() < deadline and victim.poll() is None:
        if f"address_0={first}" in lab.ssh("node1", "cat /etc/hccn.conf").stdout:
            break
        time.sleep(0.05)
    killed = victim.poll() is None
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert killed, "apply finished before it could be interrupted"
    time.sleep(2)  # let the remote script notice its client is gone and release the lock
    rerun = run_cli("apply", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    replan = run_cli("plan", str(path), "--detailed-exitcode", cwd=tmp_path)
    assert replan.returncode == 0, replan.stdout


def test_shell_metacharacters_are_rejected_at_load_or_arrive_quoted(lab: Lab, tmp_path: Path) -> None:
    marker = f"/tmp/ascendprep-pwned-{os.getpid()}"
    hostile = f"$(touch {marker}); `touch {marker}`; echo 'quoted' \"x\" \\"
    path = inventory_copy(lab, tmp_path, env={"HOSTILE": hostile}, env_opt_in=["HOSTILE"])  # not an HCCL name: opted in
    converge(path, tmp_path)
    seen = sh(lab, "node1", ". /etc/ascendprep/env.sh 2>/dev/null; printf '%s' \"$HOSTILE\"")
    assert seen == hostile
    assert not Path(marker).exists() and lab.ssh("node1", f"test -e {marker}").returncode != 0
    # the next plan reads the value back from the node's env.sh and shows what changes, exactly
    changed = inventory_copy(lab, tmp_path, env={"HOSTILE": "plain"}, env_opt_in=["HOSTILE"])
    plan = run_cli("plan", str(changed), "--format", "json", cwd=tmp_path)
    [env_sh] = [
        c
        for h in json.loads(plan.stdout)["hosts"]
        if h["node"] == "node1"
        for c in h["changes"]
        if c["target"] == "/etc/ascendprep/env.sh"
    ]
    assert env_sh["variables"] == {"HOSTILE": [hostile, "plain"]}, env_sh
    assert env_sh["text"].startswith("/etc/ascendprep/env.sh: update: changes HOSTILE '$(touch ") and env_sh[
        "text"
    ].endswith(" → plain")
    assert not Path(marker).exists() and lab.ssh("node1", f"test -e {marker}").returncode != 0

    bad = inventory_copy(lab, tmp_path, ssh={**yaml.safe_load(path.read_text())["ssh"], "user": "root;reboot"})
    rejected = run_cli("plan", str(bad), cwd=tmp_path)
    assert rejected.returncode == 2 and "ssh.user: 'root;reboot' is not a valid user name" in rejected.stderr
    converge(inventory_copy(lab, tmp_path), tmp_path)


def test_a_gateway_the_inventory_drops_is_planned_away_and_taken_out_of_hccn_conf(lab: Lab, tmp_path: Path) -> None:
    """The NPUs get a gateway; then the inventory drops it. Plan shows each removal; apply takes
    gateway_N out of /etc/hccn.conf and, since hccn_tool cannot remove a live gateway, fails the
    step naming the driver restart that does. After that restart (here the lab's device state,
    rebuilt from what the file holds) the lab is converged again."""
    from ascendprep.lab.sim.state import edit_node

    data = yaml.safe_load(lab.inventory_path.read_text())
    subnet = data["device_network"]["subnet"]
    gateway = subnet.rsplit(".", 1)[0] + ".254"
    with_gateway = tmp_path / "with_gateway"
    with_gateway.mkdir()
    converge(
        inventory_copy(lab, with_gateway, device_network={**data["device_network"], "gateway": gateway}), with_gateway
    )
    assert f"gateway_0={gateway}\n" in sh(lab, "node1", "cat /etc/hccn.conf")

    path = inventory_copy(lab, tmp_path)
    plan = run_cli("plan", str(path), "--detailed-exitcode", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 3, plan.stderr
    node1 = next(h for h in json.loads(plan.stdout)["hosts"] if h["node"] == "node1")
    removals = [c for c in node1["changes"] if c["kind"] == "hccn.gateway"]
    assert len(removals) == 8 and all(c["after"] is None for c in removals)
    assert removals[0]["text"] == (
        f"npu 0: gateway {gateway} → none: taken out of /etc/hccn.conf; the device keeps it "
        "until its driver restarts (hccn_tool cannot remove a gateway)"
    )

    applied = run_cli("apply", cwd=tmp_path)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    [journal] = (tmp_path / ".ascendprep" / "journal").glob("apply-*.json")
    steps = next(h for h in json.loads(journal.read_text())["hosts"] if h["node"] == "node1")["steps"]
    step = next(s for s in steps if s["kind"] == "hccn.gateway" and s["target"] == "npu 0")
    assert step["rc"] == 1 and "took gateway_0 out of /etc/hccn.conf" in step["output"]
    assert (
        f"default gateway:{gateway}, Iface:eth0\nnpu 0 still routes through this gateway until its driver restarts"
        in step["output"]
    )
    for node in NODES:
        conf = sh(lab, node, "cat /etc/hccn.conf")
        assert "gateway_" not in conf and "address_0=" in conf
        assert f"gateway_0={gateway}\n" in sh(lab, node, "cat /etc/hccn.conf.ascendprep.orig")
    assert sh(lab, "node1", "hccn_tool -i 0 -gateway -g") == f"default gateway:{gateway}, Iface:eth0\n"
    again = run_cli("plan", str(path), cwd=tmp_path)
    assert f"gateway {gateway} (not in /etc/hccn.conf) → none" in again.stdout

    for node in NODES:  # the driver restart: the devices take what /etc/hccn.conf holds (no gateway)
        with edit_node(lab.state_dir, node) as doc:
            for device in doc["devices"]:
                device["gateway"] = None
    settled = run_cli("plan", str(path), "--detailed-exitcode", cwd=tmp_path)
    assert settled.returncode == 0, settled.stdout + settled.stderr
