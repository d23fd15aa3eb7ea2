"""Evidence collection with real scripts on this machine, the bundle, and re-checking it offline.

The gather and ping scripts run for real through LocalTransport (the same launcher as SSH). This
machine has no NPU: a stand-in ``hccn_tool`` on PATH answers pings and refuses every query, so the
run exercises the "could not check" paths and the ping phase end to end.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner
from verify_cluster_facts import TODAY

from ascendprep.base.findings import Finding, Severity
from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.report.verify import verify_document
from ascendprep.run.bundle import Bundle, BundleError, new_bundle_dir, read_bundle, write_bundle
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

FAKE_HCCN_TOOL = """#!/bin/sh
# Stand-in for tests: pings get every reply, every other call fails as the driver would.
if [ "$3" = "-ping" ]; then
	echo "device $2 PING $6"
	for seq in 0 1 2; do echo "recv seq=$seq,time=0.050000ms"; done
	echo "3 packets transmitted, 3 received, 0.00% packet loss"
	exit 0
fi
echo "Command execute failed!" >&2
exit 1
"""


def _inventory_text() -> str:
    return f"""\
name: local
product: atlas-a2
npus_per_node: 2
device_network: {{subnet: 10.20.0.0/24, detect: peer}}
nodes:
  - name: node[1-2]
    host: 127.0.0.[1-2]
firewall: leave
software:
  python_path: {sys.executable}
