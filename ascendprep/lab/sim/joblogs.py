"""The simulated CANN/HCCL layer of a lab training job: the logs a real job leaves when it fails.

A job has one rank per NPU of every node (rank = node index × NPUs per node + NPU), one process
each. What a rank leaves, in the formats CANN and torch_npu document:

* a host application log (plog) ``debug/plog/plog-<pid>_<start>.log`` under the CANN log root,
  lines ``[LEVEL] MODULE(PID,python):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line]text`` (CANN "Log
  Reference", *Log Format*); the base facts HCCL prints at init (``identifier[``, ``rankNum[``,
  ``rank[``, ``server[``, ``logicDevId[``, ``deviceIp[``, ``HCCL_CONNECT_TIMEOUT is set``,
  ``ExecTimeOut is set``), which MindCluster's root-cluster parser reads
  (``Ascend/mind-cluster`` ``component/ascend-faultdiag/src/ascend_fd/pkg/parse/root_cluster/parser.py``);
* a device application log ``debug/device-<id>/device-<pid>_<start>.log`` (AICPU side);
* a console log ``rank-<rank>.txt`` with the torch_npu error line
  ``[ERROR] <time> (PID:p, Device:d, RankID:r) ERRxxxxx <module> ...`` and the CANN error code
  message (``EI0002``, ``EL0004``, ...) after it (``Ascend/pytorch`` error-code docs; the
  console-log names MindCluster reads, ``docs/en/faultdiag/user_guide/03_collecting_logs.md``).

The error lines carry the literal fragments MindCluster's knowledge base matches
(``component/ascend-faultdiag/src/ascend_fd/configuration/kg-config.json``): notify wait
(``[TaskExceptionHandler][Callback]Task run failed, base information is streamID``, ``taskID``,
``taskType[Notify Wait]``, then ``para information`` with ``remote rank:[N]``), RDMA retries
exhausted (``[Heartbeat]cqe err status[12]`` with ``remoteIP:[``), HCCL_IF_IP not on a NIC
(``[Find][LocalHostIP]ip [...] of [...] is not found in the nic list``), a rank-table device IP
that is not the device's (HCCP ``[check][ip]fail``), TLS differing between ranks
(``Some ranks tlsStatus are inconsistent``), HBM multi-bit ECC (``Event id=0x80e01801``), NPU
memory (``EL0004: Failed to allocate memory.``, torch's ``NPU out of memory``), the root-info
exchange (``topo exchange server get socket timeout``, ``topo exchange agent get socket
timeout``, ``DisplayConnectionedRank`` with ``connected rankinfo[``) and link setup
(``Wait links establish completed failed`` with ``LINK_ERROR_INFO`` rows). No public, complete
multi-rank bundle of a real failed job exists; the whole lines around the fragments are shaped
after the single-rank excerpts in public Ascend issue threads, and are this module's.

How the failures spread, as HCCL's collectives make them spread: a rank that dies or stalls
leaves every other rank of the ring waiting on its predecessor, so every survivor reports the
same notify-wait timeout (EI0002) after ``HCCL_EXEC_TIMEOUT``; only the root's own lines (its
CQE errors, its ECC event, its OOM, or its missing report) tell it apart. A rank that never
joins leaves the root-info server (rank 0) waiting and naming who did connect; a link that
cannot be set up leaves a chain of waits that ends at it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

#: The faults a lab job can fail with; ``:NODE[:NPU]`` places one (default: the second node, NPU 1).
JOB_FAULTS = (
    "port-down",
    "rank-killed",
    "port-taken",
    "wrong-if-ip",
    "tls-mismatch",
    "stale-ranktable",
    "hbm-ecc",
    "npu-oom",
)
#: Faults that stop the job while its communicator is set up (the others: 20 minutes into training).
INIT_FAULTS = ("port-taken", "wrong-if-ip", "tls-mismatch", "stale-ranktable")
#: Faults after which the faulty rank's process is gone (no timeout report of its own).
DEAD_RANK_FAULTS = ("rank-killed", "port-taken", "wrong-if-ip", "hbm-ecc", "npu-oom")

CONNECT_TIMEOUT_S = 120
EXEC_TIMEOUT_S = 600
#: Seconds into the job at which an execution fault strikes.
FAULT_AFTER_S = 1200
#: HCCL's root-info listening port (``HCCL_IF_BASE_PORT``'s default) of NPU 0; NPU n uses + n.
BASE_PORT = 60000
#: A wrong HCCL_IF_IP: an address on no NIC of any lab node (TEST-NET-2, RFC 5737).
WRONG_IF_IP = "198.51.100.7"


class JobSpecError(ValueError):
    """A ``--fault`` the lab cannot place (the message says why)."""


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    server: str
    npu: int
    device_ip: str
    pid: int


@dataclass(frozen=True)
class JobFault:
    kind: str
    node: str
    npu: int


def parse_fault(text: str, nodes: Sequence[Tuple[str, int]]) -> JobFault:
    """``KIND[:NODE[:NPU]]`` against the lab's ``(node, npus)``; the default place is the second
    node (the only one in a one-node lab), NPU 1 (NPU 0 with one NPU)."""
    parts = text.split(":")
    if len(parts) > 3 or parts[0] not in JOB_FAULTS:
        raise JobSpecError(f"--fault {text!r}: give KIND[:NODE[:NPU]], KIND one of {', '.join(JOB_FAULTS)}")
    names = dict(nodes)
    default_node = nodes[1][0] if len(nodes) > 1 else nodes[0][0]
    node = parts[1] if len(parts) > 1 and parts[1] else default_node
    if node not in names:
        raise JobSpecError(f"--fault {text!r}: no node {node!r} in the lab ({', '.join(names)})")
    npu = min(1, names[node] - 1)
    if len(parts) == 3:
        if not parts[2].isdigit() or not 0 <= int(parts[2]) < names[node]:
            raise JobSpecError(f"--fault {text!r}: {node} has NPUs 0-{names[node] - 1}")
        npu = int(parts[2])
    return JobFault(parts[0], node, npu)


def stamp(when: float) -> str:
    """CANN's log time, ``2026-11-28-10:40:01.123.456`` (UTC in the lab)."""
    seconds = time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime(when))
    micro = int(round((when % 1) * 1_000_000)) % 1_000_000
    return f"{seconds}.{micro // 1000:03d}.{micro % 1000:03d}"


