"""verify --local on each node, merged with --from-bundle, judges the cluster as verify over SSH does.

The "nodes" are this machine: the fake NPU tools (tests/fixtures/probes/fake_tools) answer every
node's hccn_tool/npu-smi, so the same evidence is read whether a Session of local transports
plays the SSH fan-out or each node runs ``verify --local --node NAME`` itself.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple
from unittest import mock

import pytest
import yaml
from click.testing import CliRunner

from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.access import HostAccess
from ascendprep.remote.local import LocalTransport
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session
from ascendprep.run.node_local import local_ping_plan
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

FAKE_TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "fake_tools"
NODES = ("n1", "n2", "n3")
INVENTORY = {
    "name": "t",
    "product": "atlas-a2",
    "npus_per_node": 2,
    "device_network": {"subnet": "10.20.0.0/24", "tls": False},
    "nodes": [{"name": "n[1-3]", "host": "10.0.0.[11-13]"}],
}

Verdicts = Set[Tuple[str, Any, Any, Any, str]]


@pytest.fixture
def fake_node(tmp_path, monkeypatch) -> Path:
    """This machine as an Ascend node (fake tools on PATH); returns the inventory file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("hccn_tool", "npu-smi"):
        shutil.copyfile(FAKE_TOOLS / tool, bin_dir / tool)
        (bin_dir / tool).chmod(stat.S_IRWXU)
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FIXTURES", str(FAKE_TOOLS.parent))
    monkeypatch.setenv("FAKE_STATE", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(INVENTORY))
    return path


def verify(*args: str) -> Tuple[int, Dict[str, Any], str]:
    outcome = CliRunner().invoke(verify_command, [*args, "--format", "json"])
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    document = json.loads(outcome.stdout) if outcome.stdout.startswith("{") else {}
    return outcome.exit_code, document, outcome.stderr


def verdicts(checks: List[Dict[str, Any]]) -> Verdicts:
    return {(c["check"], c.get("node"), c.get("npu"), c.get("subject"), c["status"]) for c in checks}


def local_bundles(inventory: Path, tmp_path: Path, nodes=NODES, machines=None) -> List[str]:
    """Each node's bundle of a --local run, written as if on a machine of its own (``machines``:
    node -> the machine, by its id, that writes that node's bundle; default: one per node)."""
    folders = []
    for node in nodes:
        folder = tmp_path / "bundles" / node
        folder.parent.mkdir(exist_ok=True)
        machine = (machines or {}).get(node, f"machine-of-{node}")
        with mock.patch("ascendprep.run.node_local.machine_id_digest", lambda machine=machine: machine):
            code, document, stderr = verify(
                str(inventory), "--local", "--node", node, "--bundle-dir", str(folder), "--sample-interval", "0"
            )
        assert code in (0, 1), stderr
        assert set(document["hosts"]) == {node} and document["local_node"] == node
        folders.append(str(folder))
    return folders


def ssh_style_verdicts(inventory: Path) -> Verdicts:
    """What verify over SSH judges: one Session over all nodes (local transports stand in for SSH)."""
    desired = build_desired(inventory_from_text(inventory.read_text()))
    accesses = [HostAccess(name=node.name, address=node.host) for node in desired.inventory.nodes]
    with Session(accesses, forks=3, transport_factory=lambda access: LocalTransport(access.name)) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True)
    results = run_checks(desired, hosts, plan, Selection())
    return {(r.check, r.node, r.npu, r.subject, r.status.value) for r in results}


def test_merged_local_runs_judge_the_cluster_as_the_ssh_run_does(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path)
    code, merged, stderr = verify("--from-bundle", *folders)
    assert code == 1, stderr  # the fake fabric loses pings: the cluster fails, as over SSH
    expected = ssh_style_verdicts(fake_node)
    assert any(v[0] == "cluster.reachability" for v in expected), "no pings judged: the comparison would prove little"
    assert verdicts(merged["checks"]) == expected
    assert merged["merged"]["missing"] == [] and sorted(merged["merged"]["sources"]) == list(NODES)