"""


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "hccn_tool"
    tool.write_text(FAKE_HCCN_TOOL)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


@pytest.fixture
def collected(fake_tools):
    desired = build_desired(inventory_from_text(_inventory_text()))
    accesses = host_accesses(desired.inventory)
    with Session(accesses, forks=2, transport_factory=lambda access: LocalTransport(access.name, 60)) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True)
        execs = session.exec_counts()
    return desired, hosts, plan, execs


def test_two_round_trips_per_host_gather_then_ping(collected):
    desired, hosts, plan, execs = collected
    assert plan is not None and [p.subject for p in plan.pairs] == ["node1:0<->node2:0", "node1:1<->node2:1"]
    # Neither end's link is known (every query failed): the first end sends, so node2 has no pings.
    assert [p.source.node for p in plan.pairs if p.source] == ["node1", "node1"]
    assert execs == {"node1": 2, "node2": 1}
    assert hosts["node2"].pings is None
    assert [(r.npu, r.target, r.ok) for r in hosts["node1"].pings or ()] == [
        (0, "10.20.0.3", True),
        (1, "10.20.0.4", True),
    ]
    assert all(
        host.facts is not None and host.gather_stdout.startswith("@@ascendprep gather") for host in hosts.values()
    )


def test_failed_queries_are_could_not_check_and_pings_pass(collected):
    desired, hosts, plan, _ = collected
    results = run_checks(desired, hosts, plan, today=TODAY)
    link = [r for r in results if r.check == "network.link"]
    assert len(link) == 4 and all(r.failed and r.message.startswith(COULD_NOT_CHECK) for r in link)
    assert "Command execute failed!" in link[0].message
    reach = [r for r in results if r.check == "cluster.reachability"]
    assert [r.status for r in reach] == [Status.PASSED, Status.PASSED]
    # No npu-smi on this machine: that is named, and the NPU checks that need it are skipped.
    assert any(r.check == "node.npu_smi" and r.failed and "not installed" in r.message for r in results)
    assert all(r.status is Status.SKIPPED for r in results if r.check == "npu.health")


def test_bundle_round_trip_gives_the_same_results(collected, tmp_path):
    desired, hosts, plan, execs = collected
    # A duration whose 2-decimal rounding in the evidence is fragile: the bundle must keep it whole.
    hosts = {
        **hosts,
        "node1": replace(hosts["node1"], seconds=7.6149996, gather_stderr="sh: warning: a\n", ping_stderr=""),
        "node2": replace(hosts["node2"], gather_stderr=""),
    }
    text = _inventory_text()
    results = run_checks(desired, hosts, plan, today=TODAY)
    slow = Finding(
        "allreduce.busbw", Severity.ERROR, "busbw 1.2 GB/s is below --min-busbw 20", "find the slow link", node="node2"
    )
    bundle = Bundle(
        "/somewhere/inventory.yaml",
        text,
        hosts,
        plan,
        "ring",
        Selection().to_dict(),
        TODAY,
        ssh_execs=execs,
        allreduce_findings=[slow],
        allreduce_doc={"schema_version": 1, "passed": False, "busbw_gbps": float("nan"), "note": "\u00b0"},
    )
    target = new_bundle_dir(tmp_path / "runs")
    document = verify_document(
        inventory={"path": bundle.inventory_path},
        results=results,
        hosts=hosts,
        ssh_execs=execs,
        mesh="ring",
        selection={},
        exit_code=1,
    )
    write_bundle(bundle, target, document, results=results)
    # one file per kind of transcript, each host's a gzip member of it; a stderr that said nothing
    # is not written; both nodes fail a check (network.link), so both have their facts.json
    assert sorted(p.name for p in (target / "hosts").iterdir()) == [
        "gather.err.gz",
        "gather.out.gz",
        "node1.facts.json.gz",
        "node2.facts.json.gz",
        "ping.out.gz",
    ]
    assert {
        name: sorted(record["files"]) for name, record in json.loads((target / "run.json").read_text())["hosts"].items()
    } == {
        "node1": ["gather.err", "gather.out", "ping.out"],
        "node2": ["gather.out"],
    }
    assert json.loads((target / "run.json").read_text())["inventory"]["sha256"] == bundle.inventory_sha256
    again = read_bundle(target)
    assert again.day == TODAY and again.pings == plan and again.ssh_execs == execs
    assert {
        name: (h.gather_stdout, h.gather_stderr, h.ping_stdout, h.ping_stderr) for name, h in again.hosts.items()
    } == {name: (h.gather_stdout, h.gather_stderr, h.ping_stdout, h.ping_stderr) for name, h in hosts.items()}
    # a figure that is not a number is written null, so the strict reader takes the bundle back
    assert again.allreduce_findings == [slow] and again.allreduce_doc == {
        "schema_version": 1,
        "passed": False,
        "busbw_gbps": None,
        "note": "\u00b0",
    }
    desired_again = build_desired(inventory_from_text(again.inventory_text))
    assert run_checks(desired_again, again.hosts, again.pings, today=again.day) == results
    # The CLI re-check reads the same bundle and exits as the live run would have (1: errors).
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(target), "--format", "json"])
    assert outcome.exit_code == 1, outcome.output
    rechecked = json.loads(outcome.stdout)
    assert rechecked["checks"] == [r.to_dict() for r in results]
    assert rechecked["from_bundle"] == str(target) and rechecked["bundle"] is None
    assert rechecked["allreduce"] == {"schema_version": 1, "passed": False, "busbw_gbps": None, "note": "\u00b0"}
    assert rechecked["findings"][-1] == slow.to_dict()


def test_a_tampered_bundle_is_refused(collected, tmp_path):
    desired, hosts, plan, _ = collected
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(Bundle("/x/inventory.yaml", _inventory_text(), hosts, plan, "ring", {}, TODAY), target, {})
    (target / "inventory.yaml").write_text(_inventory_text().replace("node[1-2]", "n[1-2]"))
    with pytest.raises(BundleError, match="sha256"):
        read_bundle(target)
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(target)])
    assert outcome.exit_code == 2 and "sha256" in outcome.output


def test_bundle_dirs_do_not_collide_within_a_second(tmp_path):
    first = new_bundle_dir(tmp_path)
    first.mkdir()
    second = new_bundle_dir(tmp_path)
    assert second != first and second.name.startswith(first.name)


def test_missing_bundle_is_invalid_input(tmp_path):
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(tmp_path / "nope")])
    assert outcome.exit_code == 2
    assert "not a directory" in outcome.output


def test_a_bundle_dir_being_written_is_not_chosen_again(tmp_path):
    from ascendprep.run.bundle import partial_dir

    first = new_bundle_dir(tmp_path)
    partial_dir(first).mkdir()  # another run is writing it
    second = new_bundle_dir(tmp_path)
    assert second != first and second.name.startswith(first.name)


def _round_trip_json(hosts, desired, plan, execs, tmp_path):
    """``verify --from-bundle RUN --format json`` of a bundle saved from ``hosts``: its reachability checks."""
    results = run_checks(desired, hosts, plan, today=TODAY)
    bundle = Bundle("/x/inventory.yaml", _inventory_text(), hosts, plan, "ring", {}, TODAY, ssh_execs=execs)
    target = new_bundle_dir(tmp_path / "runs")
    document = verify_document(
        inventory={"path": bundle.inventory_path},
        results=results,
        hosts=hosts,
        ssh_execs=execs,
        mesh="ring",
        selection={},
        exit_code=1,
    )
    write_bundle(bundle, target, document, results=results)
    again = read_bundle(target)
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(target), "--format", "json"])
    assert outcome.exit_code == 1, outcome.output
    checks = json.loads(outcome.stdout)["checks"]
    return again, [c for c in checks if c["check"] == "cluster.reachability"]


def test_round_trip_latency_is_in_the_json_and_survives_the_bundle(collected, tmp_path):
    desired, hosts, plan, execs = collected
    # the stand-in prints three replies of 0.05 ms each, as hccn_tool's "recv seq=N,time=X ms" lines
    assert [(r.average_ms, r.max_ms) for r in hosts["node1"].pings or ()] == [(0.05, 0.05)] * 2
    again, reach = _round_trip_json(hosts, desired, plan, execs, tmp_path)
    assert again.hosts["node1"].pings == hosts["node1"].pings
    assert [(c["evidence"]["rtt_avg_ms"], c["evidence"]["rtt_max_ms"]) for c in reach] == [(0.05, 0.05)] * 2


def test_a_bundle_whose_pings_print_no_times_still_reads(collected, tmp_path):
    desired, hosts, plan, execs = collected
    # a bundle written before round trips were kept holds the same transcript; one whose tool
    # printed no reply times (or an older reader's view) reads with the times unknown
    stripped = "".join(
        line for line in hosts["node1"].ping_stdout.splitlines(keepends=True) if not line.startswith("recv seq=")
    )
    assert stripped != hosts["node1"].ping_stdout
    old = {**hosts, "node1": replace(hosts["node1"], ping_stdout=stripped)}
    again, reach = _round_trip_json(old, desired, plan, execs, tmp_path)
    assert [(r.ok, r.average_ms, r.max_ms) for r in again.hosts["node1"].pings or ()] == [(True, None, None)] * 2
    assert [c["status"] for c in reach] == ["passed", "passed"]
    assert [(c["evidence"]["rtt_avg_ms"], c["evidence"]["rtt_max_ms"]) for c in reach] == [(None, None)] * 2