def console_stamp(when: float) -> str:
    return time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime(when))


def file_stamp(when: float) -> str:
    """The time in a plog's name, ``plog-<pid>_<YYYYmmddHHMMSSmmm>.log``."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(when)) + f"{int((when % 1) * 1000):03d}"


class _Log:
    """One rank's plog, device log and console lines as they are written."""

    def __init__(self, rank: Rank) -> None:
        self.rank = rank
        self.plog: List[str] = []
        self.device: List[str] = []
        self.console: List[str] = []

    def line(self, level: str, module: str, when: float, where: str, text: str, device: bool = False) -> None:
        pid = self.rank.pid
        (self.device if device else self.plog).append(f"[{level}] {module}({pid},python):{stamp(when)} [{where}]{text}")

    def torch_error(self, when: float, code: str, text: str) -> None:
        r = self.rank
        self.console.append(
            f"[ERROR] {console_stamp(when)} (PID:{r.pid}, Device:{r.npu}, RankID:{r.rank}) {code} {text}"
        )


def render_job(
    name: str, ranks: Sequence[Rank], faults: Sequence[JobFault], start: float, tls_on: Optional[Dict[int, int]] = None
) -> Dict[str, Dict[str, str]]:
    """Every rank's files, per node: ``{node: {relative path: text}}``.

    Paths: ``log/debug/plog/...`` and ``log/debug/device-<id>/...`` (under the CANN log root),
    ``console/rank-<rank>.txt``. ``tls_on``: rank -> TLS switch as the ranks see it.
    """
    by_place = {(r.node, r.npu): r for r in ranks}
    faulty: Dict[int, List[str]] = {}
    for fault in faults:
        rank = by_place.get((fault.node, fault.npu))
        if rank is None:
            raise JobSpecError(f"{fault.kind}: no rank on {fault.node} NPU {fault.npu}")
        faulty.setdefault(rank.rank, []).append(fault.kind)
    logs = {r.rank: _Log(r) for r in ranks}
    count = len(ranks)
    tls = tls_on or {}
    for r in ranks:
        _init_lines(logs[r.rank], name, count, start, tls.get(r.rank, 0))
    init_faults = {rank: kinds for rank, kinds in faulty.items() if set(kinds) & set(INIT_FAULTS)}
    if init_faults:
        _fail_at_init(logs, ranks, init_faults, start, name)
    else:
        _train(logs, ranks, faulty, start, name)
    files: Dict[str, Dict[str, str]] = {}
    for r in ranks:
        log = logs[r.rank]
        own = files.setdefault(r.node, {})
        tail = f"{r.pid}_{file_stamp(start)}.log"
        own[f"log/debug/plog/plog-{tail}"] = "\n".join(log.plog) + "\n"
        if log.device:
            own[f"log/debug/device-{r.npu}/device-{tail}"] = "\n".join(log.device) + "\n"
        own[f"console/rank-{r.rank}.txt"] = "\n".join(log.console) + "\n"
    return files