def test_a_local_run_judges_only_its_node_and_pings_every_pair_it_is_an_end_of(fake_node, tmp_path):
    code, document, _ = verify(
        str(fake_node), "--local", "--node", "n2", "--bundle-dir", str(tmp_path / "b"), "--sample-interval", "0"
    )
    assert code == 1
    nodes = {c.get("node") for c in document["checks"]}
    assert nodes <= {"n2", None}
    pinged = [c["evidence"] for c in document["checks"] if c["check"] == "cluster.reachability"]
    desired = build_desired(inventory_from_text(fake_node.read_text()))
    plan = local_ping_plan(desired, "n2", None, "ring")
    assert len(pinged) == len(plan.pairs) > 0
    assert all(e["from"]["node"] == "n2" for e in pinged)  # from its own NPUs, to n1 and n3
    assert {e["to"]["node"] for e in pinged} == {"n1", "n3"}


def test_a_missing_node_is_named_and_its_pairs_are_judged_from_the_other_end(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, nodes=("n1", "n2"))
    code, document, _ = verify("--from-bundle", *folders)
    assert code == 1
    assert document["merged"]["missing"] == ["n3"]
    reach = [c for c in document["checks"] if c["check"] == "node.reachable" and c["node"] == "n3"]
    assert reach and reach[0]["status"] == "failed" and "no node bundle for n3" in reach[0]["message"]
    n3_pairs = [c for c in document["checks"] if c["check"] == "cluster.reachability" and "n3:" in c["subject"]]
    assert n3_pairs and all(c["evidence"]["from"]["node"] != "n3" and "sent" in c["evidence"] for c in n3_pairs)
    text = CliRunner().invoke(verify_command, ["--from-bundle", *folders])
    assert "No bundle for n3" in text.stdout


def test_hostile_or_mismatched_bundles_are_refused_with_the_folder_named(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, nodes=("n1", "n2"))
    again = tmp_path / "n1-again"
    shutil.copytree(folders[0], again)
    code, _, stderr = verify("--from-bundle", folders[0], folders[1], str(again))
    assert code == 2 and "a second bundle of n1" in stderr and "n1-again" in stderr

    tampered = tmp_path / "tampered"
    shutil.copytree(folders[1], tampered)
    run = json.loads((tampered / "run.json").read_text())
    run["local_node"] = "n3"  # says n3, holds n2's evidence
    (tampered / "run.json").write_text(json.dumps(run))
    code, _, stderr = verify("--from-bundle", folders[0], str(tampered))
    assert code == 2 and "run.json" in stderr and "must hold that node alone" in stderr

    other = dict(INVENTORY, name="other")
    other_inventory = tmp_path / "other.yaml"
    other_inventory.write_text(yaml.safe_dump(other))
    code, _, stderr = verify(
        str(other_inventory), "--local", "--node", "n3", "--bundle-dir", str(tmp_path / "o3"), "--sample-interval", "0"
    )
    assert code in (0, 1), stderr
    code, _, stderr = verify("--from-bundle", *folders, str(tmp_path / "o3"))
    assert code == 2 and "made from another inventory" in stderr and "o3" in stderr

    whole = tmp_path / "whole-run"
    shutil.copytree(folders[1], whole)
    run = json.loads((whole / "run.json").read_text())
    del run["local_node"]  # a whole verify run's bundle: its ping plan is not a node's own
    (whole / "run.json").write_text(json.dumps(run))
    code, _, stderr = verify("--from-bundle", folders[0], str(whole))
    assert code == 2 and "only node bundles (verify --local) are merged" in stderr and "whole-run" in stderr


def test_bundle_dir_replaces_an_earlier_bundle_and_refuses_other_folders(fake_node, tmp_path):
    folder = tmp_path / "b1"
    for _ in range(2):  # run twice into one folder, as a scheduler's prolog does
        code, _, stderr = verify(
            str(fake_node), "--local", "--node", "n1", "--bundle-dir", str(folder), "--sample-interval", "0"
        )
        assert code in (0, 1), stderr
    assert json.loads((folder / "run.json").read_text())["local_node"] == "n1"
    assert not list(tmp_path.glob(".b1.*"))

    shutil.rmtree(tmp_path / "state")
    (tmp_path / "state").mkdir()  # the fake hccn_tool notes its first -tls call here
    busy = tmp_path / "home"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    code, _, stderr = verify(str(fake_node), "--local", "--node", "n1", "--bundle-dir", str(busy))
    assert code == 2 and "other files than a verify bundle" in stderr
    assert (busy / "notes.txt").read_text() == "mine" and not list((tmp_path / "state").iterdir())  # nothing was read

    code, _, stderr = verify(str(fake_node), "--local", "--node", "n2", "--bundle-dir", str(folder))
    assert code == 2 and "holds the bundle of n1, not of n2" in stderr  # n1's evidence is kept
    assert json.loads((folder / "run.json").read_text())["local_node"] == "n1"


