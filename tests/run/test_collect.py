"""collect: the node program, the records it prints, what the controller accepts, and the bundle.

The "nodes" are this machine (as in test_verify_local.py): the fake NPU tools answer the gather,
and a log tree under the test's folder plays CANN's ``~/ascend/log``. The hostile cases feed the
controller records no honest node program prints.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List

import pytest
import yaml
from click.testing import CliRunner

from ascendprep.base.limits import COLLECT_NODE_MAX_BYTES, HOST_OUTPUT_CAP
from ascendprep.commands.collect import collect_command
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.errors import UnreachableError
from ascendprep.remote.local import LocalTransport
from ascendprep.run.collect import (
    Caps,
    CollectInputError,
    CollectRequest,
    check_node_paths,
    collect_config,
    collect_hosts,
    make_out_dir,
    parse_records,
    parse_since,
    stored_name,
)
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses

FAKE_TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "fake_tools"
NODE_PROGRAM = Path(__file__).resolve().parents[2] / "ascendprep" / "run" / "collect_node.py"
NONCE = "0123456789abcdef0123456789abcdef"
MARK = f"@@collect-{NONCE}"
#: A plog line in CANN's format (CANN Log Reference, "Log Format"; the line MindCluster's
#: knowledge base matches for AISW_CANN_HCCL_029, excessive RDMA retransmissions).
CQE_LINE = (
    "[ERROR] HCCP(1234,python):2026-11-28-10:00:00.123.456 [ra_hdc_async.c:123]tid:1234,"
    "ra_get_cqe_err_info : [Heartbeat]cqe err status[12], ip:[10.20.0.2]\n"
)


def b64(data) -> str:
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def run_node_program(config: Dict, env: Dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", NODE_PROGRAM.read_text(), json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )
    return done.stdout


@pytest.fixture
def log_tree(tmp_path) -> Path:
    """A CANN log root: two plogs (one big), a device log, a link out of the tree, other files."""
    root = tmp_path / "ascend" / "log"
    (root / "run" / "plog").mkdir(parents=True)
    (root / "debug" / "plog").mkdir(parents=True)
    (root / "run" / "device-3").mkdir(parents=True)
    (root / "run" / "plog" / "plog-1234_20261128100000000.log").write_text(CQE_LINE)
    big = root / "debug" / "plog" / "plog-1234_20261128095900000.log"
    big.write_bytes(b"old line\n" * 200_000 + b"THE LAST LINE\n")
    os.utime(big, (1_700_000_000, 1_700_000_000))
    (root / "run" / "device-3" / "device-1234_20261128100000000.log").write_text("[ERROR] HCCL(1234,python):x\n")
    (root / "run" / "not-a-log.txt").write_text("ignored")
    secret = tmp_path / "secret"
    secret.write_text("not to be fetched")
    (root / "run" / "plog" / "plog-9_1.log").symlink_to(secret)
    return root


def config(**changes) -> Dict:
    base = collect_config(NONCE, None, [], [], Caps(file=64 * 1024, node=1024 * 1024))
    base.update(changes)
    return base


# -- the node program, run here ------------------------------------------------------------------


def test_node_program_sends_plogs_device_logs_and_consoles_newest_first_and_never_a_link(log_tree, tmp_path):
    console = tmp_path / "job"
    console.mkdir()
    (console / "rank-0.txt").write_text("[ERROR] 2026-11-28-10:00:00 (PID:1234, Device:3, RankID:3) ERR02200\n")
    out = run_node_program(config(log_dirs=[str(log_tree)], console_globs=[str(console / "rank-*.txt")]))
    logs = parse_records(out, NONCE, Caps(file=64 * 1024, node=1024 * 1024))
    assert logs.complete, logs.problems
    paths = [f.path for f in logs.files]
    assert paths[0] == "kernel.log" or "no kernel messages" in " ".join(logs.problems)
    files = {f.path: f for f in logs.files}
    assert files["plog/run/plog/plog-1234_20261128100000000.log"].data.decode() == CQE_LINE
    assert "device/run/device-3/device-1234_20261128100000000.log" in files
    assert files["console/rank-0.txt"].data.startswith(b"[ERROR]")
    assert not any("plog-9_1" in p or "not-a-log" in p for p in paths)
    assert all(b"not to be fetched" not in f.data for f in logs.files)
    big = files["plog/debug/plog/plog-1234_20261128095900000.log"]
    assert big.cut and len(big.data) == 64 * 1024 and big.data.endswith(b"THE LAST LINE\n")
    assert paths.index("plog/debug/plog/plog-1234_20261128095900000.log") == len(paths) - 1  # the oldest last


def test_node_program_keeps_to_the_node_cap_newest_first_and_counts_the_rest(log_tree):
    out = run_node_program(config(log_dirs=[str(log_tree)], file_cap=10, node_cap=25))
    logs = parse_records(out, NONCE, Caps(file=10, node=25))
    assert logs.complete
    assert sum(len(f.data) for f in logs.files) <= 25
    assert logs.not_fetched >= 1
    assert all(len(f.data) <= 10 for f in logs.files)


def test_node_program_reads_ascend_process_log_path_and_since(log_tree):
    since = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
    out = run_node_program(config(since=since), env={"ASCEND_PROCESS_LOG_PATH": str(log_tree)})
    paths = [f.path for f in parse_records(out, NONCE).files]
    assert "plog/run/plog/plog-1234_20261128100000000.log" in paths
    assert "plog/debug/plog/plog-1234_20261128095900000.log" not in paths  # written in 2023


def test_node_program_names_a_missing_log_folder_and_an_empty_glob(tmp_path):
    out = run_node_program(config(log_dirs=[str(tmp_path / "none")], console_globs=[str(tmp_path / "x-*.log")]))
    logs = parse_records(out, NONCE)
    assert logs.complete
    assert any("no log folder" in p for p in logs.problems)
    assert any("no file matches --console" in p for p in logs.problems)


# -- hostile records -----------------------------------------------------------------------------


def record(kind: str, name: bytes, data: bytes, size: int | None = None, sent: int | None = None) -> str:
    size = len(data) if size is None else size
    sent = len(data) if sent is None else sent
    return f"{MARK} file {kind} {size} {sent} 0 1700000000.000 {b64(name)}\n{b64(data)}\n"


@pytest.mark.parametrize(
    "kind,name,why",
    [
        ("plog", b"/etc/shadow", "absolute"),
        ("plog", b"run/../../../etc/cron.d/x", "'..'"),
        ("device", b"run//x.log", "empty"),
        ("plog", b"run/plog/a\x1b]0;x\x07.log", "control"),
        ("plog", b"run/plog/\xff\xfe.log", "not UTF-8"),
        ("plog", b"/".join([b"d"] * 40), "parts"),
        ("plog", b"run/" + b"x" * 300, "bytes"),
        ("console", b"/data/..", "'..'"),
        ("secrets", b"x", "unknown kind"),
    ],
)
def test_a_hostile_name_or_kind_is_refused_and_named(kind, name, why):
    logs = parse_records(record(kind, name, b"data") + f"{MARK} end\n", NONCE)
    assert logs.files == []
    assert len(logs.problems) == 1 and why in logs.problems[0]


def test_sizes_are_checked_against_the_caps_and_against_what_came():
    caps = Caps(file=100, node=150)
    text = (
        record("plog", b"run/plog/a.log", b"a" * 100)
        + record("plog", b"run/plog/b.log", b"b" * 101)  # over the file cap
        + record("plog", b"run/plog/c.log", b"c" * 60)  # past the node cap
        + record("plog", b"run/plog/d.log", b"d" * 10, sent=20)  # declared more than it sent
        + record("plog", b"run/plog/e.log", b"e" * 10, size=5)  # a size below what it sent
        + f"{MARK} file plog 10 10 0 1.0 {b64('run/plog/f.log')}\n%%%not base64%%%\n"
        + f"{MARK} file plog 99999999999999999999999 1 0 1.0 {b64('x')}\nYQ==\n"
        + record("plog", b"run/plog/a.log", b"again")  # the same path twice
        + record("plog", b"run/plog/g.log", b"g" * 40)
        + f"{MARK} end\n"
    )
    logs = parse_records(text, NONCE, caps)
    assert [f.path for f in logs.files] == ["plog/run/plog/a.log", "plog/run/plog/g.log"]
    assert len(logs.problems) == 7, logs.problems


def test_a_cut_file_is_the_one_whose_size_is_more_than_it_sent_and_forged_marks_are_strays():
    text = record("plog", b"run/plog/a.log", b"tail", size=1000) + "@@collect-ffff file plog 1 1 0 1 YQ==\nYQ==\n"
    logs = parse_records(text, NONCE)
    assert logs.files[0].cut and logs.files[0].size == 1000
    assert not logs.complete
    assert any("not records" in p for p in logs.problems)


def test_console_logs_of_the_same_name_are_kept_apart_and_the_kernel_log_has_one_name():
    text = (
        record("console", b"/a/rank-0.txt", b"1")
        + record("console", b"/b/rank-0.txt", b"2")
        + record("kernel", b"../../whatever", b"k")
    )
    assert [f.path for f in parse_records(text, NONCE).files] == [
        "console/rank-0.txt",
        "console/rank-0.txt.2",
        "kernel.log",
    ]
    assert stored_name("console", b"/data/job/worker-3.log") == "console/worker-3.log"


def test_the_node_cap_base64_and_the_state_fit_in_one_host_output():
    assert COLLECT_NODE_MAX_BYTES * 4 // 3 + 2 * 1024 * 1024 <= HOST_OUTPUT_CAP


# -- options ---------------------------------------------------------------------------------------


def test_since_takes_iso_times_and_ages_and_refuses_the_rest():
    now = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
    assert parse_since("2h", now) == datetime(2026, 11, 28, 10, 0, tzinfo=timezone.utc)
    assert parse_since("2026-11-28T09:30").tzinfo is not None
    with pytest.raises(CollectInputError, match="--since"):
        parse_since("yesterday")


@pytest.mark.parametrize("value", ["relative/path", "/a\nb", "/x" * 600])
def test_node_paths_must_be_absolute_and_plain(value):
    with pytest.raises(CollectInputError):
        check_node_paths([value], "--log-dir")


# -- the fan-out and the bundle ----------------------------------------------------------------


@pytest.fixture
def fake_cluster(tmp_path, monkeypatch, log_tree) -> Path:
    """Three nodes that are this machine (fake NPU tools); returns the inventory file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("hccn_tool", "npu-smi"):
        shutil.copyfile(FAKE_TOOLS / tool, bin_dir / tool)
        (bin_dir / tool).chmod(stat.S_IRWXU)
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FIXTURES", str(FAKE_TOOLS.parent))
    monkeypatch.setenv("FAKE_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(log_tree))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "inventory.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "product": "atlas-a2",
                "npus_per_node": 2,
                "device_network": {"subnet": "10.20.0.0/24", "tls": False},
                "software": {"python_path": sys.executable},
                "nodes": [{"name": "n[1-3]", "host": "10.0.0.[11-13]"}],
            }
        )
    )
    return path


