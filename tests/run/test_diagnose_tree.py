"""diagnose reads trees as collect writes them and as users keep them, and refuses what is not a log."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "diagnose"))

from joblogs import GROUP, console_lines, cqe_line, init_lines, ranks, t, timeout_lines, write_job  # noqa: E402

from ascendprep.diagnose.analyse import diagnose  # noqa: E402
from ascendprep.diagnose.model import CONSOLE, KERNEL, PLOG  # noqa: E402
from ascendprep.facts.model import HostFacts, NpuFacts, TlsState  # noqa: E402
from ascendprep.run.diagnose import collected_state, read_trees, scan_tree  # noqa: E402
from ascendprep.verify.knowledge import knowledge  # noqa: E402

JOB = ranks(2, 4)


def test_a_link_out_of_the_tree_is_named_and_not_read_a_link_inside_is(tmp_path):
    outside = tmp_path / "secret.log"
    outside.write_text("[ERROR] HCCL(1,python):2025-10-24-11:00:00.000.000 cqe error status[12]\n")
    root = tmp_path / "logs"
    write_job(root, JOB, {r.rank: [] for r in JOB})
    (root / "node0" / "plog" / "plog-9_1.log").symlink_to(outside)
    (root / "node0" / "loop").symlink_to(root, target_is_directory=True)
    inside = root / "node1" / "plog" / "plog-10_1.log"
    inside.symlink_to(root / "node1" / "plog" / f"plog-{JOB[4].pid}_20251024111652406.log")
    tree = read_trees([root])
    reasons = {Path(s.path).name: s.reason for s in tree.skipped}
    assert "a link out of the tree" in reasons["plog-9_1.log"] and str(outside) in reasons["plog-9_1.log"]
    assert reasons["loop"] == "a link to a folder: not followed"
    assert any(p == inside for p, _ in tree.files)


def test_binary_compressed_and_unknown_files_are_skipped_with_the_reason(tmp_path):
    write_job(tmp_path, JOB, {r.rank: [] for r in JOB})
    (tmp_path / "node0" / "core.1234").write_bytes(b"\x7fELF\x00\x00\x00" + os.urandom(100))
    (tmp_path / "node0" / "plog-old.log.gz").write_bytes(b"\x1f\x8b\x08\x00rest")
    (tmp_path / "node0" / "README").write_text("my notes\n")
    tree = read_trees([tmp_path])
    reasons = {Path(s.path).name: s.reason for s in tree.skipped}
    assert reasons["core.1234"].startswith("binary")
    assert reasons["plog-old.log.gz"].startswith("compressed")
    assert reasons["README"].startswith("not a log")


def test_a_folder_of_one_nodes_logs_is_that_node_and_kinds_come_from_names_or_content(tmp_path):
    node = tmp_path / "worker-a"
    (node / "debug" / "plog").mkdir(parents=True)
    (node / "debug" / "plog" / "plog-5_1.log").write_text("\n".join(init_lines(JOB[0], 8)) + "\n")
    (node / "rank-0.txt").write_text("\n".join(console_lines(JOB[0], t(40, 1))) + "\n")
    (node / "messages").write_text("Oct 24 11:40:00 host kernel: [ 1.0] nothing\n")
    (node / "train.out").write_text("Traceback (most recent call last):\nRuntimeError: x\n")
    tree = read_trees([node])
    kinds = {Path(log.path).name: (log.node, log.kind) for _p, log in tree.files}
    assert kinds == {
        "plog-5_1.log": ("worker-a", PLOG),
        "rank-0.txt": ("worker-a", CONSOLE),
        "messages": ("worker-a", KERNEL),
        "train.out": ("worker-a", CONSOLE),
    }


def test_two_jobs_mixed_in_one_tree_are_told_apart_and_diagnosed_apart(tmp_path):
    other = "10.9.9.9%eth0_60000_0_1761200000000000"
    write_job(tmp_path, JOB, {r.rank: timeout_lines(r, 8, t(40, 30)) for r in JOB})
    # A second, healthy job on the same nodes: its own communicator, other pids.
    for r in JOB:
        path = tmp_path / r.node / "plog" / f"plog-{r.pid + 1000}_20251023000000000.log"
        lines = [line.replace(GROUP, other).replace(f"({r.pid},", f"({r.pid + 1000},") for line in init_lines(r, 8)]
        path.write_text("\n".join(lines) + "\n")
    tree = read_trees([tmp_path])
    events, _ = scan_tree(tree)
    jobs = diagnose(events, [log for _p, log in tree.files], knowledge())
    assert sorted(job.job.name for job in jobs) == sorted([GROUP, other])
    failed = next(job for job in jobs if job.job.name == GROUP)
    healthy = next(job for job in jobs if job.job.name == other)
    assert len(failed.job.processes) == 8 and len(healthy.job.processes) == 8
    assert failed.causes and not healthy.causes


def _bundle(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    nodes = {}
    for node in ("node0", "node1"):
        members = [r for r in JOB if r.node == node]
        base = root / "nodes" / node
        (base / "plog" / "run" / "plog").mkdir(parents=True)
        files = []
        for r in members:
            lines = init_lines(r, 8) + timeout_lines(r, 8, t(40, 30))
            if r.rank == 2:
                lines = init_lines(r, 8) + [cqe_line(r, JOB[5], t(40, 1))] + timeout_lines(r, 8, t(40, 30))
            rel = f"plog/run/plog/plog-{r.pid}_1.log"
            (base / rel).write_text("\n".join(lines) + "\n")
            files.append({"path": rel, "bytes": 1, "cut": r.rank == 2, "kind": "plog"})
        (base / "kernel.log").write_text("[ 1.0] boot\n")
        facts = HostFacts(
            npus={r.device: NpuFacts(devid=r.device, ip=r.device_ip, tls=TlsState(switch=1)) for r in members}
        )
        (base / "state.json").write_text(json.dumps(facts.to_dict()))
        nodes[node] = {"status": "ok", "error": None, "host": node, "files": files}
    nodes["node2"] = {"status": "failed", "error": "ssh: timed out", "host": "node2", "files": []}
    manifest = {"schema_version": 1, "kind": "ascendprep-collect", "created": "2025-10-24T12:00:00Z", "since": None,
                "log_dirs": [], "console_globs": [], "nodes": nodes}  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_a_collect_bundle_is_read_by_its_layout_with_cut_files_and_failed_nodes_named(tmp_path):
    root = _bundle(tmp_path)
    tree = read_trees([root])
    logs = {log.path.split("nodes/")[1]: log for _p, log in tree.files}
    assert logs["node0/plog/run/plog/plog-" + str(JOB[2].pid) + "_1.log"].cut is True
    assert logs["node0/kernel.log"].kind == KERNEL
    assert set(tree.states) == {"node0", "node1"}
    assert any("nodes/node2" == s.path and "ssh: timed out" in s.reason for s in tree.skipped)
    tls, ips, _facts = collected_state(tree)
    assert tls[("node1", 1)] == 1 and ips[JOB[5].device_ip] == ("node1", 1)
    events, _ = scan_tree(tree)
    (job,) = diagnose(events, [log for _p, log in tree.files], knowledge(), ips, tls)
    assert [(c.node, c.rank) for c in job.verdict.culprits] == [("node0", 2)]


def test_a_state_json_that_is_not_facts_is_named_not_fatal(tmp_path):
    root = _bundle(tmp_path)
    (root / "nodes" / "node1" / "state.json").write_text('{"schema_version": 99}')
    tree = read_trees([root])
    collected_state(tree)
    assert any(s.path.endswith("node1/state.json") and "NPU state cannot be read" in s.reason for s in tree.skipped)


def test_reading_in_several_processes_gives_the_same_events_as_in_one(tmp_path, monkeypatch):
    plog = {r.rank: timeout_lines(r, 8, t(40, 30)) for r in JOB}
    plog[2] = [cqe_line(JOB[2], JOB[5], t(40, 1))] + plog[2]
    write_job(tmp_path, JOB, plog, {r.rank: console_lines(r, t(40, 31)) for r in JOB})
    alone = scan_tree(read_trees([tmp_path]), workers=1)
    monkeypatch.setattr("ascendprep.run.diagnose.DIAGNOSE_PARALLEL_MIN_BYTES", 0)
    shared = scan_tree(read_trees([tmp_path]), workers=3)
    assert [(e.file, e.line, e.key) for e in shared[0]] == [(e.file, e.line, e.key) for e in alone[0]]
    assert shared[1] == alone[1]


def test_a_fifo_in_the_tree_is_skipped_never_waited_on(tmp_path):
    write_job(tmp_path, JOB, {r.rank: [] for r in JOB})
    os.mkfifo(tmp_path / "node0" / "plog" / "plog-77_1.log")
    tree = read_trees([tmp_path])
    assert any(s.path.endswith("plog-77_1.log") and s.reason == "not a regular file" for s in tree.skipped)


def test_a_faults_count_is_every_line_that_matched_not_only_the_evidence_kept(tmp_path):
    plog = {r.rank: timeout_lines(r, 8, t(40, 30)) for r in JOB}
    plog[2] = [cqe_line(JOB[2], JOB[5], t(40, 1))] * 500 + plog[2]
    write_job(tmp_path, JOB, plog)
    tree = read_trees([tmp_path])
    events, stats = scan_tree(tree)
    (job,) = diagnose(events, [log for _p, log in tree.files], knowledge(), stats=stats)
    cqe = next(c for c in job.causes if c.key == "hccl.cqe_error")
    assert cqe.count == 500 and len(cqe.events) == 20
