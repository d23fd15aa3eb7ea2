"""Evidence bundles: private on disk, compressed, pruned, written only where there is room, and
read back by ``--from-bundle`` only from inside their own folder."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
from collections import namedtuple
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state

from ascendprep.commands.verify import verify_command
from ascendprep.run import bundle as bundle_module
from ascendprep.run import verify as verify_flow
from ascendprep.run.bundle import (
    Bundle,
    BundleError,
    check_free_space,
    new_bundle_dir,
    prune_runs,
    read_bundle,
    run_dirs,
    write_bundle,
)
from ascendprep.verify.checks.registry import Selection


@pytest.fixture(scope="module")
def evidence():
    desired = desired_state()
    hosts, plan = cluster_evidence(desired)
    return desired, hosts, plan


def _bundle(evidence) -> Bundle:
    _, hosts, plan = evidence
    hosts = {
        name: host.__class__(**{**host.__dict__, "gather_stdout": f"raw output of {name}\n"})
        for name, host in hosts.items()
    }
    return Bundle("/x/inventory.yaml", INVENTORY, hosts, plan, "ring", Selection().to_dict(), TODAY)


@pytest.fixture
def saved(evidence, tmp_path):
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(_bundle(evidence), target, {"kind": "verify"})
    return target


def _member(folder: Path, name: str, stem: str) -> bytes:
    """``name``'s gzip member in ``hosts/<stem>.gz``, where run.json says it lies."""
    offset, length = json.loads((folder / "run.json").read_text())["hosts"][name]["files"][stem]
    return (folder / "hosts" / f"{stem}.gz").read_bytes()[offset : offset + length]


def _as_schema_2(folder: Path) -> None:
    """Rewrite a schema-3 bundle as schema 2 wrote it: a file per host and transcript."""
    run = json.loads((folder / "run.json").read_text())
    for name, record in run["hosts"].items():
        for stem in record.pop("files"):
            (folder / "hosts" / f"{name}.{stem}.gz").write_bytes(_member(folder, name, stem))
    for stem in bundle_module.STREAMS:
        (folder / "hosts" / f"{stem}.gz").unlink(missing_ok=True)
    run["schema_version"] = 2
    (folder / "run.json").write_text(json.dumps(run))


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_bundles_are_private_whatever_the_umask(evidence, tmp_path):
    old = os.umask(0o022)
    try:
        target = new_bundle_dir(tmp_path / "state" / "runs")
        write_bundle(_bundle(evidence), target, {})
    finally:
        os.umask(old)
    assert _mode(target.parent) == 0o700
    for path in [target, *target.rglob("*")]:
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path


def test_raw_outputs_are_gzipped_one_file_per_kind_and_read_back(saved):
    assert gzip.decompress(_member(saved, "node1", "gather.out")).decode() == "raw output of node1\n"
    # one file for every host's gather transcript, which zcat reads whole, and none per host
    everyone = gzip.decompress((saved / "hosts" / "gather.out.gz").read_bytes()).decode()
    assert sorted(everyone.splitlines()) == sorted(f"raw output of {name}" for name in read_bundle(saved).hosts)
    assert not [p.name for p in (saved / "hosts").iterdir() if ".gather." in p.name or ".ping." in p.name]
    assert json.loads(gzip.decompress((saved / "results.json.gz").read_bytes())) == {"kind": "verify"}
    assert read_bundle(saved).hosts["node1"].gather_stdout == "raw output of node1\n"


def test_bundles_of_schema_2_with_a_file_per_host_are_still_read(saved):
    written = read_bundle(saved)
    _as_schema_2(saved)
    assert (saved / "hosts" / "node1.gather.out.gz").exists()
    old = read_bundle(saved)
    assert {n: (h.gather_stdout, h.ping_stdout, h.facts) for n, h in old.hosts.items()} == {
        n: (h.gather_stdout, h.ping_stdout, h.facts) for n, h in written.hosts.items()
    }


def test_bundles_written_before_compression_are_still_read(saved):
    _as_schema_2(saved)
    for packed in list(saved.rglob("*.gz")):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    assert read_bundle(saved).hosts["node3"].gather_stdout == "raw output of node3\n"


def test_bundles_of_schema_1_with_a_folder_per_host_are_still_read(saved):
    written = read_bundle(saved)
    _as_schema_2(saved)
    hosts = saved / "hosts"
    for packed in sorted(hosts.iterdir()):
        name, stem = packed.name.split(".", 1)
        (hosts / name).mkdir(exist_ok=True)
        packed.rename(hosts / name / stem)
    for name, record in json.loads((saved / "run.json").read_text())["hosts"].items():
        for err, ran in (("gather.err.gz", record["gathered"]), ("ping.err.gz", (record["ping"] or {}).get("ran"))):
            if ran and not (hosts / name / err).exists():  # schema 1 wrote every stderr, empty or not
                (hosts / name / err).write_bytes(gzip.compress(b"said something\n"))
    _edit_run(saved, lambda run: run.update({"schema_version": 1}))
    old = read_bundle(saved)
    assert {n: h.gather_stdout for n, h in old.hosts.items()} == {n: h.gather_stdout for n, h in written.hosts.items()}
    assert {h.gather_stderr for h in old.hosts.values()} == {"said something\n"}
    assert {n: h.facts for n, h in old.hosts.items()} == {n: h.facts for n, h in written.hosts.items()}