@pytest.fixture
def tools_in_container(fake_node, tmp_path, monkeypatch) -> str:
    """The fake tools only inside a "container": off this machine's PATH, on the wrapper's."""
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != str(bin_dir)))
    wrapper = tmp_path / "container"
    wrapper.write_text(f'#!/bin/sh\nPATH={bin_dir}:$PATH exec "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_exec_via_runs_the_pings_where_the_tools_are_as_the_gather(fake_node, tools_in_container, tmp_path):
    """The pings meet the container's hccn_tool (as a job there would), over SSH as with --local."""
    from ascendprep.run.execvia import parse_exec_via

    desired = build_desired(inventory_from_text(fake_node.read_text()))
    accesses = [HostAccess(name=node.name, address=node.host) for node in desired.inventory.nodes]
    with Session(accesses, forks=3, transport_factory=lambda access: LocalTransport(access.name)) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True, exec_via=parse_exec_via(tools_in_container))
    pinged = [result for host in hosts.values() for result in host.pings or ()]
    assert plan is not None and len(pinged) == len(plan.pairs) > 0
    assert all(result.sent is not None for result in pinged), [r.error for r in pinged if r.sent is None]

    code, document, stderr = verify(
        str(fake_node),
        "--local",
        "--node",
        "n2",
        "--exec-via",
        tools_in_container,
        "--bundle-dir",
        str(tmp_path / "b"),
        "--sample-interval",
        "0",
    )
    assert code in (0, 1), stderr
    reach = [c for c in document["checks"] if c["check"] == "cluster.reachability"]
    assert reach and all("sent" in c["evidence"] for c in reach), [c["message"] for c in reach]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--node", "n1"], "only apply with --local"),
        (["--local", "--forks", "4"], "--forks do not apply"),
        (["--local", "--hosts", "n1"], "--hosts do not apply"),
        (["--local", "--node", "n9"], "'n9' is not a node"),
    ],
)
def test_local_usage_errors(fake_node, args, message):
    outcome = CliRunner().invoke(verify_command, [str(fake_node), *args])
    assert outcome.exit_code == 2 and message in outcome.output


def _dead_pid() -> int:
    """The pid of a process that has ended (a killed run's)."""
    import subprocess

    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_partial_bundles_left_by_killed_runs_are_removed_and_said(fake_node, tmp_path):
    """A run killed while writing (SIGKILL, a crash) leaves ``.<name>.<pid>@<host>.partial``; the
    next run into that folder removes it and says so. A partial folder of a run still going,
    of another machine (a shared folder), of another bundle or of another user is left alone."""
    from ascendprep.run.bundle import _this_host

    folder = tmp_path / "b1"
    host, dead = _this_host(), _dead_pid()
    stale = tmp_path / f".b1.{dead}@{host}.partial"
    (stale / "hosts").mkdir(parents=True)
    (stale / "hosts" / "gather.out.gz").write_bytes(b"half")
    kept = [
        tmp_path / f".b1.1@{host}.partial",  # pid 1 runs: a run that is still writing
        tmp_path / f".b1.{dead}@elsewhere.partial",  # another machine's run
        tmp_path / f".b2.{dead}@{host}.partial",  # another bundle's
        tmp_path / ".b1.partial-notes",  # not a name ascendprep makes
    ]
    for path in kept:
        path.mkdir()
    theirs = tmp_path / f".b1.{dead + 1}@{host}.partial"
    if os.geteuid() == 0:
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)  # another user's
        kept.append(theirs)
    code, _, stderr = verify(
        str(fake_node), "--local", "--node", "n1", "--bundle-dir", str(folder), "--sample-interval", "0"
    )
    assert code in (0, 1), stderr
    assert not stale.exists() and f"Removed {stale}: the partial bundle of a run that stopped" in stderr
    assert all(path.exists() for path in kept) and stderr.count("Removed") == 1
    assert json.loads((folder / "run.json").read_text())["local_node"] == "n1"