def _init_lines(log: _Log, name: str, count: int, start: float, tls: int) -> None:
    r = log.rank
    t = start + 2 + r.rank * 0.01
    log.console.append(f"[{console_stamp(start)}] job {name}: rank {r.rank} of {count} starting on {r.node}")
    log.line("INFO", "HCCL", t, "adapter_hccl.cc:263", f"HCCL_CONNECT_TIMEOUT is set to [{CONNECT_TIMEOUT_S}]s")
    log.line("INFO", "HCCL", t, "adapter_hccl.cc:280", f"ExecTimeOut is set to [{EXEC_TIMEOUT_S}]s")
    log.line(
        "INFO",
        "HCCL",
        t + 0.1,
        "op_base.cc:376",
        f"Entry-HcclCommInitRootInfo: identifier[{name}_hccl_world_group], rankNum[{count}], rank[{r.rank}], "
        f"server[{r.server}], logicDevId[{r.npu}], phydevId[{r.npu}], deviceIp[{r.device_ip}], tlsStatus[{tls}]",
    )


def _survivors(ranks: Sequence[Rank], dead: set[int]) -> List[Rank]:
    return [r for r in ranks if r.rank not in dead]


def _train(logs: Dict[int, _Log], ranks: Sequence[Rank], faulty: Dict[int, List[str]], start: float, name: str) -> None:
    """The job trains; at FAULT_AFTER_S the execution faults strike; the survivors time out."""
    count = len(ranks)
    for r in ranks:
        for step in range(0, FAULT_AFTER_S, 300):
            logs[r.rank].console.append(f"[rank {r.rank}] step {step // 3} loss {2.5 - step / 2000:.4f}")
    strike = start + FAULT_AFTER_S
    dead = {rank for rank, kinds in faulty.items() if set(kinds) & set(DEAD_RANK_FAULTS)}
    for rank, kinds in faulty.items():
        log = logs[rank]
        r = log.rank
        for kind in kinds:
            if kind == "port-down":
                log.line(
                    "ERROR", "DRV", strike, "dev_mon.c:512", "port link up->down, event_id=0x81078603", device=True
                )
                # Its ring peers' RDMA retries run out (CQE status 12, retry exceeded) toward it; its
                # own queue pairs are flushed with the port, so no retry count runs out there.
                for peer in _ring_peers(ranks, r):
                    _cqe(logs[peer.rank], strike + 8 + peer.rank * 0.001, peer.device_ip, r.device_ip)
            elif kind == "hbm-ecc":
                log.line(
                    "ERROR",
                    "DRV",
                    strike,
                    "dms_event.c:201",
                    f"hbm ecc: Event id=0x80e01801, device={r.npu}, multi-bit ECC error when accessing the HBM",
                    device=True,
                )
                log.line(
                    "ERROR",
                    "RUNTIME",
                    strike + 0.5,
                    "device_error_proc.cc:1101",
                    f"report error module_type=5, module_name=EZ9999 device({r.npu}) memory UCE error, "
                    "event_id=0x80e01801",
                )
                log.torch_error(strike + 1, "ERR00100", "PTA call acl api failed")
                log.console.append(f"EZ9999: Inner Error! device({r.npu}): HBM multi-bit ECC error (UCE ERROR)")
            elif kind == "npu-oom":
                log.line("ERROR", "RUNTIME", strike, "npu_driver.cc:1023", "EL0004: Failed to allocate memory.")
                log.torch_error(strike + 0.5, "ERR00006", "PTA memory error")
                log.console.append(
                    f"RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU {r.npu}; 60.97 GiB total "
                    "capacity; 58.40 GiB already allocated; 58.40 GiB current active; 0 bytes free)"
                )
            # rank-killed: the process just ends (SIGKILL): no line of its own, the plog stops.
    report = strike + EXEC_TIMEOUT_S
    alive = _survivors(ranks, dead)
    for r in alive:
        waited = ranks[(r.rank - 1) % count]
        _notify_timeout(logs[r.rank], report + r.rank * 0.02, name, waited.rank, index=4200, count=count)


