"""Faults injected and healed from the command line, observed the way a user would see them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.cli import main
from ascendprep.lab.network import qdisc_kinds
from ascendprep.lab.testing import fault_injected, ssh

pytestmark = pytest.mark.lab

TOOLKIT_INFO = "cat /usr/local/Ascend/ascend-toolkit/latest/*-linux/ascend_toolkit_install.info"


@pytest.fixture
def cli(lab):
    """Run ``ascendprep lab ...`` against the session lab; every fault is healed afterwards."""

    def invoke(*args: str, expect: int = 0) -> str:
        result = CliRunner().invoke(main, ["lab", *args, "--name", lab.name])
        assert result.exit_code == expect, result.output
        return result.output

    yield invoke
    lab.heal()


def _status(cli) -> dict:
    return json.loads(cli("status", "--format", "json"))


def _toolkit_version(lab, node: str) -> str:
    lines = ssh(lab, node, TOOLKIT_INFO).stdout.splitlines()
    return next(line.split("=", 1)[1] for line in lines if line.startswith("version="))


def test_sshd_down_makes_ssh_fail_until_healed(lab, cli):
    cli("fault", "node3", "sshd-down")
    assert ssh(lab, "node3", "true").returncode == 255
    assert ssh(lab, "node2", "true").returncode == 0
    status = _status(cli)
    assert [n["sshd_running"] for n in status["nodes"]] == [True, True, False, True]
    assert {"node": "node3", "kind": "sshd-down"}.items() <= status["faults"][0].items()

    assert "healed: node3 sshd-down" in cli("heal", "node3")
    assert ssh(lab, "node3", "true").returncode == 0
    assert _status(cli)["faults"] == []


def test_slow_shapes_the_nodes_link_with_tbf(lab, cli):
    node2, node1 = lab.node("node2"), lab.node("node1")
    cli("fault", "node2", "slow", "--rate", "8mbit")
    assert "tbf" in qdisc_kinds(node2.veth)
    assert "tbf" in qdisc_kinds("eth0", netns=node2.netns)
    assert "tbf" not in qdisc_kinds(node1.veth)

    cli("heal", "node2", "--kind", "slow")
    assert "tbf" not in qdisc_kinds(node2.veth)
    assert "tbf" not in qdisc_kinds("eth0", netns=node2.netns)


def test_stale_hccn_conf_changes_only_that_nodes_file(lab, cli):
    read = "cat /etc/hccn.conf 2>/dev/null; true"
    node1_before, node2_before = ssh(lab, "node1", read).stdout, ssh(lab, "node2", read).stdout
    host_file = Path("/etc/hccn.conf")
    host_before = host_file.read_text() if host_file.exists() else None

    cli("fault", "node2", "stale-hccn-conf", "--npu", "0")
    node2_stale = ssh(lab, "node2", read).stdout
    assert node2_stale != node2_before
    assert any(line.startswith("address_0=") for line in node2_stale.splitlines())
    assert ssh(lab, "node1", read).stdout == node1_before
    assert (host_file.read_text() if host_file.exists() else None) == host_before

    cli("heal", "node2")
    assert ssh(lab, "node2", read).stdout == node2_before


def test_stale_hccn_conf_needs_an_npu(cli):
    output = cli("fault", "node2", "stale-hccn-conf", expect=1)
    assert "needs --npu" in output


def test_cann_drift_changes_only_that_nodes_version(lab, cli):
    assert "version 8.0.RC1" in cli("fault", "node2", "cann-drift", "--version", "8.0.RC1")
    assert _toolkit_version(lab, "node2") == "8.0.RC1"
    assert _toolkit_version(lab, "node1") == lab.spec.versions.cann

    cli("heal", "node2")
    assert _toolkit_version(lab, "node2") == lab.spec.versions.cann


def test_torch_npu_drift_changes_only_that_nodes_metadata(lab, cli):
    query = f"{lab.python.executable} -c 'import importlib.metadata as m; print(m.version(\"torch_npu\"))'"
    cli("fault", "node4", "torch-npu-drift", "--version", "2.1.0.post6")
    assert ssh(lab, "node4", query).stdout.strip() == "2.1.0.post6"
    assert ssh(lab, "node3", query).stdout.strip() == lab.spec.versions.torch_npu

    cli("heal")
    assert ssh(lab, "node4", query).stdout.strip() == lab.spec.versions.torch_npu


def test_link_down_is_seen_by_hccn_tool_on_that_npu_only(lab, cli):
    cli("fault", "node2", "link-down", "--npu", "3")
    assert ssh(lab, "node2", "hccn_tool -i 3 -link -g").stdout.strip() == "link status: DOWN"
    assert ssh(lab, "node2", "hccn_tool -i 2 -link -g").stdout.strip() == "link status: UP"
    assert ssh(lab, "node1", "hccn_tool -i 3 -link -g").stdout.strip() == "link status: UP"
    assert {"node": "node2", "kind": "link-down", "npu": 3}.items() <= _status(cli)["faults"][0].items()

    cli("heal", "--kind", "link-down")
    assert ssh(lab, "node2", "hccn_tool -i 3 -link -g").stdout.strip() == "link status: UP"


def test_heal_of_one_kind_keeps_the_others(lab, cli):
    cli("fault", "node1", "npu-alarm", "--npu", "1")
    cli("fault", "node1", "link-down", "--npu", "2")
    cli("heal", "node1", "--kind", "link-down")
    assert [(f["node"], f["kind"], f["npu"]) for f in _status(cli)["faults"]] == [("node1", "npu-alarm", 1)]


@pytest.mark.parametrize(
    "args, message",
    [
        (("fault", "node9", "link-down"), "has no node 'node9'"),
        (("fault", "node1", "link-down", "--npu", "8"), "--npu 8"),
        (("fault", "node1", "slow", "--rate", "fast"), "--rate"),
        (("fault", "node1", "link-down", "--rate", "8mbit"), "only applies"),
        (("fault", "node1", "sshd-down", "--npu", "1"), "does not apply"),
    ],
)
def test_bad_fault_requests_are_clear_errors(cli, args, message):
    output = cli(*args, expect=1)
    assert message in output
    assert "Traceback" not in output


def test_fault_context_heals_on_exit(lab):
    with fault_injected(lab, "node3", "npu-critical", npu=5):
        table = ssh(lab, "node3", "npu-smi info").stdout
        assert "Critical" in table
        assert "Critical" not in ssh(lab, "node4", "npu-smi info").stdout
    assert lab.faults() == []
    assert "Critical" not in ssh(lab, "node3", "npu-smi info").stdout


def test_lab_fault_fixture_injects_through_the_api(lab, lab_fault):
    record = lab_fault("node1", "slow")
    assert record == {"node": "node1", "kind": "slow", "npu": None, "level": "node", "rate": "8mbit"}
    assert "tbf" in qdisc_kinds(lab.node("node1").veth)
