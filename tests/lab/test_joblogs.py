"""The lab job's simulated CANN/HCCL logs: each fault leaves its own lines on the right rank, and
the symptom every other rank shows, in the documented shapes (see lab/sim/joblogs.py)."""

from __future__ import annotations

import re
from typing import Dict

import pytest

from ascendprep.lab.sim.joblogs import (
    JOB_FAULTS,
    JobFault,
    JobSpecError,
    Rank,
    parse_fault,
    render_job,
)

NODES = [("node1", 4), ("node2", 4), ("node3", 4)]
RANKS = [
    Rank(i * 4 + npu, name, f"10.0.0.{11 + i}", npu, f"192.168.{100 + npu}.{11 + i}", 31000 + (i * 4 + npu) * 7)
    for i, (name, _) in enumerate(NODES)
    for npu in range(4)
]
START = 1_795_000_000.0
#: CANN's plog line: [LEVEL] MODULE(PID,python):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line]text
PLOG_LINE = re.compile(
    r"^\[(ERROR|INFO|WARNING|EVENT)\] [A-Z]+\((\d+),python\):\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3} \[[\w.]+:\d+\]"
)
#: torch_npu's console error line: [ERROR] time (PID:p, Device:d, RankID:r) ERRxxxxx module ...
TORCH_LINE = re.compile(
    r"^\[ERROR\] \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d \(PID:(\d+), Device:(\d+), RankID:(\d+)\) ERR\d{5} "
)


def job(*faults: str) -> Dict[int, Dict[str, str]]:
    """Per rank: plog, device (may be empty) and console text."""
    placed = [parse_fault(text, NODES) for text in faults]
    files = render_job("j", RANKS, placed, START)
    out: Dict[int, Dict[str, str]] = {}
    for r in RANKS:
        tree = files[r.node]
        plog = next(v for k, v in tree.items() if k.startswith("log/debug/plog/") and f"-{r.pid}_" in k)
        device = next(
            (v for k, v in tree.items() if k.startswith(f"log/debug/device-{r.npu}/") and f"-{r.pid}_" in k), ""
        )
        out[r.rank] = {"plog": plog, "device": device, "console": tree[f"console/rank-{r.rank}.txt"]}
    return out


def errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[ERROR]")]


def test_every_line_has_cann_or_torch_npu_shape_and_its_rank_pid():
    logs = job("port-down:node2:1", "npu-oom:node3:2")
    for r in RANKS:
        for line in logs[r.rank]["plog"].splitlines():
            match = PLOG_LINE.match(line)
            assert match and int(match.group(2)) == r.pid, line
        for line in logs[r.rank]["console"].splitlines():
            if line.startswith("[ERROR]"):
                match = TORCH_LINE.match(line)
                assert match and tuple(map(int, match.groups())) == (r.pid, r.npu, r.rank), line


def test_base_facts_name_rank_server_device_and_timeouts():
    plog = job("rank-killed")[5]["plog"]
    assert "rankNum[12], rank[5], server[10.0.0.12], logicDevId[1], phydevId[1], deviceIp[192.168.101.12]" in plog
    assert "HCCL_CONNECT_TIMEOUT is set to [120]s" in plog and "ExecTimeOut is set to [600]s" in plog


def test_port_down_cqe_links_point_at_the_faulty_device_and_every_rank_times_out():
    logs = job("port-down:node2:1")  # rank 5, device IP 192.168.101.12
    assert "event_id=0x81078603" in logs[5]["device"]
    pointing = [
        r for r in logs if "cqe err status[12]" in logs[r]["plog"] and "remoteIP:[192.168.101.12]" in logs[r]["plog"]
    ]
    assert sorted(pointing) == [1, 9]  # NPU 1 of node1 and node3: the ring neighbours
    assert "cqe err status" not in logs[5]["plog"]  # its own queue pairs are flushed, not retried out
    for r in logs:
        assert "taskType[Notify Wait]" in logs[r]["plog"] and "EI0002" in logs[r]["console"]


def test_a_killed_rank_leaves_no_error_and_is_the_one_rank_without_the_timeout():
    logs = job("rank-killed:node1:3")
    assert errors(logs[3]["plog"]) == [] and "ERR" not in logs[3]["console"]
    timed_out = {r for r in logs if "taskType[Notify Wait]" in logs[r]["plog"]}
    assert timed_out == set(range(12)) - {3}
    assert "remote rank:[3]" in logs[4]["plog"]


@pytest.mark.parametrize(
    "fault,line",
    [
        ("port-taken:node3:0", "port[60000] is already bound"),
        ("wrong-if-ip:node3:0", "[Find][LocalHostIP]ip [198.51.100.7] of [HCCL_IF_IP] is not found in the nic list"),
    ],
)
def test_a_rank_that_never_joins_is_missing_from_the_roots_connected_list(fault, line):
    logs = job(fault)  # rank 8
    assert line in logs[8]["plog"]
    assert "topo exchange server get socket timeout" in logs[0]["plog"]
    connected = re.search(r"connected rankinfo\[([0-9,]+)\]", logs[0]["plog"]).group(1).split(",")
    assert "8" not in connected and len(connected) == 11
    assert all("topo exchange agent get socket timeout" in logs[r]["plog"] for r in range(1, 12) if r != 8)


@pytest.mark.parametrize(
    "fault,line",
    [("tls-mismatch:node2:2", "tlsStatus are inconsistent"), ("stale-ranktable:node2:2", "[check][ip]fail")],
)
def test_a_link_fault_ends_every_chain_of_waits(fault, line):
    logs = job(fault)  # rank 6
    assert line in logs[6]["plog"]
    waits = {}
    for r in logs:
        found = re.search(r"LINK_ERROR_INFO: \| \S+\((\d+)\) \| \S+\((\d+)\)", logs[r]["plog"])
        if found:
            waits[int(found.group(2))] = int(found.group(1))
    assert 6 not in waits and len(waits) == 11
    for start in waits:  # follow each chain to its end
        at = start
        while at in waits:
            at = waits[at]
        assert at == 6


def test_hbm_ecc_and_oom_name_their_device_and_two_faults_at_once_both_show():
    logs = job("hbm-ecc:node1:2", "npu-oom:node3:3")
    assert "Event id=0x80e01801" in logs[2]["device"]
    assert "EL0004: Failed to allocate memory." in logs[11]["plog"]
    assert "NPU out of memory" in logs[11]["console"]
    assert {r for r in logs if "taskType[Notify Wait]" not in logs[r]["plog"]} == {2, 11}


def test_faults_are_placed_and_refused_by_name():
    assert parse_fault("hbm-ecc", NODES) == JobFault("hbm-ecc", "node2", 1)
    assert parse_fault("npu-oom:node3:0", NODES) == JobFault("npu-oom", "node3", 0)
    for bad in ("melt", "npu-oom:node9", "npu-oom:node1:4", "npu-oom:node1:x", "a:b:c:d"):
        with pytest.raises(JobSpecError):
            parse_fault(bad, NODES)
    assert len(JOB_FAULTS) == 8