def test_a_bundle_of_an_unknown_schema_is_refused_naming_what_is_read(saved):
    _edit_run(saved, lambda run: run.update({"schema_version": 4}))
    with pytest.raises(BundleError, match="schema_version 4; this ascendprep reads 1, 2, 3"):
        read_bundle(saved)


def test_a_missing_raw_output_is_refused_but_an_empty_stderr_need_not_be_there(saved):
    assert (
        "gather.err" not in json.loads((saved / "run.json").read_text())["hosts"]["node1"]["files"]
    )  # nothing on stderr: not written
    assert read_bundle(saved).hosts["node1"].gather_stderr == ""
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].pop("gather.out"))
    with pytest.raises(BundleError, match=r"hosts\.node1\.files has no gather\.out: missing from the bundle"):
        read_bundle(saved)


@pytest.mark.parametrize("where", [[-1, 10], [0, 0], [True, 10], [0, 10**12], "0,10", [0], [0.0, 10]])
def test_a_member_placed_anywhere_but_inside_its_file_is_refused(saved, where):
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].update({"gather.out": where}))
    with pytest.raises(BundleError, match=r"hosts\.node1\.files\.gather\.out must be \[offset, length\]"):
        read_bundle(saved)


def test_a_member_past_the_end_or_not_whole_is_refused(saved):
    size = (saved / "hosts" / "gather.out.gz").stat().st_size
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].update({"gather.out": [size - 5, 10]}))
    with pytest.raises(BundleError, match="lies past its end"):
        read_bundle(saved)
    with open(saved / "hosts" / "gather.out.gz", "ab") as stream:  # two members where one belongs
        stream.write(gzip.compress(b"one\n") + gzip.compress(b"two\n"))
    _edit_run(
        saved,
        lambda run: run["hosts"]["node1"]["files"].update(
            {"gather.out": [size, (saved / "hosts" / "gather.out.gz").stat().st_size - size]}
        ),
    )
    with pytest.raises(BundleError, match="is not one whole gzip member"):
        read_bundle(saved)


# -- reading only inside the folder -----------------------------------------------------------


def _edit_run(folder: Path, change) -> None:
    run = json.loads((folder / "run.json").read_text())
    change(run)
    (folder / "run.json").write_text(json.dumps(run))


def test_a_host_name_climbing_out_of_the_bundle_is_refused(saved):
    _edit_run(saved, lambda run: run["hosts"].update({"../../../etc": run["hosts"].pop("node1")}))
    with pytest.raises(BundleError, match=r"host name '\.\./\.\./\.\./etc' is not a node name; refused"):
        read_bundle(saved)


def test_an_inventory_copy_elsewhere_is_refused(saved):
    _edit_run(saved, lambda run: run["inventory"].update({"copy": "/etc/shadow"}))
    with pytest.raises(BundleError, match="the inventory copy must be inventory.yaml"):
        read_bundle(saved)


def test_a_symlink_to_a_file_outside_is_refused(saved, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret\n")
    target = saved / "hosts" / "gather.out.gz"
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(BundleError, match="a symbolic link inside the bundle; refused"):
        read_bundle(saved)
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved)], env={"COLUMNS": "400"})
    assert outcome.exit_code == 2 and "symbolic link" in outcome.output and "secret" not in outcome.output
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)


def test_a_symlinked_hosts_folder_is_refused(saved, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (saved / "hosts").rename(elsewhere)
    (saved / "hosts").symlink_to(elsewhere)
    with pytest.raises(BundleError, match="symbolic link"):
        read_bundle(saved)


def test_a_fifo_is_refused_without_blocking(saved):
    fifo = saved / "hosts" / "gather.err.gz"  # no host said anything on stderr: not written
    assert not fifo.exists()
    os.mkfifo(fifo)
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].update({"gather.err": [0, 10]}))
    with pytest.raises(BundleError, match="not a regular file"):
        read_bundle(saved)


def test_a_gzip_bomb_stops_at_the_file_cap(saved, monkeypatch):
    monkeypatch.setattr(bundle_module, "BUNDLE_FILE_MAX_BYTES", 1000)
    bomb = gzip.compress(b"\0" * 10_000_000)
    assert len(bomb) > 1000
    _as_schema_2(saved)  # a transcript in a file of its own
    (saved / "hosts" / "node1.gather.out.gz").write_bytes(bomb)
    with pytest.raises(BundleError, match="more than 1,000 bytes; refused"):
        read_bundle(saved)


def test_a_gzip_bomb_member_stops_at_the_file_cap(saved, monkeypatch):
    monkeypatch.setattr(bundle_module, "BUNDLE_FILE_MAX_BYTES", 1000)
    bomb = gzip.compress(b"\0" * 100_000)
    assert len(bomb) < 1000
    with open(saved / "hosts" / "gather.out.gz", "ab") as stream:
        offset = stream.tell()
        stream.write(bomb)
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].update({"gather.out": [offset, len(bomb)]}))
    with pytest.raises(BundleError, match="more than 1,000 bytes; refused"):
        read_bundle(saved)