# -- a node bundle is tied to the machine that wrote it ----------------------------------------


def _edit_run(folder: Path, change) -> None:
    run = json.loads((folder / "run.json").read_text())
    change(run)
    (folder / "run.json").write_text(json.dumps(run))


def test_a_node_bundle_records_its_node_machine_and_inventory_but_not_the_machine_id(fake_node, tmp_path):
    code, _, stderr = verify(
        str(fake_node), "--local", "--node", "n2", "--bundle-dir", str(tmp_path / "b"), "--sample-interval", "0"
    )
    assert code in (0, 1), stderr
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    tie = run["node_tie"]
    assert (
        tie["node"] == "n2"
        and tie["hostname"] == socket.gethostname()
        and tie["inventory_sha256"] == run["inventory"]["sha256"]
    )
    raw = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").exists() else None
    assert tie["machine_id"] is None if raw is None else (len(tie["machine_id"]) == 64 and raw not in tie["machine_id"])


def test_two_nodes_bundles_from_one_machine_are_refused_by_name(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, machines={"n3": "machine-of-n1"})  # n3's bundle made on n1
    code, _, stderr = verify("--from-bundle", *folders)
    assert code == 2 and "the bundles of n1" in stderr and "and n3 were written on one machine" in stderr, stderr
    assert folders[2] in " ".join(stderr.split())


def test_a_bundle_written_on_another_inventory_nodes_machine_is_refused(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, nodes=("n1",))
    with (
        mock.patch("ascendprep.run.node_local.socket.gethostname", lambda: "n1.example.com"),
        mock.patch("ascendprep.run.node_local.machine_id_digest", lambda: "elsewhere"),
    ):
        code, _, stderr = verify(
            str(fake_node),
            "--local",
            "--node",
            "n2",
            "--bundle-dir",
            str(tmp_path / "n2-on-n1"),
            "--sample-interval",
            "0",
        )
    assert code in (0, 1), stderr
    code, _, stderr = verify("--from-bundle", folders[0], str(tmp_path / "n2-on-n1"))
    assert (
        code == 2
        and "the bundle of n2 was written on the machine named n1.example.com, which is the inventory's node n1"
        in " ".join(stderr.split())
    )


def test_evidence_moved_to_another_nodes_name_is_refused(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, nodes=("n1", "n2"))
    moved = tmp_path / "n2-as-n3"
    shutil.copytree(folders[1], moved)

    def as_n3(run):
        run["hosts"]["n3"] = run["hosts"].pop("n2")
        run["local_node"] = "n3"

    _edit_run(moved, as_n3)
    code, _, stderr = verify("--from-bundle", folders[0], str(moved))
    assert code == 2 and "holds n3's evidence but was written as 'n2''s bundle; refused" in " ".join(stderr.split()), (
        stderr
    )

    _edit_run(moved, lambda run: run["node_tie"].update(node="n3", inventory_sha256="0" * 64))  # the tie edited along
    code, _, stderr = verify("--from-bundle", folders[0], str(moved))
    assert code == 2 and "n3's bundle was written with another inventory than the copy it holds" in " ".join(
        stderr.split()
    ), stderr


def test_a_node_bundle_written_before_the_tie_is_refused_with_what_to_do(fake_node, tmp_path):
    folders = local_bundles(fake_node, tmp_path, nodes=("n1", "n2"))
    _edit_run(Path(folders[1]), lambda run: run.pop("node_tie"))
    code, _, stderr = verify("--from-bundle", *folders)
    text = " ".join(stderr.split())
    assert (
        code == 2
        and "the bundle of n2 does not record the machine that wrote it" in text
        and "run verify --local on n2 again" in text
    ), stderr
    code, _, stderr = verify("--from-bundle", folders[1])  # alone too: a node bundle is judged by the merge's rules
    assert code == 2 and "does not record the machine that wrote it" in stderr
