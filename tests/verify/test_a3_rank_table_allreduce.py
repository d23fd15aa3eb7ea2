"""The all-reduce proves each rank found itself in the rank table it was given (issue 21).

torch_npu builds HCCL's communicator from ``RANK_TABLE_FILE`` with rank = torch's global rank, and
drops a table it cannot use with nothing but an INFO line (docs/a3-superpod.md §4). So every
rank checks the table in the worker, and the ``rank_table`` gate names the ranks that did not
find themselves: unit cases for the check and the gate, then the worker for real under torchrun
(two gloo ranks on this machine) with a good table and with one whose ranks are out of order.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ascendprep.report.allreduce import footer_lines
from ascendprep.verify.allreduce import worker
from ascendprep.verify.allreduce.gates import RANK_TABLE, rank_table_gate
from ascendprep.verify.allreduce.records import RankTableCheck
from ascendprep.verify.allreduce.results import build_verdict, parse_worker_output

WORKER = worker.__file__
NODE = "node1"
ADDRESS = "10.0.0.11"


def a3_table(servers: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A 1.2 table shaped like the doc's (§1): ``servers`` = [{server_id, devices: [(devid, sdid)]}]."""
    rank = 0
    server_list = []
    for server in servers:
        devices = []
        for devid, sdid in server["devices"]:
            devices.append(
                {
                    "device_id": str(devid),
                    "super_device_id": str(sdid),
                    "device_ip": f"10.20.{devid % 2}.{devid}",
                    "rank_id": str(rank),
                }
            )
            rank += 1
        server_list.append({"server_id": server["server_id"], "host_ip": server["server_id"], "device": devices})
    return {
        "status": "completed",
        "version": "1.2",
        "server_count": str(len(servers)),
        "server_list": server_list,
        "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": s["server_id"]} for s in servers]}],
    }


def sdid_of(devid: int, server_index: int = 1) -> int:
    npu, die = divmod(devid, 2)
    return server_index << 22 | die << 18 | devid


def write(tmp_path: Path, doc: Any, name: str = "rank_table.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def check(
    path: Path,
    rank: int,
    local_rank: int,
    environ: Dict[str, str] | None = None,
    sdid=lambda devid: (sdid_of(devid), None),
):
    env = {"RANK_TABLE_FILE": str(path), **(environ or {})}
    return worker.check_rank_table(env, rank, local_rank, [NODE, ADDRESS], read_sdid=sdid)


TWO_SERVERS = a3_table(
    [
        {"server_id": ADDRESS, "devices": [(d, sdid_of(d)) for d in range(4)]},
        {"server_id": "10.0.0.12", "devices": [(d, sdid_of(d, 2)) for d in range(4)]},
    ]
)


# --- the worker's check ---------------------------------------------------------------------------


def test_no_rank_table_file_means_no_check():
    assert worker.check_rank_table({}, 0, 0, [NODE]) is None


def test_each_rank_of_a_good_table_finds_itself(tmp_path):
    path = write(tmp_path, TWO_SERVERS)
    for local in range(4):
        result = check(path, local, local)
        assert result["ok"], result["reason"]
        assert result["super_device_id"] == str(sdid_of(local)) and result["sdid"] == sdid_of(local)


def test_ranks_out_of_order_on_a_server_are_named_with_both_devices(tmp_path):
    table = a3_table([{"server_id": ADDRESS, "devices": [(1, sdid_of(1)), (0, sdid_of(0))]}])
    result = check(write(tmp_path, table), 0, 0)
    assert not result["ok"]
    assert "rank_id 0 is device_id 1" in result["reason"] and "runs on device 0" in result["reason"]


def test_servers_out_of_node_rank_order_are_named(tmp_path):
    swapped = copy.deepcopy(TWO_SERVERS)
    swapped["server_list"].reverse()
    # the device numbers still fit (local rank 0 is device 0 on every server): only the server tells
    for entry in swapped["server_list"]:
        for local, device in enumerate(entry["device"]):
            device["rank_id"] = str(local + (0 if entry is swapped["server_list"][0] else 4))
    result = check(write(tmp_path, swapped), 0, 0)
    assert not result["ok"] and "is on server ['10.0.0.12']" in result["reason"]