def _ring_peers(ranks: Sequence[Rank], faulty: Rank) -> List[Rank]:
    """The NPUs of the same index on the previous and next node: the inter-server ring's links."""
    same = [r for r in ranks if r.npu == faulty.npu]
    if len(same) < 2:
        return []
    at = same.index(faulty)
    peers = {
        same[(at - 1) % len(same)].rank: same[(at - 1) % len(same)],
        same[(at + 1) % len(same)].rank: same[(at + 1) % len(same)],
    }
    return [peers[k] for k in sorted(peers) if k != faulty.rank]


def _cqe(log: _Log, when: float, local_ip: str, remote_ip: str) -> None:
    log.line(
        "ERROR",
        "HCCP",
        when,
        "ra_hdc_async.c:422",
        f"[Heartbeat]cqe err status[12], deviceIp[{local_ip}], remoteIP:[{remote_ip}], qpn[1027]",
    )


def _notify_timeout(log: _Log, when: float, name: str, remote: int, index: int, count: int) -> None:
    r = log.rank
    tag = f"AllReduce_{name}_hccl_world_group"
    log.line(
        "ERROR",
        "HCCL",
        when,
        "task_exception_handler.cc:868",
        f"[TaskExceptionHandler][Callback]Task run failed, base information is streamID:[3], taskID[{index}], "
        f"taskType[Notify Wait], tag[{tag}], index[{index}].",
    )
    log.line(
        "ERROR",
        "HCCL",
        when,
        "task_exception_handler.cc:874",
        f"[TaskExceptionHandler][Callback]Task run failed, para information is notifyID:[0x{0x1000 + r.rank:x}], "
        f"stage:[0], remote rank:[{remote}].",
    )
    log.line(
        "ERROR",
        "HCCL",
        when,
        "task_exception_handler.cc:880",
        f"[TaskExceptionHandler][Callback]Task run failed, groupRank information is group:[{name}_hccl_world_group], "
        f"user define information[], rankSize[{count}], rankId[{r.rank}].",
    )
    log.torch_error(when + 0.2, "ERR02200", "DIST call hccl api failed.")
    log.console.append(
        f"EI0002: [PID: {r.pid}] {stamp(when)} The wait execution of the Notify register times out. Reason: The "
        f"Notify register has not received the Notify record from remote rank [{remote}]."
    )


