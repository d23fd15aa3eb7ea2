"""Hosts whose hostname leads to loopback or nowhere: the lab reproduces them, verify names them,
and the all-reduce still passes because every rank is bound to its node's inventory address.

A 2-node lab of its own (planned and applied once); every test heals what it broke.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from typing import Iterator

import pytest
from allreduce_cluster import Cluster, applied_cluster, cli, processes_of

from ascendprep.base.findings import Severity
from ascendprep.base.paths import SET_ENV_SH
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run import allreduce as allreduce_run

pytestmark = pytest.mark.lab

TINY = {"nproc_per_node": 2, "sizes": "1K:4K", "warmup": 1, "iters": 2}
NODES = ("node1", "node2")
BINDING_MARK = "# Host NIC for gloo and NCCL"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from applied_cluster(tmp_path_factory, "hostnames", nodes=2)


def resolves(lab: Lab, node: str) -> tuple[int, list[str]]:
    """(getent's exit status, the addresses) for the node's own hostname, looked up on the node."""
    done = lab.ssh(node, 'getent ahosts "$(uname -n)"')
    return done.returncode, sorted({line.split()[0] for line in done.stdout.splitlines() if line.strip()})


@contextmanager
def on_every_node(lab: Lab, kind: str) -> Iterator[None]:
    with ExitStack() as stack:
        for node in NODES:
            stack.enter_context(fault_injected(lab, node, kind))
        yield


@contextmanager
def set_env_without_binding(lab: Lab) -> Iterator[None]:
    """set_env.sh as ascendprep wrote it before it bound gloo/NCCL (or as a user's own may be)."""
    saved = {}
    for node in NODES:
        text = lab.run_in_node(node, ["cat", SET_ENV_SH]).stdout
        assert BINDING_MARK in text
        saved[node] = text
        lab.run_in_node(node, ["sh", "-c", f"cat > {SET_ENV_SH}"], input=text.split(BINDING_MARK)[0])
    try:
        yield
    finally:
        for node, text in saved.items():
            lab.run_in_node(node, ["sh", "-c", f"cat > {SET_ENV_SH}"], input=text)


def test_the_lab_maps_hostnames_as_real_hosts_do_and_heals_back(pair: Cluster) -> None:
    lab = pair.lab
    own = lab.node("node1").mgmt_ip
    assert resolves(lab, "node1") == (0, [own])
    with fault_injected(lab, "node1", "hostname-loopback"):
        assert resolves(lab, "node1") == (0, ["127.0.1.1"])
        assert resolves(lab, "node2") == (0, [lab.node("node2").mgmt_ip])  # only node1 is changed
    with fault_injected(lab, "node1", "hostname-missing"):
        assert resolves(lab, "node1") == (2, [])
    assert resolves(lab, "node1") == (0, [own])


def test_verify_names_each_bad_hostname_and_passes_the_good_one(pair: Cluster) -> None:
    lab = pair.lab

    def hostname_results() -> dict:
        done = cli("verify", str(pair.inventory), "--only", "node.hostname", "--format", "json", cwd=pair.folder)
        assert done.returncode == 0, done.stdout + done.stderr  # warnings only: the nodes are given by address
        document = json.loads(done.stdout)
        return {r["node"]: r for r in document["checks"] if r["check"] == "node.hostname"}

    with fault_injected(lab, "node1", "hostname-loopback"), fault_injected(lab, "node2", "hostname-missing"):
        broken = hostname_results()
    assert broken["node1"]["status"] == "failed" and broken["node1"]["severity"] == Severity.WARNING.value
    assert "resolves to 127.0.1.1 (loopback)" in broken["node1"]["message"]
    assert f"'127.0.1.1 node1' with '{lab.node('node1').mgmt_ip} node1'" in broken["node1"]["fix"]
    assert broken["node2"]["status"] == "failed" and "does not resolve on node2" in broken["node2"]["message"]
    healed = hostname_results()
    assert {node: r["status"] for node, r in healed.items()} == {"node1": "passed", "node2": "passed"}


@pytest.mark.parametrize("kind", ["hostname-loopback", "hostname-missing"])
def test_the_allreduce_passes_when_hostnames_lead_to_loopback_or_nowhere(pair: Cluster, kind: str) -> None:
    lab = pair.lab
    with on_every_node(lab, kind), set_env_without_binding(lab):
        run = pair.allreduce(**TINY, timeout=90)
    outcome = run.outcome
    assert outcome.passed, run.printed
    assert outcome.verdict is not None and outcome.verdict.world_size == 4
    assert "pick an address by the hostname" not in run.printed
    document = {n["node"]: n for n in outcome.to_dict()["nodes"]}
    assert {node: n["bound"] for node, n in document.items()} == {
        node: {"address": lab.node(node).mgmt_ip, "interface": "eth0"} for node in NODES
    }
    assert processes_of(outcome.run_id) == []


def test_without_the_binding_the_loopback_trap_is_real(pair: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unlike variant: the same hosts, ranks left to their hostname, fail as the issue says."""
    lab = pair.lab
    monkeypatch.setattr(allreduce_run, "binding_of", lambda node, pre: "binding switched off by the test")
    with on_every_node(lab, "hostname-loopback"), set_env_without_binding(lab):
        run = pair.allreduce(**TINY, timeout=30)
    assert not run.outcome.passed
    assert "binding switched off by the test; its ranks pick an address by the hostname" in run.printed
    assert {n.node: n.unbound_reason for n in run.outcome.nodes} == {
        node: "binding switched off by the test" for node in NODES
    }
    tails = " ".join(n.log_tail for n in run.outcome.nodes)
    assert "127.0.0.1" in tails or "127.0.1.1" in tails, run.printed
    assert processes_of(run.outcome.run_id) == []


def test_the_applied_set_env_binds_the_inventory_nic_whatever_the_hostname_says(pair: Cluster) -> None:
    lab = pair.lab
    with fault_injected(lab, "node1", "hostname-loopback"):
        done = lab.ssh(
            "node1", f'. {SET_ENV_SH} 2>/dev/null; echo "$GLOO_SOCKET_IFNAME $NCCL_SOCKET_IFNAME $HCCL_IF_IP"'
        )
    assert done.stdout.split() == ["eth0", "=eth0", lab.node("node1").mgmt_ip], done.stderr


def test_verify_allreduce_passes_with_unresolvable_hostnames_and_warns_about_them(pair: Cluster) -> None:
    """The issue's "done" case, through the command a user types."""
    lab = pair.lab
    with on_every_node(lab, "hostname-missing"), set_env_without_binding(lab):
        done = cli(
            "verify",
            str(pair.inventory),
            "--only",
            "node.hostname",
            "--format",
            "json",
            "--allreduce",
            "--nproc-per-node",
            "1",
            "--sizes",
            "1K:4K",
            "--timeout",
            "90",
            cwd=pair.folder,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["allreduce"]["passed"] is True
    warned = {r["node"]: r for r in document["checks"] if r["check"] == "node.hostname"}
    assert {node: (r["status"], r["severity"]) for node, r in warned.items()} == {
        node: ("failed", "warning") for node in NODES
    }