def test_an_unreadable_table_is_named(tmp_path):
    result = check(tmp_path / "missing.json", 0, 0)
    assert not result["ok"] and "cannot be read" in result["reason"] and "drops it silently" in result["reason"]
    result = check(write(tmp_path, "{not json"), 0, 0)
    assert not result["ok"] and "is not JSON" in result["reason"]
    result = check(write(tmp_path, {"version": "1.2"}), 0, 0)
    assert not result["ok"] and "has no server_list" in result["reason"]


def test_a_rank_missing_or_twice_is_named(tmp_path):
    assert "has no device with rank_id 9" in check(write(tmp_path, TWO_SERVERS), 9, 1)["reason"]
    twice = a3_table([{"server_id": ADDRESS, "devices": [(0, sdid_of(0)), (1, sdid_of(1))]}])
    twice["server_list"][0]["device"][1]["rank_id"] = "0"
    assert "has 2 devices with rank_id 0" in check(write(tmp_path, twice), 0, 0)["reason"]


def test_visible_devices_map_the_local_rank_to_the_physical_device(tmp_path):
    table = a3_table([{"server_id": ADDRESS, "devices": [(2, sdid_of(2)), (3, sdid_of(3))]}])
    path = write(tmp_path, table)
    assert check(path, 0, 0, {"ASCEND_RT_VISIBLE_DEVICES": "2,3"})["ok"]
    assert not check(path, 0, 0)["ok"]


def test_a_super_device_id_unlike_the_dies_sdid_is_named(tmp_path):
    path = write(tmp_path, TWO_SERVERS)
    result = check(path, 1, 1, sdid=lambda devid: (sdid_of(devid) + 7, None))
    assert not result["ok"]
    assert f"super_device_id {sdid_of(1)}" in result["reason"] and f"SDID {sdid_of(1) + 7}" in result["reason"]


def test_an_sdid_that_cannot_be_read_is_a_warning_not_a_pass_in_silence(tmp_path):
    result = check(write(tmp_path, TWO_SERVERS), 0, 0, sdid=lambda devid: (None, "npu-smi: not found"))
    assert result["ok"] and "not compared" in result["warning"] and "npu-smi: not found" in result["warning"]