def _fail_at_init(
    logs: Dict[int, _Log], ranks: Sequence[Rank], faulty: Dict[int, List[str]], start: float, name: str
) -> None:
    """Init faults: the ranks that never join, or the links that never come up."""
    count = len(ranks)
    t = start + 5
    never = {rank for rank, kinds in faulty.items() if {"port-taken", "wrong-if-ip"} & set(kinds)}
    links = {rank for rank, kinds in faulty.items() if {"tls-mismatch", "stale-ranktable"} & set(kinds)}
    for rank, kinds in faulty.items():
        log = logs[rank]
        r = log.rank
        for kind in kinds:
            if kind == "port-taken":
                port = BASE_PORT + r.npu
                log.line(
                    "ERROR",
                    "HCCL",
                    t,
                    "hccl_socket.cc:212",
                    f"[Listen][Socket]socket bind failed, ip[{r.server}] port[{port}] is already bound: "
                    "Address already in use (errno 98)",
                )
                log.torch_error(t + 0.2, "ERR02200", "DIST call hccl api failed.")
                log.console.append(f"EI0019: [PID: {r.pid}] port {port} of {r.server} is in use by another process.")
            elif kind == "wrong-if-ip":
                log.line(
                    "ERROR",
                    "HCCL",
                    t,
                    "adapter_hccl.cc:512",
                    f"[Find][LocalHostIP]ip [{WRONG_IF_IP}] of [HCCL_IF_IP] is not found in the nic list",
                )
                log.torch_error(t + 0.2, "ERR02200", "DIST call hccl api failed.")
            elif kind == "stale-ranktable":
                log.line(
                    "ERROR",
                    "HCCP",
                    t,
                    "ra_peer.c:318",
                    f"[check][ip]fail, the device ip in the rank table is not the ip of device {r.npu} "
                    f"({r.device_ip}): the rank table is stale",
                )
            elif kind == "tls-mismatch":
                log.line(
                    "ERROR",
                    "HCCL",
                    t,
                    "transport_manager.cc:640",
                    f"Some ranks tlsStatus are inconsistent: rank[{r.rank}] device {r.npu} differs from its peers",
                )
    fail = start + 5 + CONNECT_TIMEOUT_S
    if never:
        connected = [r.rank for r in ranks if r.rank not in never]
        root = ranks[0]
        for r in ranks:
            if r.rank in never:
                continue
            log = logs[r.rank]
            if r.rank == root.rank:
                log.line(
                    "ERROR",
                    "HCCL",
                    fail,
                    "topoinfo_exchange_server.cc:118",
                    f"topo exchange server get socket timeout! timeout[{CONNECT_TIMEOUT_S}]s",
                )
                log.line(
                    "ERROR",
                    "HCCL",
                    fail,
                    "topoinfo_exchange_server.cc:140",
                    f"DisplayConnectionedRank: total connected num is [{len(connected)}], need [{count}], "
                    f"connected rankinfo[{','.join(map(str, connected))}]",
                )
            else:
                log.line(
                    "ERROR",
                    "HCCL",
                    fail + 1 + r.rank * 0.01,
                    "topoinfo_exchange_agent.cc:97",
                    f"topo exchange agent get socket timeout! server[{root.server}] port[{BASE_PORT}]",
                )
            log.torch_error(fail + 2, "ERR02200", "DIST call hccl api failed.")
            log.console.append(
                f"EI0006: [PID: {r.pid}] Getting socket times out. Reason: the remote side did not connect."
            )
        return
    # Link faults: every other rank waits on its ring neighbour toward the nearest faulty rank, so
    # the chains of waits end at the faulty ranks, which report their own error instead.
    for r in ranks:
        log = logs[r.rank]
        if r.rank in links:
            log.torch_error(fail, "ERR02200", "DIST call hccl api failed.")
            continue
        nearest = min(links, key=lambda f: (abs(f - r.rank), f))
        peer = ranks[r.rank + 1 if nearest > r.rank else r.rank - 1]
        when = fail + r.rank * 0.01
        log.line(
            "ERROR",
            "HCCL",
            when,
            "transport_manager.cc:701",
            f"Wait links establish completed failed, local rank[{r.rank}] remote rank[{peer.rank}]",
        )
        log.line(
            "ERROR",
            "HCCL",
            when,
            "transport_manager.cc:720",
            "LINK_ERROR_INFO: | dest_ip(rank) | src_ip(rank) | role | status |",
        )
        log.line(
            "ERROR",
            "HCCL",
            when,
            "transport_manager.cc:721",
            f"LINK_ERROR_INFO: | {peer.device_ip}({peer.rank}) | {r.device_ip}({r.rank}) | client | time out |",
        )
        log.torch_error(when + 0.2, "ERR02200", "DIST call hccl api failed.")
        log.console.append(
            f"EI0006: [PID: {r.pid}] Getting socket times out. Reason: rank {peer.rank} did not connect."
        )
