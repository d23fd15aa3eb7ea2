"""What people, machines and CI see: the text summary, the JSON document, JUnit XML, exit codes."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from verify_cluster_facts import INVENTORY, NOW, TODAY, cluster_evidence, desired_state, healthy_facts, with_npu

from ascendprep.base.findings import Finding, Severity
from ascendprep.commands.verify import verify_command
from ascendprep.facts.model import LinkRecord, LinkStat
from ascendprep.report.findings import findings_table
from ascendprep.report.junit import render_junit
from ascendprep.report.verify import print_verify, summary, summary_line, verify_document
from ascendprep.run import verify as verify_flow
from ascendprep.run.bundle import Bundle
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

NODES = ["node1", "node2", "node3", "node4"]


@pytest.fixture(scope="module")
def faulty():
    """node2: link down on NPU 3 (error) and a recent flap on NPU 5 (warning); node3 unreachable."""
    desired = desired_state()
    flap = LinkStat(
        NOW, 2, 1, (LinkRecord("Wed Jun  7 09:10:00 2023", "UP"), LinkRecord("Wed Jun  7 09:09:58 2023", "DOWN"))
    )
    node2 = with_npu(with_npu(healthy_facts(desired, "node2"), 3, link="DOWN"), 5, link_stat=flap)
    hosts, plan = cluster_evidence(desired, {"node2": node2, "node3": None})
    return desired, hosts, run_checks(desired, hosts, plan, today=TODAY)


def test_text_summary_groups_failures_by_node_with_fixes(faulty):
    _, hosts, results = faulty
    console = Console(record=True, width=400)
    print_verify(console, results, hosts, NODES, bundle=".ascendprep/runs/x")
    text = console.export_text()
    # Grouped by design (issue 12): one table for the nodes, naming them as a range, each row its where.
    assert "nodes node[2-3]: 3 failed checks" in text
    assert text.index("node2 npu 3") < text.index("node3 ")
    assert "network.link" in text and "link status is DOWN" in text and "hccn_tool -i 3 -cfg recovery" in text
    assert "network.link_flaps" in text and "warning" in text
    counts = summary(results)
    assert counts["errors"] == 2 and counts["warnings"] == 1
    assert summary_line(counts) in text and "checks passed" in text
    assert "verify failed: 2 errors" in text
    assert "node1" not in text  # nothing failed there: not shown


def test_the_same_failure_on_many_nodes_and_npus_is_one_row():
    """At 4,096 nodes the same finding is one line naming the hosts and NPUs as ranges."""
    nodes = [f"node{i:04d}" for i in range(1, 4097)]
    same = [
        Finding("network.tls", Severity.WARNING, "tls switch is 1", "hccn_tool -i N -tls -s enable 0", node=n, npu=npu)
        for n in nodes
        for npu in range(8)
    ]
    own = [
        Finding("network.ip", Severity.ERROR, f"device ip is 10.0.0.{npu}", "fix it", node="node0002", npu=npu)
        for npu in range(2)
    ]
    console = Console(record=True, width=400)
    console.print(findings_table(same + own))
    text = console.export_text()
    rows = [line for line in text.splitlines() if "tls switch is 1" in line]
    assert len(rows) == 1 and "node[0001-4096] npu[0-7]" in rows[0]
    # Values that differ per NPU are never merged behind a range.
    assert any("node0002 npu 0" in line and "10.0.0.0" in line for line in text.splitlines())
    assert any("node0002 npu 1" in line and "10.0.0.1" in line for line in text.splitlines())
    assert text.index("device ip is") < text.index("tls switch is 1")  # errors first


def test_junit_has_a_suite_per_node_and_the_cluster(faulty):
    desired, _, results = faulty
    root = ET.fromstring(render_junit(results, NODES, desired.inventory.name))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == NODES + ["cluster"]
    node2 = suites["node2"]
    failure = node2.find("testcase[@name='network.link[npu 3]']/failure")
    assert (
        failure is not None
        and failure.get("message") == "link status is DOWN"
        and failure.get("type") == "network.link"
    )
    assert '"link": "DOWN"' in (failure.text or "") and "fix:" in (failure.text or "")
    flap = node2.find("testcase[@name='network.link_flaps[npu 5]']")
    assert (
        flap is not None and flap.find("failure") is None and (flap.findtext("system-out") or "").startswith("WARNING:")
    )
    assert node2.get("failures") == "1"
    node3 = suites["node3"]
    assert node3.get("failures") == "1" and int(node3.get("skipped")) > 50
    assert root.get("failures") == "2" and int(root.get("tests")) == len(results)


def test_junit_allreduce_suite_carries_its_findings(faulty):
    desired, _, results = faulty
    finding = Finding(
        "allreduce.busbw",
        Severity.ERROR,
        "busbw 3.1 GB/s is below --min-busbw 20",
        "check the slowest node",
        node="node4",
    )
    root = ET.fromstring(render_junit(results, NODES, desired.inventory.name, [finding]))
    suite = root.find("testsuite[@name='allreduce']")
    assert suite is not None and suite.find("testcase[@name='allreduce.busbw[node4]']/failure") is not None
    empty = ET.fromstring(render_junit(results, NODES, desired.inventory.name, []))
    passed = empty.find("testsuite[@name='allreduce']/testcase")
    assert passed is not None and passed.find("failure") is None


def test_json_document_is_versioned_and_complete(faulty):
    _, hosts, results = faulty
    doc = json.loads(
        json.dumps(
            verify_document(
                inventory={"path": "i.yaml"},
                results=results,
                hosts=hosts,
                ssh_execs={"node1": 2},
                mesh="ring",
                selection={"only": [], "skip": []},
                exit_code=1,
            )
        )
    )
    assert doc["schema_version"] == 1 and doc["kind"] == "verify" and doc["exit_code"] == 1
    assert len(doc["checks"]) == len(results)
    assert {(f["id"], f["node"], f["npu"]) for f in doc["findings"]} == {
        ("network.link", "node2", 3),
        ("network.link_flaps", "node2", 5),
        ("node.reachable", "node3", None),
    }
    assert doc["hosts"]["node3"]["reachable"] is False and doc["hosts"]["node3"]["error_kind"] == "unreachable"


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "missing INVENTORY"),
        (["inv.yaml", "--from-bundle", "."], "not both"),
        (["inv.yaml", "--sizes", "1K:4M"], "--sizes only apply with --allreduce"),
        (["--from-bundle", ".", "--mesh", "full"], "--from-bundle contacts no host"),
        (["inv.yaml", "--mesh", "star"], "'star' is not one of"),
    ],
)
def test_usage_errors_exit_2(args, message):
    outcome = CliRunner().invoke(verify_command, args)
    assert outcome.exit_code == 2
    assert message in outcome.output


def test_bad_inventory_and_bad_selector_exit_2(tmp_path):
    broken = tmp_path / "inventory.yaml"
    broken.write_text("name: x\nproduct: atlas-a9\nnodes: [{host: 10.0.0.1}]\n")
    outcome = CliRunner().invoke(verify_command, [str(broken)])
    assert outcome.exit_code == 2 and "inventory.yaml:2" in outcome.output and "product" in outcome.output
    good = tmp_path / "good.yaml"
    good.write_text("name: x\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\nnodes: [{host: 10.0.0.1}]\n")
    outcome = CliRunner().invoke(verify_command, [str(good), "--only", "netwrk"])
    assert outcome.exit_code == 2 and "did you mean 'network'" in outcome.output
    outcome = CliRunner().invoke(verify_command, [str(tmp_path / "missing.yaml")])
    assert outcome.exit_code == 2 and "missing.yaml: no such file" in outcome.output


def test_unreachable_hosts_fail_fast_and_exit_1(tmp_path, monkeypatch):
    """A host nothing listens on: one node.reachable failure each, a bundle, exit 1, no traceback."""
    monkeypatch.chdir(tmp_path)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "name: x\nproduct: atlas-a2\nnpus_per_node: 1\ndevice_network: {subnet: 10.20.0.0/24}\n"
        "ssh: {port: 1, connect_timeout: 3, known_hosts: known_hosts}\nnodes: [{name: 'n[1-2]', host: '127.0.0.[1-2]'}]\n"
    )
    outcome = CliRunner().invoke(
        verify_command, [str(inventory), "--format", "json", "--junit", str(tmp_path / "v.xml")]
    )
    assert outcome.exit_code == 1, outcome.output
    doc = json.loads(outcome.stdout)
    assert [(f["id"], f["node"]) for f in doc["findings"]] == [
        ("node.reachable", "n1"),
        ("node.reachable", "n2"),
        ("cluster.reachability", None),
    ]
    # With both ends unreachable, the pair's reachability is unknown: said so, not passed.
    assert doc["findings"][2]["message"].startswith("could not check: no end of n1 npu 0")
    assert all(host["ssh_execs"] is None for host in doc["hosts"].values())
    assert doc["bundle"] and (tmp_path / doc["bundle"] / "run.json").exists()
    assert ET.parse(tmp_path / "v.xml").getroot().get("failures") == "3"


def test_tool_output_in_messages_is_not_read_as_markup(faulty):
    """gloo and hccn_tool print things like "[/__w/.../pair.cc:553]"; they must show verbatim."""
    _, hosts, results = faulty
    console = Console(record=True, width=400)
    text = "gloo [/__w/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer"
    print_verify(
        console,
        results,
        hosts,
        NODES,
        extra=[Finding("allreduce.init", Severity.ERROR, text, "see [b]the log[/b]", node="node4")],
        bundle="runs/[x]",
    )
    output = console.export_text()
    assert text in output and "see [b]the log[/b]" in output and "runs/[x]" in output


# ------------------------------------------------------------------ the JUnit file on disk


def _saved_run(tmp_path: Path, monkeypatch, facts=None) -> Path:
    """A saved run of this evidence, handed back by a stand-in for the bundle reader."""
    desired = desired_state()
    hosts, pings = cluster_evidence(desired, facts)
    folder = tmp_path / "runs" / "20250601T000000Z"
    folder.mkdir(parents=True)
    bundle = Bundle("/x/inventory.yaml", INVENTORY, hosts, pings, "ring", Selection().to_dict(), TODAY, path=folder)
    monkeypatch.setattr(
        verify_flow,
        "read_bundle",
        lambda path, *budget: bundle if Path(path) == folder else pytest.fail(f"read {path}"),
    )
    return folder


def test_junit_replaces_a_link_at_its_name_and_is_0600(tmp_path, monkeypatch):
    """A link placed where the report goes is replaced, its target never written (root would
    overwrite whatever it points at), and the report holding host evidence is 0600."""
    saved = _saved_run(tmp_path, monkeypatch)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    target = reports / "verify.xml"
    target.symlink_to(victim)
    old = os.umask(0)
    try:
        outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--junit", str(target)])
    finally:
        os.umask(old)
    assert outcome.exit_code == 0, outcome.output
    assert victim.read_text() == "keep\n"
    assert not target.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert ET.parse(target).getroot().get("failures") == "0"
    assert [p.name for p in reports.iterdir()] == ["verify.xml"]


def test_junit_never_opens_a_link_at_a_guessed_temp_name(tmp_path, monkeypatch):
    from ascendprep.base import outputfile

    saved = _saved_run(tmp_path, monkeypatch)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    planted = reports / ".verify.xml.guessed.tmp"
    planted.symlink_to(victim)
    names = ["guessed", "other"]
    monkeypatch.setattr(outputfile.secrets, "token_hex", lambda size: names.pop(0))
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--junit", str(reports / "verify.xml")])
    assert outcome.exit_code == 0, outcome.output
    assert victim.read_text() == "keep\n" and planted.is_symlink()
    assert ET.parse(reports / "verify.xml").getroot().tag == "testsuites"


def test_junit_parses_whatever_characters_a_host_value_holds(tmp_path, monkeypatch):
    """U+FFFE, U+FFFF, a lone surrogate and C0 controls in a host's link state: XML 1.0 cannot
    hold them, so they are spelled out and the file still parses."""
    desired = desired_state()
    odd = "DOWN\ufffe\uffff\ud800\x01\x0b"
    node2 = with_npu(healthy_facts(desired, "node2"), 3, link=odd)
    saved = _saved_run(tmp_path, monkeypatch, {"node2": node2})
    target = tmp_path / "verify.xml"
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--junit", str(target)])
    assert outcome.exit_code == 1, outcome.output
    root = ET.parse(target).getroot()
    failure = root.find("testsuite[@name='node2']/testcase[@name='network.link[npu 3]']/failure")
    assert failure is not None
    assert "DOWN\\ufffe\\uffff\\ud800\\x01\\x0b" in (failure.get("message") or "")
    assert "\\ufffe" in (failure.text or "")  # the evidence too
