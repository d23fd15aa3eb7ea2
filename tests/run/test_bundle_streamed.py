"""verify writes each host's raw transcripts to its bundle as soon as that host's phase is done
and holds them no longer (at 4,096 hosts they were ~250 MB kept to the end only to be written);
the bundle still reads back and re-checks as the run judged, and a run that stops (Ctrl-C) or
runs out of disk leaves no folder named as a bundle."""

from __future__ import annotations

import errno
import gzip
import json
import random
from collections import Counter, namedtuple
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from ascendprep.base.limits import BUNDLE_APPEND_BUFFER_BYTES
from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.run import bundle as bundle_module
from ascendprep.run import evidence, fanout
from ascendprep.run.bundle import BundleWriter, new_bundle_dir
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.checks.context import HostEvidence
from tests.run.test_verify_hosts_selection import _inventory_text, fake_tools  # noqa: F401  (fixture)


def _local(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fanout.Session, "_connect_ssh", lambda self, access: LocalTransport(access.name, 60))
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(_inventory_text())
    return inventory


def test_each_hosts_transcripts_go_to_the_partial_bundle_and_are_not_held(fake_tools, tmp_path) -> None:  # noqa: F811
    desired = build_desired(inventory_from_text(_inventory_text()))
    writer = BundleWriter(new_bundle_dir(tmp_path / "runs"))
    writer.open()
    with Session(
        host_accesses(desired.inventory), forks=2, transport_factory=lambda access: LocalTransport(access.name, 60)
    ) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True, keep=writer.keep)
    assert plan is not None and hosts["node1"].facts is not None and hosts["node1"].pings
    # what the writer holds in memory is bounded (the members are written a buffer at a time)
    assert all(len(stream.pending) < BUNDLE_APPEND_BUFFER_BYTES for stream in writer._streams.values())
    writer.close_streams(flush=True)
    for name, host in hosts.items():
        assert (host.gather_stdout, host.gather_stderr, host.ping_stdout, host.ping_stderr) == ("", "", "", "")
        folder = writer.partial / "hosts"
        for stem, says in (("gather.out", b"@@ascendprep"), ("ping.out", b"packets transmitted")):
            offset, length = writer.members[name][stem]  # its own gzip member of hosts/<stem>.gz
            assert says in gzip.decompress((folder / f"{stem}.gz").read_bytes()[offset : offset + length])
        assert not (folder / f"{name}.facts.json.gz").exists()  # written at the end, for the hosts that fail
    assert not writer.target.exists()  # not named as a bundle before the run is done


