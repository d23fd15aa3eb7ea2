"""The saved plan is data, the journal survives, the lock is root's, busy hccn_tool is retried:
against a real lab over real SSH (issues 9 and 14). The tests run in file order and each leaves
the lab converged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labsupport import own_lab  # noqa: F401  (this module's own "lab" fixture: plan/apply change it)

from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from tests.e2e.test_plan_apply_lab import converge, inventory_copy, run_cli, sh

pytestmark = pytest.mark.lab


def _edit_plan(folder: Path, node: str, which: tuple[str, str], **fields) -> None:
    path = folder / ".ascendprep" / "plan.json"
    data = json.loads(path.read_text())
    host = next(h for h in data["hosts"] if h["node"] == node)
    change = next(c for c in host["changes"] if (c["kind"], c["target"]) == which)
    change.update(fields)
    path.write_text(json.dumps(data))


def _journal(folder: Path) -> dict:
    paths = sorted((folder / ".ascendprep" / "journal").glob("apply-*.json"))
    return json.loads(paths[-1].read_text()) if paths else {}


def _wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_hand_edited_change_is_refused_and_nothing_changes(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    converge(path, tmp_path)
    sh(lab, "node1", "echo 1024 > /proc/sys/net/core/somaxconn; echo 2048 > /proc/sys/net/core/somaxconn")
    sh(lab, "node2", "echo 1024 > /proc/sys/net/core/somaxconn")
    plan = run_cli("plan", str(path), cwd=tmp_path)
    assert plan.returncode == 0 and "sysctl net.core.somaxconn 2048 → 65535" in plan.stdout, plan.stdout + plan.stderr
    cron = "/etc/cron.d/ascendprep-pwned"
    _edit_plan(
        tmp_path,
        "node1",
        ("sysctl", "net.core.somaxconn"),
        kind="file",
        target=cron,
        before=None,
        after="0" * 64,
        text=f"{cron}: create",
    )

    refused = run_cli("apply", cwd=tmp_path)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"node1: file:{cron}: not something ascendprep manages on this host" in refused.stderr
    assert lab.ssh("node1", f"test -e {cron}").returncode != 0
    # nothing changed anywhere: node2's own (untouched) change was not made either
    assert sh(lab, "node1", "cat /proc/sys/net/core/somaxconn").strip() == "2048"
    assert sh(lab, "node2", "cat /proc/sys/net/core/somaxconn").strip() == "1024"
    assert _journal(tmp_path)["status"] == "refused"

    # the same key setting another sysctl instead
    run_cli("plan", str(path), cwd=tmp_path)
    forward = sh(lab, "node1", "cat /proc/sys/net/ipv4/ip_forward").strip()
    other = "1" if forward == "0" else "0"
    _edit_plan(
        tmp_path,
        "node1",
        ("sysctl", "net.core.somaxconn"),
        target="net.ipv4.ip_forward",
        after=other,
        text=f"sysctl net.ipv4.ip_forward 2048 → {other}",
    )
    refused = run_cli("apply", cwd=tmp_path)
    assert (
        refused.returncode == 1
        and "node1: sysctl:net.ipv4.ip_forward: not something ascendprep manages on this host" in refused.stderr
    ), refused.stderr
    assert sh(lab, "node1", "cat /proc/sys/net/ipv4/ip_forward").strip() == forward
    assert sh(lab, "node1", "cat /proc/sys/net/core/somaxconn").strip() == "2048"
    converge(path, tmp_path)


def test_the_apply_lock_is_each_nodes_own_root_only_folder(lab: Lab, tmp_path: Path) -> None:
    converge(inventory_copy(lab, tmp_path), tmp_path)
    marker = f"marker-{os.getpid()}"
    for node in ("node1", "node2"):
        assert sh(lab, node, "stat -c '%a %U' /run/ascendprep").strip() == "700 root"
        assert sh(lab, node, "test -f /run/ascendprep/apply.lock && echo yes").strip() == "yes"
    sh(lab, "node1", f"touch /run/ascendprep/{marker}")
    try:
        assert lab.ssh("node2", f"test -e /run/ascendprep/{marker}").returncode != 0
        assert not Path("/run/ascendprep", marker).exists()
    finally:
        sh(lab, "node1", f"rm -f /run/ascendprep/{marker}")


def _disturb_npus(lab: Lab, node: str, npus: range) -> None:
    index = ("node1", "node2", "node3").index(node)
    sh(
        lab,
        node,
        "; ".join(
            f"hccn_tool -i {n} -ip -s address 10.20.0.{200 + 8 * index + n} netmask 255.255.255.0 >/dev/null"
            for n in npus
        ),
    )


def _start_apply(folder: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(folder), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "ascendprep", "apply"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_busy_hccn_tool_is_retried_and_the_tries_reported(lab: Lab, tmp_path: Path) -> None:
    """NPUs 0-5 of node2 need their IP. Once apply has re-read the hosts (the journal says
    "applying"), NPU 5 turns busy for good: its IP is tried 1 + 3 times, reported with the count,
    its later steps are skipped, and every other step is made."""
    path = inventory_copy(lab, tmp_path)
    converge(path, tmp_path)
    _disturb_npus(lab, "node2", range(6))
    plan = run_cli("plan", str(path), cwd=tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    apply = _start_apply(tmp_path)
    try:
        _wait_for(lambda: _journal(tmp_path).get("status") == "applying", 120, "apply to start its scripts")
        with fault_injected(lab, "node2", "hccn-busy", npu=5):
            stdout, stderr = apply.communicate(timeout=120)
    finally:
        if apply.poll() is None:
            apply.kill()
    assert apply.returncode == 1, stdout + stderr
    assert "hccn_tool was still busy after 4 tries" in stdout
    steps = {s["key"]: s for s in _journal(tmp_path)["hosts"][0]["steps"]}
    assert steps["hccn.ip:5"]["rc"] == 11 and steps["hccn.ip:5"]["tries"] == 4
    assert all(steps[f"hccn.ip:{n}"]["rc"] == 0 and steps[f"hccn.ip:{n}"]["tries"] == 1 for n in range(5))
    converge(path, tmp_path)


def test_sigterm_during_apply_completes_the_journal(lab: Lab, tmp_path: Path) -> None:
    path = inventory_copy(lab, tmp_path)
    converge(path, tmp_path)
    _disturb_npus(lab, "node3", range(6))
    assert run_cli("plan", str(path), cwd=tmp_path).returncode == 0
    apply = _start_apply(tmp_path)
    try:
        _wait_for(lambda: _journal(tmp_path).get("status") == "applying", 120, "apply to start its scripts")
        with fault_injected(lab, "node3", "hccn-busy", npu=5):
            time.sleep(1.5)
            apply.send_signal(signal.SIGTERM)
            apply.communicate(timeout=60)
    finally:
        if apply.poll() is None:
            apply.kill()
    assert apply.returncode == 143
    journal = _journal(tmp_path)
    assert (journal["status"], journal["detail"]) == ("interrupted", "SIGTERM") and journal["finished_at"]
    [host] = journal["hosts"]
    assert host["node"] == "node3" and host["status"] == "unknown"
    assert any(c["key"] == "hccn.ip:5" for c in host["intent"])
    _wait_for(
        lambda: lab.ssh("node3", "flock -n /run/ascendprep/apply.lock true").returncode == 0,
        30,
        "node3's apply script to end",
    )
    assert (
        sh(
            lab, "node3", "ls /etc/ascendprep /etc/sysctl.d | grep -c 'ascendprep\\.[A-Za-z0-9]\\{6\\}$' || true"
        ).strip()
        == "0"
    )
    converge(path, tmp_path)