def test_the_sdid_is_read_from_spod_info(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "npu-smi"
    tool.parent.mkdir()
    # the real layout: key padded to 31 characters, tab-indented (docs/a3-superpod.md §2)
    tool.write_text(
        '#!/bin/sh\n[ "$4 $5 $6 $7" = "-i 1 -c 1" ] || exit 3\n'
        'printf "\\t%-31s: %s\\n" "SDID" 167837697 "Super Pod Size" 384 "Super Pod ID" 0 "Server Index" 40\n'
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    assert worker.read_die_sdid(3) == (167837697, None)
    value, why = worker.read_die_sdid(2)
    assert value is None and "exited 3" in why


# --- the gate -------------------------------------------------------------------------------------


def test_gate_passes_when_no_rank_uses_a_table():
    gate = rank_table_gate("gloo", [(0, NODE, None), (1, NODE, None)])
    assert gate.ok and gate.figure == "not in use"


def test_gate_names_the_ranks_and_the_dropped_table():
    good = RankTableCheck("/etc/hccl.json", True)
    bad = RankTableCheck("/etc/hccl.json", False, "rank_id 1 is device_id 0 ...")
    gate = rank_table_gate("hccl", [(0, NODE, good), (1, NODE, bad), (2, "node2", None)], ["node1 torchrun log line 7"])
    assert not gate.ok and gate.figure == "1/3 ranks found in /etc/hccl.json"
    assert any("ranks 2 had no RANK_TABLE_FILE" in r for r in gate.reasons)
    assert "rank 1 (node1): rank_id 1 is device_id 0 ..." in gate.reasons
    assert any("switch to original interface' at node1 torchrun log line 7" in r for r in gate.reasons)
    # on gloo the line cannot come from torch_npu's HCCL group: not a reason there
    assert rank_table_gate("gloo", [(0, NODE, good)], ["x"]).ok


def test_the_fallback_line_in_a_log_is_found():
    # both of torch_npu's messages (ProcessGroupHCCL.cpp); the log prefix is illustrative
    log = (
        "[INFO] PTA(1234,python3):2026-01-01-00:00:00.000 [ProcessGroupHCCL.cpp:2096] "
        "The rank_table_file is not available, switch to original interface.\n"
        "unrelated\n"
        "[INFO] PTA(1235,python3):2026-01-01-00:00:00.001 [ProcessGroupHCCL.cpp:2110] "
        "Create global hccl comm with ranktable failed, switch to original interface.\n"
    )
    assert parse_worker_output(log, "node1 torchrun log").rank_table_dropped == (
        "node1 torchrun log line 1",
        "node1 torchrun log line 3",
    )


# --- the worker for real: torchrun, two gloo ranks ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun(rank_table: Path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    }
    env.update(OMP_NUM_THREADS="1", RANK_TABLE_FILE=str(rank_table), ASCENDPREP_NODE_ADDRESS=ADDRESS)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--nnodes",
        "1",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(_free_port()),
        WORKER,
        "--backend",
        "gloo",
        "--sizes",
        "1K",
        "--warmup",
        "0",
        "--iters",
        "1",
        "--node-name",
        NODE,
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("torchrun did not finish within 180 s")
    verdict = build_verdict(parse_worker_output(out, "torchrun"), expected_world_size=2, expected_nodes=[NODE])
    return verdict, out


def _two_dies(order):
    # SDIDs the gloo run cannot compare (no npu-smi here): they show as a warning
    return {
        "status": "completed",
        "version": "1.0",
        "server_count": "1",
        "server_list": [
            {"server_id": ADDRESS, "device": [{"device_id": str(d), "rank_id": str(r)} for r, d in enumerate(order)]}
        ],
    }


def test_torchrun_with_a_good_table_passes_the_gate(tmp_path):
    verdict, out = torchrun(write(tmp_path, _two_dies([0, 1])))
    gate = verdict.gate_named(RANK_TABLE)
    assert gate.ok and verdict.passed, out[-3000:]
    assert gate.figure == f"2/2 ranks found in {tmp_path / 'rank_table.json'}"
    assert footer_lines(verdict)[2].endswith("OK")
    assert {g["name"]: g["ok"] for g in verdict.to_dict()["gates"]}[RANK_TABLE] is True


def test_torchrun_with_ranks_out_of_order_fails_naming_them(tmp_path):
    verdict, out = torchrun(write(tmp_path, _two_dies([1, 0])))
    gate = verdict.gate_named(RANK_TABLE)
    assert not gate.ok and not verdict.passed, out[-3000:]
    # the all-reduce itself worked: only the rank table says no
    assert verdict.gate_named("connectivity").ok and verdict.gate_named("wrong_elements").ok
    assert [r.split(":")[0] for r in gate.reasons] == ["rank 0 (node1)", "rank 1 (node1)"]
    assert "FAIL (rank 0 (node1): rank_id 0 is device_id 1" in footer_lines(verdict)[2]


def test_torchrun_with_an_unreadable_table_fails_naming_it(tmp_path):
    path = write(tmp_path, _two_dies([0, 1]))
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads a mode-0 file: make it unreadable another way
        path.unlink()
        path.mkdir()
    verdict, out = torchrun(path)
    gate = verdict.gate_named(RANK_TABLE)
    assert not gate.ok and all("cannot be read" in r for r in gate.reasons), (gate.reasons, out[-3000:])


def test_gate_names_a_few_ranks_and_counts_the_rest():
    bad = [(rank, NODE, RankTableCheck("/t.json", False, f"reason {rank}")) for rank in range(11)]
    gate = rank_table_gate("hccl", bad)
    assert gate.reasons[:8] == tuple(f"rank {r} (node1): reason {r}" for r in range(8))
    assert gate.reasons[8:] == ("and 3 more ranks: 8-10",)


def test_a_hostile_table_gives_a_short_reason_not_a_crash(tmp_path):
    assert "is not JSON" in check(write(tmp_path, "[" * 100000), 0, 0)["reason"]
    huge = a3_table([{"server_id": "x" * 100000, "devices": [(0, sdid_of(0))]}])
    huge["server_list"][0]["device"][0]["device_id"] = ["y"] * 50000
    result = check(write(tmp_path, huge), 0, 0)
    assert not result["ok"] and len(result["reason"]) <= worker.RANK_TABLE_REASON_MAX_CHARS
    assert result["server_id"] == "x" * worker.RANK_TABLE_REASON_MAX_CHARS