def test_an_unreachable_node_is_named_and_the_others_are_collected(fake_cluster, tmp_path):
    inventory = inventory_from_text(fake_cluster.read_text(), file=str(fake_cluster))

    def connect(access):
        if access.name == "n2":
            raise UnreachableError("n2", "n2: no route to host")
        return LocalTransport(access.name)

    out = tmp_path / "bundle"
    make_out_dir(out)
    request = CollectRequest(None, (), (), out, Caps(file=64 * 1024, node=1024 * 1024))
    with Session(host_accesses(inventory), 3, transport_factory=connect) as session:
        nodes = collect_hosts(session, inventory, request)
    assert nodes["n2"]["status"] == "failed" and "no route to host" in nodes["n2"]["error"]
    assert nodes["n2"]["files"] == []
    for name in ("n1", "n3"):
        assert nodes[name]["status"] == "ok", nodes[name]
        kinds = {f["kind"] for f in nodes[name]["files"]}
        assert {"state", "plog", "device"} <= kinds
        state = json.loads((out / "nodes" / name / "state.json").read_text())
        assert state["schema_version"] and state["npus"]
        plog = out / "nodes" / name / "plog" / "run" / "plog" / "plog-1234_20261128100000000.log"
        assert plog.read_text() == CQE_LINE
        assert stat.S_IMODE(plog.stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert not (out / "nodes" / "n2").exists() or not any((out / "nodes" / "n2").iterdir())


def _collect(*args: str) -> "tuple[int, str]":
    outcome = CliRunner().invoke(collect_command, list(args))
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, outcome.output


def test_collect_local_writes_the_manifest_for_this_node_only(fake_cluster, tmp_path):
    code, output = _collect(str(fake_cluster), "--local", "--node", "n1", "--out", str(tmp_path / "run"))
    assert code == 0, output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["kind"] == "ascendprep-collect"
    assert list(manifest["nodes"]) == ["n1"]
    files: List[Dict] = manifest["nodes"]["n1"]["files"]
    cut = [f for f in files if f["path"] == "plog/debug/plog/plog-1234_20261128095900000.log"]
    assert cut and cut[0]["cut"] is False  # 1.8 MB: under the 2 MiB per-file cap
    assert {f["kind"] for f in files} >= {"state", "plog", "device"}
    assert "n1: " in output and "bundle:" in output


def test_collect_refuses_an_existing_folder_and_remote_options_with_local(fake_cluster, tmp_path):
    (tmp_path / "run").mkdir()
    code, output = _collect(str(fake_cluster), "--local", "--node", "n1", "--out", str(tmp_path / "run"))
    assert code == 2 and "cannot write the bundle" in output
    code, output = _collect(str(fake_cluster), "--local", "--hosts", "n1")
    assert code == 2 and "--hosts" in output
    code, output = _collect(str(fake_cluster), "--log-dir", "relative")
    assert code == 2 and "absolute" in output


# -- a hostile node, end to end through the fan-out ---------------------------------------------


class ScriptedNode:
    """A transport whose node answers the collect script with ``answer(nonce)`` (what a
    compromised or broken node could print)."""

    exec_count = 0

    def __init__(self, name: str, answer, timed_out: bool = False) -> None:
        self.name = name
        self.answer = answer
        self.timed_out = timed_out

    def run_script(self, script: str, timeout=None):
        from ascendprep.remote.result import ExecResult

        nonce = re.search(r"@@collect-([0-9a-f]{32})", script).group(1)
        return ExecResult(124 if self.timed_out else 0, self.answer(nonce), "", 1.0, self.timed_out)

    def close(self) -> None:
        pass


def hostile_answer(nonce: str) -> str:
    mark = f"@@collect-{nonce}"

    def rec(kind, name, data):
        return f"{mark} file {kind} {len(data)} {len(data)} 0 1.0 {b64(name)}\n{b64(data)}\n"

    return (
        f"\n{mark} begin\n"
        + rec("plog", b"../../../../escaped.txt", b"x")
        + rec("plog", b"/tmp/escaped-abs.txt", b"x")
        + rec("plog", b"run/plog/a", b"a file")
        + rec("plog", b"run/plog/a/b.log", b"under a file")  # a folder where a file lies
        + rec("console", b"/x/../../rank-0.txt", b"console")
        + rec("plog", b"run/plog/ok.log", b"fine")
        + f"{mark} end\n"
    )


def test_a_hostile_node_writes_nothing_outside_its_folder_and_each_refusal_is_named(fake_cluster, tmp_path):
    inventory = inventory_from_text(fake_cluster.read_text(), file=str(fake_cluster))
    out = tmp_path / "deep" / "bundle"
    make_out_dir(out)
    request = CollectRequest(None, (), (), out)
    with Session(
        host_accesses(inventory), 2, transport_factory=lambda access: ScriptedNode(access.name, hostile_answer)
    ) as session:
        nodes = collect_hosts(session, inventory, request)
    entry = nodes["n1"]
    assert entry["status"] == "ok"
    assert sorted(f["path"] for f in entry["files"]) == [
        "console/rank-0.txt",
        "plog/run/plog/a",
        "plog/run/plog/ok.log",
    ]
    assert len(entry["problems"]) == 3, entry["problems"]
    assert any("not stored" in p for p in entry["problems"])
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert written == {
        f"nodes/{n}/{f}"
        for n in ("n1", "n2", "n3")
        for f in ("console/rank-0.txt", "plog/run/plog/a", "plog/run/plog/ok.log")
    }
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped-abs.txt").exists()


def test_a_node_that_times_out_is_failed_and_keeps_what_came(fake_cluster, tmp_path):
    inventory = inventory_from_text(fake_cluster.read_text(), file=str(fake_cluster))
    out = tmp_path / "bundle"
    make_out_dir(out)

    def partial(nonce: str) -> str:
        return (
            f"\n@@collect-{nonce} begin\n@@collect-{nonce} file plog 4 4 0 1.0 {b64('run/plog/p.log')}\n{b64('tail')}\n"
        )

    with Session(
        host_accesses(inventory), 2, transport_factory=lambda access: ScriptedNode(access.name, partial, timed_out=True)
    ) as session:
        nodes = collect_hosts(session, inventory, CollectRequest(None, (), (), out))
    assert nodes["n1"]["status"] == "failed" and "timed out" in nodes["n1"]["error"]
    assert [f["path"] for f in nodes["n1"]["files"]] == ["plog/run/plog/p.log"]
    assert "state" not in {f["kind"] for f in nodes["n1"]["files"]}  # no gather transcript came


def test_a_console_glob_that_matches_too_much_is_cut_at_the_entry_budget(tmp_path):
    for index in range(30):
        (tmp_path / f"rank-{index}.txt").write_text(str(index))
    out = run_node_program(
        config(log_dirs=[str(tmp_path / "none")], console_globs=[str(tmp_path / "rank-*.txt")], max_entries=10)
    )
    logs = parse_records(out, NONCE)
    assert logs.complete
    assert len([f for f in logs.files if f.kind == "console"]) == 10
    assert any("more than 10 entries" in p for p in logs.problems)


def test_a_node_whose_logs_do_not_fit_on_the_disk_is_failed_and_the_bundle_not_filled(
    fake_cluster, tmp_path, monkeypatch
):
    import shutil as shutil_module
    from collections import namedtuple

    inventory = inventory_from_text(fake_cluster.read_text(), file=str(fake_cluster))
    out = tmp_path / "bundle"
    make_out_dir(out)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil_module, "disk_usage", lambda path: usage(10**9, 10**9, 10))
    with Session(
        host_accesses(inventory), 1, transport_factory=lambda access: ScriptedNode(access.name, hostile_answer)
    ) as session:
        nodes = collect_hosts(session, inventory, CollectRequest(None, (), (), out))
    assert all(entry["status"] == "failed" and "not stored" in entry["error"] for entry in nodes.values())
    assert not any(p.is_file() for p in out.rglob("*"))


def test_collect_json_prints_the_manifest_with_its_schema_version(fake_cluster, tmp_path):
    outcome = CliRunner().invoke(
        collect_command,
        [str(fake_cluster), "--local", "--node", "n2", "--out", str(tmp_path / "r"), "--format", "json"],
    )
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    assert document["schema_version"] == 1 and document["bundle"] == str(tmp_path / "r")
    assert document["nodes"]["n2"]["status"] == "ok"
    assert document["nodes"] == json.loads((tmp_path / "r" / "manifest.json").read_text())["nodes"]
