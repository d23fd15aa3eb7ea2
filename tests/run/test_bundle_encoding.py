"""The bundle's JSON files are encoded once, compact and a slice at a time (bench/bench_scale.py:
at 4,096 hosts the report alone is ~350 MB of text), and still read back as written."""

from __future__ import annotations

import gzip
import json
from datetime import date

from ascendprep.base.findings import Severity
from ascendprep.facts.model import HostFacts
from ascendprep.report import jsondoc
from ascendprep.run.bundle import Bundle, bundle_size, new_bundle_dir, read_bundle, write_bundle
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.model import CheckResult, Status


def _bundle() -> Bundle:
    hosts = {
        f"node{i}": HostEvidence(
            f"node{i}", f"10.0.0.{i}", HostFacts(hostname=f"node{i}"), gather_stdout="@@ascendprep gather v1 x\n" * 50
        )
        for i in range(1, 4)
    }
    return Bundle("/x/inventory.yaml", "name: x\n", hosts, None, "ring", {}, date(2026, 11, 25))


def _result(node: str, status: Status) -> CheckResult:
    return CheckResult(check="npu.ip", status=status, severity=Severity.ERROR, message="m", node=node)


def test_results_and_facts_are_written_compact_and_read_back(tmp_path) -> None:
    bundle = _bundle()
    report = {
        "checks": [
            {"check": "npu.ip", "node": f"node{i % 3 + 1}", "evidence": {"i": i}}
            for i in range(3 * jsondoc.SLICE_ITEMS)
        ],
        "exit_code": 0,
    }
    target = write_bundle(bundle, new_bundle_dir(tmp_path / "runs"), report, results=[_result("node2", Status.FAILED)])
    text = gzip.decompress((target / "results.json.gz").read_bytes()).decode()
    assert text == json.dumps(report, separators=(",", ":")) + "\n"  # compact, one line
    facts = gzip.decompress((target / "hosts" / "node2.facts.json.gz").read_bytes()).decode()
    assert json.loads(facts) == HostFacts(hostname="node2").to_dict() and "\n " not in facts


def test_bundle_size_covers_what_is_written_and_nothing_is_encoded_twice(tmp_path, monkeypatch) -> None:
    encoded = []
    real = jsondoc.json_bytes

    def counting(document, **kwargs):
        encoded.append(id(document))
        return real(document, **kwargs)

    monkeypatch.setattr(jsondoc, "json_bytes", counting)
    dumps = []
    real_facts = HostFacts.to_json
    monkeypatch.setattr(HostFacts, "to_json", lambda facts: dumps.append(1) or real_facts(facts))
    bundle = _bundle()
    report = {"checks": [{"n": i} for i in range(2000)]}
    results = [_result(f"node{i}", Status.FAILED) for i in range(1, 4)]
    size = bundle_size(bundle, report, results)
    target = write_bundle(bundle, new_bundle_dir(tmp_path / "runs"), report, results=results)
    written = sum(len(gzip.decompress(p.read_bytes())) for p in target.rglob("*.gz")) + len("name: x\n")
    assert size >= written
    assert encoded == [id(report)]  # the report: once, for the size and the file
    assert len(dumps) == 3  # each host's facts once


def test_facts_json_is_written_only_for_hosts_with_a_failed_check_or_an_error(tmp_path) -> None:
    bundle = _bundle()
    bundle.hosts["node3"] = HostEvidence(
        "node3", "10.0.0.3", HostFacts(hostname="node3"), gather_stdout="x\n", ping_error="the ping script failed"
    )
    bundle.hosts["node4"] = HostEvidence("node4", "10.0.0.4", None, error="connection refused", error_kind="connect")
    results = [
        _result("node1", Status.PASSED),
        _result("node1", Status.SKIPPED),
        _result("node2", Status.PASSED),
        _result("node2", Status.FAILED),
    ]
    target = write_bundle(bundle, new_bundle_dir(tmp_path / "runs"), {}, results=results)
    assert sorted(p.name for p in (target / "hosts").glob("*.facts.json.gz")) == [
        "node2.facts.json.gz",
        "node3.facts.json.gz",
    ]
    assert read_bundle(target).hosts["node1"].gather_stdout  # the transcript of every host that answered stays


def test_facts_to_json_is_to_dict_for_a_whole_recorded_node() -> None:
    from pathlib import Path

    from ascendprep.facts.gather import parse_gather_output

    recorded = Path(__file__).resolve().parents[2] / "bench" / "scale_data" / "a2-converged.gather.txt"
    facts = parse_gather_output(recorded.read_text())
    assert facts.npus and facts.to_dict()["npus"]  # a full 8-NPU node, optics and counters included
    assert json.loads(facts.to_json()) == facts.to_dict()


def _host(i: int, size: int = 1000) -> HostEvidence:
    return HostEvidence(f"node{i}", f"10.0.0.{i}", HostFacts(hostname=f"node{i}"), gather_stdout="x" * size)


def test_host_files_are_0600_and_chmod_only_when_the_umask_narrowed_them(tmp_path, monkeypatch) -> None:
    import os
    import stat

    from ascendprep.run import bundle as bundle_module
    from ascendprep.run.bundle import BundleWriter

    chmods = []
    real_fchmod = os.fchmod
    monkeypatch.setattr(bundle_module.os, "fchmod", lambda fd, mode: chmods.append(mode) or real_fchmod(fd, mode))
    for umask, expected_chmods in ((0o022, 0), (0o277, 1)):  # 5 hosts' transcripts: one file, hosts/gather.out.gz
        old = os.umask(umask)
        try:
            writer = BundleWriter(new_bundle_dir(tmp_path / f"runs{umask:o}"))
            writer.open()
            for i in range(1, 6):
                writer.keep(_host(i))
        finally:
            os.umask(old)
        modes = {stat.S_IMODE(p.stat().st_mode) for p in (writer.partial / "hosts").iterdir()}
        file_chmods = [mode for mode in chmods if mode != 0o700]  # the folders' modes are set on their descriptors too
        assert modes == {0o600} and len(file_chmods) == expected_chmods, (umask, modes, chmods)
        chmods.clear()


def test_free_space_is_read_once_per_room_proven_and_never_more_is_written(tmp_path, monkeypatch) -> None:
    from collections import namedtuple

    from ascendprep.run import bundle as bundle_module
    from ascendprep.run.bundle import BundleWriter

    usage = namedtuple("usage", "total used free")
    free = [10**12]
    reads = []

    def disk_usage(path):
        reads.append(free[0])
        return usage(10**13, 10**13 - free[0], free[0])

    monkeypatch.setattr(bundle_module.shutil, "disk_usage", disk_usage)
    writer = BundleWriter(new_bundle_dir(tmp_path / "runs"))
    writer.open()
    for i in range(1, 51):
        writer.keep(_host(i))
    assert len(reads) == 1 and writer.problem is None  # a big disk: one read for 50 hosts, not 50

    writer = BundleWriter(new_bundle_dir(tmp_path / "runs2"))
    writer.open()
    free[0] = 2500  # room for two hosts of 1,000 bytes, then someone else fills the disk
    reads.clear()
    writer.keep(_host(1))
    free[0] = 500
    writer.keep(_host(2))
    assert len(reads) == 1 and writer.problem is None
    writer.keep(_host(3))  # 1,000 bytes more than the first reading proved: read again, refused
    assert len(reads) == 2 and writer.problem is not None and "not saved" in writer.problem
    assert not writer.partial.exists()
