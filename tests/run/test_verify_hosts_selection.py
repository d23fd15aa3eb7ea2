"""verify --hosts PATTERN reads only the nodes it names: no other node is contacted, the cluster
checks judge the selection alone, their pings go to the other nodes' planned addresses, and the
report and the bundle say which nodes were read."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.run import fanout
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.checks.runner import run_checks

FAKE_HCCN_TOOL = """#!/bin/sh
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
  - name: node[1-4]
    host: 127.0.0.[1-4]
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


def test_only_the_selected_nodes_are_contacted_and_their_pings_reach_the_others(fake_tools) -> None:
    desired = build_desired(inventory_from_text(_inventory_text()))
    contacted = []

    def factory(access):
        contacted.append(access.name)
        return LocalTransport(access.name, 60)

    with Session(host_accesses(desired.inventory), forks=2, transport_factory=factory) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True, only={"node2", "node3"})
        execs = session.exec_counts()
    assert sorted(contacted) == ["node2", "node3"] and list(hosts) == ["node2", "node3"]
    assert plan is not None and all({"node2", "node3"} & {p.a.node, p.b.node} for p in plan.pairs)
    assert {p.source.node for p in plan.pairs if p.source} == {"node2", "node3"}
    targets = {target for pings in plan.by_source().values() for _, target in pings}
    planned = {npu.ip for name in ("node1", "node4") for npu in desired.nodes[name].hccn}
    assert targets & planned  # the unread peers are pinged at their planned addresses
    assert set(execs) == {"node2", "node3"}
    results = run_checks(desired, hosts, plan)
    assert {r.node for r in results if r.node is not None} <= {"node1", "node2", "node3", "node4"}
    assert not [
        r for r in results if r.node in ("node1", "node4") and r.check.startswith(("node.", "npu.", "network."))
    ]
    assert [r.check for r in results if r.check == "node.reachable"] == ["node.reachable", "node.reachable"]


def test_the_cli_reads_only_the_selection_and_says_so(fake_tools, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    contacted = []

    def connect(self, access):
        contacted.append(access.name)
        return LocalTransport(access.name, 60)

    monkeypatch.setattr(fanout.Session, "_connect_ssh", connect)
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(_inventory_text())
    outcome = CliRunner().invoke(verify_command, [str(inventory), "--hosts", "node[2-3]", "--format", "json"])
    document = json.loads(outcome.stdout)
    assert sorted(set(contacted)) == ["node2", "node3"]
    assert list(document["hosts"]) == ["node2", "node3"] and document["only_hosts"] == "node[2-3]"
    text = CliRunner().invoke(verify_command, [str(inventory), "--hosts", "node4"]).output
    assert "Read only node4 (--hosts): the cluster checks judged these nodes alone" in text
    # The bundle of that run is re-checked as the run was: node4 alone, nothing missing.
    runs = sorted((tmp_path / ".ascendprep" / "runs").iterdir())
    again = CliRunner().invoke(verify_command, ["--from-bundle", str(runs[-1]), "--format", "json"])
    assert "no evidence for nodes" not in again.output, again.output
    rechecked = json.loads(again.stdout)
    assert list(rechecked["hosts"]) == ["node4"] and rechecked["only_hosts"] == "node4"


def test_a_bundle_naming_odd_things_as_its_hosts_is_read_without_a_traceback(fake_tools, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fanout.Session, "_connect_ssh", lambda self, access: LocalTransport(access.name, 60))
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(_inventory_text())
    CliRunner().invoke(verify_command, [str(inventory), "--hosts", "node4", "--skip", "cluster"])
    (run,) = sorted((tmp_path / ".ascendprep" / "runs").iterdir())
    record = json.loads((run / "run.json").read_text())
    record["selection"]["hosts"] = ["node4", 1, {"x": 1}, ["node1"]]  # not names: a located refusal
    (run / "run.json").write_text(json.dumps(record))
    again = CliRunner().invoke(verify_command, ["--from-bundle", str(run), "--format", "json"])
    assert "Traceback" not in again.output and again.exception is None or isinstance(again.exception, SystemExit), (
        again.output
    )
    assert again.exit_code == 2 and "run.json: selection.hosts[1]: must be text, not a number; refused" in " ".join(
        again.output.split()
    )
    record["selection"]["hosts"] = ["node4", "nobody"]  # a name the inventory lacks is left out
    (run / "run.json").write_text(json.dumps(record))
    again = CliRunner().invoke(verify_command, ["--from-bundle", str(run), "--format", "json"])
    assert list(json.loads(again.stdout)["hosts"]) == ["node4"]