def test_a_streamed_bundle_re_checks_as_the_run_judged(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    inventory = _local(monkeypatch, tmp_path)
    live = CliRunner().invoke(verify_command, [str(inventory), "--format", "json", "--sample-interval", "0"])
    document = json.loads(live.stdout)
    (run,) = sorted((tmp_path / ".ascendprep" / "runs").iterdir())
    assert document["bundle"] == str(run.relative_to(tmp_path)) or document["bundle"] == str(run)
    # one folder of host files; an empty stderr is not written; facts.json only for a node that fails
    assert {p.name for p in (run / "hosts").iterdir() if not p.name.endswith(".facts.json.gz")} == {
        "gather.out.gz",
        "ping.out.gz",
    }
    assert set(json.loads((run / "run.json").read_text())["hosts"]["node1"]["files"]) == {"gather.out", "ping.out"}
    failing = {c["node"] for c in document["checks"] if c["status"] == "failed" and c["node"]}
    assert {p.name for p in (run / "hosts").glob("*.facts.json.gz")} == {f"{name}.facts.json.gz" for name in failing}
    for name in failing:
        assert json.loads(gzip.decompress((run / "hosts" / f"{name}.facts.json.gz").read_bytes()))["hostname"]
    again = CliRunner().invoke(verify_command, ["--from-bundle", str(run), "--format", "json"])
    rechecked = json.loads(again.stdout)

    def verdicts(doc):
        return sorted(
            (
                c["check"],
                c["node"] or "",
                c["npu"] if c["npu"] is not None else -1,
                c["subject"] or "",
                c["status"],
                c["message"],
            )
            for c in doc["checks"]
        )

    assert (
        verdicts(rechecked) == verdicts(document) and rechecked["exit_code"] == document["exit_code"] == live.exit_code
    )
    # results.json is the verdict: every result but the passed ones, and those counted per check
    gzipped = json.loads(gzip.decompress((run / "results.json.gz").read_bytes()))
    assert verdicts(gzipped) == verdicts({"checks": [c for c in document["checks"] if c["status"] != "passed"]})
    passed = [c for c in document["checks"] if c["status"] == "passed"]
    assert {check: entry["count"] for check, entry in gzipped["passed"].items()} == dict(
        Counter(c["check"] for c in passed)
    )


def test_ctrl_c_during_the_pings_leaves_no_bundle_and_no_partial_folder(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    inventory = _local(monkeypatch, tmp_path)
    seen = []

    def interrupted(session, plan, progress=None, **options):
        seen.extend((tmp_path / ".ascendprep" / "runs").iterdir())  # the gather's files are written by now
        raise KeyboardInterrupt

    monkeypatch.setattr(evidence, "run_pings", interrupted)
    outcome = CliRunner().invoke(verify_command, [str(inventory), "--sample-interval", "0"])
    assert outcome.exit_code == 130 and "interrupted" in outcome.output
    assert [p.name.endswith(".partial") for p in seen] == [True]
    assert list((tmp_path / ".ascendprep" / "runs").iterdir()) == []


def test_format_json_prints_every_result_and_the_bundle_keeps_the_verdict(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    from ascendprep.report import jsondoc

    inventory = _local(monkeypatch, tmp_path)
    encoded = []
    real = jsondoc.json_bytes

    def counting(document, **kwargs):
        if isinstance(document, dict) and document.get("kind") == "verify":
            encoded.append("passed" in document)
        return real(document, **kwargs)

    monkeypatch.setattr(jsondoc, "json_bytes", counting)
    outcome = CliRunner().invoke(verify_command, [str(inventory), "--format", "json", "--sample-interval", "0"])
    (run,) = sorted((tmp_path / ".ascendprep" / "runs").iterdir())
    printed = json.loads(outcome.stdout)
    saved = json.loads(gzip.decompress((run / "results.json.gz").read_bytes()))
    # stdout: every result, passed ones with their evidence, as before
    assert printed["bundle"] and "passed" not in printed and printed["summary"]["passed"] > 20
    assert sum(c["status"] == "passed" for c in printed["checks"]) == printed["summary"]["passed"]
    # results.json: the same document, but the passed results counted, not listed
    assert saved["checks"] == [c for c in printed["checks"] if c["status"] != "passed"] and saved["checks"]
    assert sum(entry["count"] for entry in saved["passed"].values()) == printed["summary"]["passed"]
    assert saved["passed"]["node.reachable"] == {"count": 4, "nodes": "node[1-4]"}
    assert saved["full"] == f"ascendprep verify --from-bundle {printed['bundle']} --format json"
    assert {k: v for k, v in saved.items() if k not in ("checks", "passed", "full")} == {
        k: v for k, v in printed.items() if k != "checks"
    }
    assert sorted(encoded) == [False, True]  # each document once: the full one on stdout, the verdict in the bundle


Usage = namedtuple("Usage", "total used free")


def test_a_disk_that_fills_during_the_run_costs_the_bundle_not_the_verdict(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    inventory = _local(monkeypatch, tmp_path)
    full = CliRunner().invoke(
        verify_command, [str(inventory), "--format", "json", "--sample-interval", "0", "--keep-runs", "5"]
    )
    monkeypatch.setattr(bundle_module.shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 100, 100))
    outcome = CliRunner().invoke(
        verify_command, [str(inventory), "--format", "json", "--sample-interval", "0", "--keep-runs", "5"]
    )
    document = json.loads(outcome.stdout)
    assert document["bundle"] is None and "the evidence bundle was not saved" in outcome.stderr
    assert outcome.exit_code == full.exit_code and document["summary"] == json.loads(full.stdout)["summary"]
    runs = sorted(p.name for p in (tmp_path / ".ascendprep" / "runs").iterdir())
    assert len(runs) == 1 and not runs[0].startswith(".")  # the first run's bundle only; nothing half-written


def test_a_gathered_transcript_is_handed_over_in_its_hosts_worker_not_after_every_host(fake_tools, tmp_path) -> None:  # noqa: F811
    import threading

    desired = build_desired(inventory_from_text(_inventory_text()))
    handed = []

    def keep(host):
        handed.append(
            (
                host.node,
                threading.current_thread() is threading.main_thread(),
                len(host.gather_stdout),
                len(host.ping_stdout),
            )
        )
        return host.__class__(
            **{**host.__dict__, "gather_stdout": "", "gather_stderr": "", "ping_stdout": "", "ping_stderr": ""}
        )

    with Session(
        host_accesses(desired.inventory), forks=2, transport_factory=lambda access: LocalTransport(access.name, 60)
    ) as session:
        hosts, _ = collect(session, desired, "ring", with_pings=True, keep=keep)
    gathers = [entry for entry in handed if entry[2]]
    assert sorted(name for name, *_ in gathers) == ["node1", "node2", "node3", "node4"]
    assert not any(in_main for _, in_main, _, _ in gathers)  # in the workers, as each host is parsed
    assert all(not host.gather_stdout for host in hosts.values())


def test_verify_runs_without_the_cycle_collector_and_restores_it(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    import gc

    from ascendprep.run import verify as verify_module

    inventory = _local(monkeypatch, tmp_path)
    collections, inside = [], []
    real = verify_module._run_verify

    def running(options):
        inside.append(True)
        try:
            return real(options)
        finally:
            inside.clear()

    monkeypatch.setattr(verify_module, "_run_verify", running)

    def note(phase, info):
        if phase == "start" and inside:
            collections.append(info["generation"])

    gc.callbacks.append(note)
    try:
        assert gc.isenabled()
        outcome = CliRunner().invoke(verify_command, [str(inventory), "--format", "json", "--sample-interval", "0"])
        assert json.loads(outcome.stdout)["summary"]["passed"] > 0
        assert collections == [] and gc.isenabled()
        monkeypatch.setattr(evidence, "run_pings", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
        assert CliRunner().invoke(verify_command, [str(inventory), "--sample-interval", "0"]).exit_code == 130
        assert gc.isenabled()  # back on after an interrupted run too
    finally:
        gc.callbacks.remove(note)


@pytest.mark.parametrize("buffer", [1, 3000, 10**9])
def test_each_member_reads_back_whatever_the_append_buffer(tmp_path, monkeypatch, buffer) -> None:
    """The members are written a buffer at a time (every append, some, or only when the bundle is
    put in place): each host's member is still its own transcript at its own offset, also with
    hosts kept from several workers at once."""
    monkeypatch.setattr(bundle_module, "BUNDLE_APPEND_BUFFER_BYTES", buffer)
    writer = BundleWriter(new_bundle_dir(tmp_path / "runs"))
    writer.open()
    rng = random.Random(buffer)
    texts = {f"node{i}": "".join(rng.choice("ab \n°") for _ in range(rng.randrange(0, 5000))) for i in range(40)}
    with ThreadPoolExecutor(8) as pool:
        kept = list(
            pool.map(
                lambda item: writer.keep(HostEvidence(item[0], "", None, pings=(), ping_stdout=item[1])), texts.items()
            )
        )
    assert all(host.ping_stdout == "" for host in kept)
    writer.close_streams(flush=True)
    data = (writer.partial / "hosts" / "ping.out.gz").read_bytes()
    assert len(data) == sum(writer.members[name]["ping.out"][1] for name in texts)
    for name, text in texts.items():
        offset, length = writer.members[name]["ping.out"]
        assert gzip.decompress(data[offset : offset + length]).decode() == text


def test_a_write_that_fails_gives_the_bundle_up_not_the_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(bundle_module, "BUNDLE_APPEND_BUFFER_BYTES", 1)  # every member written at once

    def full(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bundle_module._Stream, "flush", full)
    writer = BundleWriter(new_bundle_dir(tmp_path / "runs"))
    writer.open()
    host = writer.keep(HostEvidence("node1", "", None, pings=(), ping_stdout="3 packets transmitted"))
    assert host.ping_stdout == ""
    assert writer.problem is not None and "No space left on device" in writer.problem
    assert not writer.partial.exists()


def test_a_killed_runs_partial_bundle_is_removed_by_the_next_run(fake_tools, tmp_path, monkeypatch) -> None:  # noqa: F811
    """SIGKILL leaves no chance to clean up: the next run removes the partial folder of any run
    of its own (this user's, this machine's, its process gone) and says so; a live run's stays."""
    import subprocess

    inventory = _local(monkeypatch, tmp_path)
    runs = tmp_path / ".ascendprep" / "runs"
    runs.mkdir(parents=True)
    process = subprocess.Popen(["true"])
    process.wait()
    host = bundle_module._this_host()
    stale = runs / f".20250101T000000Z.{process.pid}@{host}.partial"
    stale.mkdir()
    live = runs / f".20250101T000001Z.1@{host}.partial"
    live.mkdir()
    outcome = CliRunner().invoke(verify_command, [str(inventory), "--sample-interval", "0"])
    assert outcome.exit_code in (0, 1), outcome.output
    assert (
        not stale.exists()
        and f"Removed {stale.relative_to(tmp_path)}: the partial bundle of a run that stopped" in outcome.stderr
    )
    assert live.exists()
    assert [p.name for p in runs.iterdir() if not p.name.startswith(".")] != []  # this run's bundle


def test_the_partial_folder_names_its_run() -> None:
    import os

    writer = BundleWriter(new_bundle_dir(bundle_module.RUNS_DIR))
    assert writer.partial.name == f".{writer.target.name}.{os.getpid()}@{bundle_module._this_host()}.partial"
    assert bundle_module.PARTIAL_RE.match(writer.partial.name).group("name") == writer.target.name