def test_a_corrupt_gzip_file_is_a_clear_error(saved):
    (saved / "hosts" / "gather.out.gz").write_bytes(b"not gzip at all" * 100)
    with pytest.raises(BundleError, match="not a readable gzip"):
        read_bundle(saved)


def test_deeply_nested_run_json_is_refused(saved):
    (saved / "run.json").write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(BundleError, match="nested more than 64 deep"):
        read_bundle(saved)


def test_run_json_of_the_wrong_shape_is_a_bundle_error(saved):
    _edit_run(saved, lambda run: run.update({"hosts": ["node1"]}))
    with pytest.raises(BundleError, match="run.json: hosts: must be an object, not a list; refused"):
        read_bundle(saved)


# -- retention and disk space ------------------------------------------------------------------


def test_prune_keeps_the_newest_runs_and_nothing_else_is_touched(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    names = [
        "20260101T000000Z",
        "20260101T000000Z-2",
        "20260101T000000Z-10",
        "20260102T000000Z",
        "notes",
        ".20260103T000000Z.partial",
    ]
    for name in names:
        (runs / name).mkdir()
    (runs / "20250101T000000Z").symlink_to(tmp_path)  # a link is never followed nor removed
    removed = prune_runs(runs, keep=2)
    assert [p.name for p in removed] == ["20260101T000000Z", "20260101T000000Z-2"]
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        ["20260101T000000Z-10", "20260102T000000Z", "notes", ".20260103T000000Z.partial", "20250101T000000Z"]
    )
    assert [p.name for p in run_dirs(runs)] == ["20260101T000000Z-10", "20260102T000000Z"]


def _run(evidence):
    desired, hosts, plan = evidence
    return verify_flow.VerifyRun(
        desired, "/x/inventory.yaml", INVENTORY, hosts, plan, "ring", Selection(), TODAY, {}, []
    )


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=300, color_system=None)


def test_each_saved_run_prunes_to_keep_runs(evidence, tmp_path):
    runs = tmp_path / "runs"
    saved = []
    for second in range(4):
        target = runs / f"20260101T00000{second}Z"
        document = {"bundle": str(target)}
        saved.append(verify_flow._save_bundle(_run(evidence), target, document, keep_runs=2, err=_quiet()))
        assert document["bundle"] == str(target)
    assert saved == [runs / f"20260101T00000{s}Z" for s in range(4)]
    assert [p.name for p in run_dirs(runs)] == ["20260101T000002Z", "20260101T000003Z"]


def test_keep_runs_must_be_positive():
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", ".", "--keep-runs", "0"])
    assert outcome.exit_code == 2 and "--keep-runs" in outcome.output


Usage = namedtuple("Usage", "total used free")


def test_no_bundle_when_the_disk_is_full_and_a_warning_when_low(evidence, tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_module.shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 1000, 1000))
    assert not check_free_space(tmp_path, 5000).write
    err = Console(file=io.StringIO(), width=300, color_system=None)
    document = {"bundle": "x"}
    assert (
        verify_flow._save_bundle(
            _run(evidence), tmp_path / "runs" / "20260101T000000Z", document, keep_runs=20, err=err
        )
        is None
    )
    assert document["bundle"] is None and "the evidence bundle was not saved" in err.file.getvalue()
    assert not (tmp_path / "runs" / "20260101T000000Z").exists()

    monkeypatch.setattr(
        bundle_module.shutil, "disk_usage", lambda path: Usage(10**12, 10**12 - 100 * 2**20, 100 * 2**20)
    )
    low = check_free_space(tmp_path, 5000)
    assert low.write and low.warning and "only 100 MiB free" in low.warning


def test_a_runs_folder_linked_to_a_bigger_disk_is_used(evidence, tmp_path):
    elsewhere = tmp_path / "big-disk"
    elsewhere.mkdir()
    (tmp_path / "runs").symlink_to(elsewhere)
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(_bundle(evidence), target, {})
    assert (elsewhere / target.name / "run.json").is_file()
    assert read_bundle(target).hosts["node1"].gather_stdout == "raw output of node1\n"


def test_no_two_hosts_can_name_the_same_host_file(saved):
    """``hosts/<node>.<file>``: node names may hold dots, so no file name may end in "." + another."""
    stems = bundle_module.HOST_FILES
    assert not [(a, b) for a in stems for b in stems if a != b and a.endswith("." + b)]
    # schema 3: one file per kind of transcript, and a host's own file only for its facts.json,
    # which no node name can make a transcript file's name (none ends in ".facts.json")
    streams = {f"{stem}.gz" for stem in bundle_module.STREAMS}
    assert not [stem for stem in bundle_module.STREAMS if stem.endswith(".facts.json")]
    written = {p.name for p in (saved / "hosts").iterdir()}
    assert streams & written and all(name in streams or name.endswith(".facts.json.gz") for name in written)
