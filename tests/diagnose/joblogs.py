"""Write the logs of a multi-rank job in the formats CANN prints, for diagnose's tests.

Every line is shaped after a published sample, with only the numbers changed:

* ``Entry-HcclCommInitRootInfoInner``, the three ``[TaskExecStage][Timeout][Host]Task run failed``
  lines, ``Cluster Exception Location`` and ``cqe error status[12]``: the HCCL troubleshooting
  guide, "Task Dispatch and Execution Stage" (hicann/hcomm docs, en), log samples;
* the console's ``EI0002: [PID: ...] ... The wait execution of the Notify register times out``
  and ``EI0013``: the same guide and its Chinese twin (the console sample of the heartbeat case);
* the plog's ``deviceIp[`` INFO line: the fields (``rank[``, ``server[``, ``logicDevId[``,
  ``deviceIp[``) MindCluster's root-cluster parser reads from INFO lines (Ascend/mind-cluster
  component/ascend-faultdiag, pkg/parse/root_cluster);
* torch_npu's ``(PID:..., Device:..., RankID:...) ERR02200``: vllm-project/vllm-ascend#672.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

GROUP = "10.0.0.1%enp189s0f0_60000_0_1761275812718970"


@dataclass
class Rank:
    rank: int
    node: str
    device: int
    pid: int
    server: str

    @property
    def device_ip(self) -> str:
        return f"192.168.{self.device}.{10 + int(self.node.lstrip('node') or 0)}"


def ranks(nodes: int = 4, per_node: int = 8) -> List[Rank]:
    return [
        Rank(n * per_node + d, f"node{n}", d, 40000 + n * per_node + d, f"10.0.0.{n + 1}")
        for n in range(nodes)
        for d in range(per_node)
    ]


def t(minute: int, second: int, micro: int = 0) -> str:
    return f"2025-10-24-11:{minute:02d}:{second:02d}.{micro // 1000:03d}.{micro % 1000:03d}"


def init_lines(r: Rank, size: int, group: str = GROUP) -> List[str]:
    return [
        f"[INFO] HCCL({r.pid},python):{t(16, 52, 724374)} [op_base.cc:1292] [{r.pid}]Entry-HcclCommInitRootInfoInner:"
        f"ranks[{size}], rank[{r.rank}], rootinfo: host ip[10.0.0.1] port[60000] nicDeploy[1] identifier[{group}], deviceLogicId[{r.device}]",
        f"[INFO] HCCL({r.pid},python):{t(16, 53, 1000)} [hccl_communicator.cc:411] [{r.pid}]rank[{r.rank}], server[{r.server}], "
        f"logicDevId[{r.device}], deviceIp[{r.device_ip}]",
    ]


def timeout_lines(
    r: Rank, size: int, when: str, index: int = 21, tag: str = "AllReduce_" + GROUP, group: str = GROUP
) -> List[str]:
    return [
        f"[ERROR] HCCL({r.pid},python):{when} [task_exception_handler.cc:908] [{r.pid}][TaskExecStage][Timeout][Host]Task run failed, "
        f"base information is streamID:[2], taskID[21], tag[{tag}], AlgType(level 0-1-2):[fullmesh-ring-NHR].",
        f"[ERROR] HCCL({r.pid},python):{when} [task_exception_handler.cc:771] [{r.pid}][TaskExecStage][Timeout][Host]Task run failed, "
        f"groupRank information is group:[{group}], user define information[], rankSize[{size}], rankId[{r.rank}].",
        f"[ERROR] HCCL({r.pid},python):{when} [task_exception_handler.cc:704] [{r.pid}][TaskExecStage][Timeout][Host]Task run failed, "
        f"opData information is timeStamp:[2025-10-24-11:16:55.493.816], deviceId[{r.device}], index[{index}], count[256], "
        f"reduceType[sum], src[0x12c0c0013000], dst[0x12c0c0014000], dataType[float32].",
    ]


def cqe_line(r: Rank, peer: Rank, when: str) -> str:
    return (
        f"[ERROR] HCCL({r.pid},python):{when} [heartbeat.cc:1229] [{r.pid}][TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]"
        f"cqe error status[12], time:[2025-10-24 11:40:12.776654],localInfo{{server[{r.server}],deviceId[{r.server}],"
        f"deviceIp[{r.device_ip}]}}, remoteIP{{server[{peer.server}],deviceId[{peer.server}],deviceIp[{peer.device_ip}]}}"
    )


def cluster_exception_line(r: Rank, culprit: Rank, when: str, kind: str = "Heartbeat Lost Occurred") -> str:
    return (
        f"[ERROR]HCCL({r.pid},python):{when}[task_exception_handler.cc:610][{r.pid}][TaskExecStage][HeartbeatAbnormal]"
        f"Cluster Exception Location[IP/ID]:[{culprit.server}/{culprit.device}], Arrival Time:[Fri Oct 24 11:40:58 2025], "
        f"Discoverer:[{r.server}/{r.device}], ExceptionType:[{kind}], Possible Reason:1. Process has exited, 2. Network Disconnected"
    )


def console_lines(r: Rank, when: str) -> List[str]:
    return [
        f"[rank{r.rank}]: EI0002: [PID: {r.pid}] {when} The wait execution of the Notify register times out. Reason: The Notify "
        f"register has not received the Notify record from remote rank [unknown].base information: [streamID:[2282987520], "
        f"taskID[5], tag[AllReduce_{GROUP}], AlgType(level 0-1-2):[fullmesh-ring-ring].] task information: []",
        f"[rank{r.rank}]: [ERROR] 2025-10-24-11:58:00 (PID:{r.pid}, Device:{r.device}, RankID:{r.rank}) ERR02200 DIST call hccl api failed.",
    ]


def write_job(
    root: Path,
    job: List[Rank],
    plog: Dict[int, List[str]],
    console: Optional[Dict[int, List[str]]] = None,
    extra: Optional[Dict[str, str]] = None,
) -> Path:
    """One folder per node: ``<node>/plog/plog-<pid>_<time>.log`` for each rank in ``plog``
    (after its init lines), ``<node>/rank-<N>.txt`` for each in ``console``, and ``extra``
    files by relative path."""
    size = len(job)
    for r in job:
        if r.rank not in plog:
            continue
        path = root / r.node / "plog" / f"plog-{r.pid}_20251024111652406.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(init_lines(r, size) + plog[r.rank]) + "\n")
    for rank, lines in (console or {}).items():
        r = job[rank]
        path = root / r.node / f"rank-{r.rank}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    for rel, text in (extra or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
