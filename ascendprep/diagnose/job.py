"""From events to processes and jobs: who each plog's process is, and which job it belongs to.

A plog is one process. HCCL prints, when a communicator is created, the process's rank, the
number of ranks, the communicator's identifier and the NPU (``Entry-HcclCommInitRootInfoInner:
ranks[4], rank[2], ... identifier[127.10.0.1%enp_60000_0_1761275812718970], deviceLogicId[2]``,
HCCL troubleshooting guide, "Notify Wait Timeout"). Processes that share a communicator are one
job; two jobs whose logs were mixed in one tree share none, and are told apart by that, never
merged. A console log or a kernel message belongs to the job of the process it names (pid, rank)
on its node, or to every job on its node when it names none.

Pure: events in, processes and jobs out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ascendprep.diagnose.model import CONSOLE, DEVICE, PLOG, Event, LogFile, Process

ProcKey = Tuple[str, str]  # (node, file) of a plog


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass
class Job:
    """One job's processes and events; ``name`` is its world communicator's identifier."""

    name: str
    processes: Dict[ProcKey, Process] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    #: identifier -> number of ranks, of every communicator the job's processes joined.
    communicators: Dict[str, int] = field(default_factory=dict)

    @property
    def world_size(self) -> Optional[int]:
        return max(self.communicators.values()) if self.communicators else None

    def process_of(self, node: str, pid: Optional[int] = None, rank: Optional[int] = None) -> Optional[Process]:
        for process in self.processes.values():
            if process.node != node:
                continue
            if pid is not None and process.pid == pid:
                return process
            if pid is None and rank is not None and process.rank == rank:
                return process
        return None

    def by_rank(self, rank: int) -> Optional[Process]:
        for process in self.processes.values():
            if process.rank == rank:
                return process
        return None

    def by_ip(self, ip: str) -> Optional[Process]:
        for process in self.processes.values():
            if process.device_ip == ip:
                return process
        return None


def processes(events: Sequence[Event], files: Iterable[LogFile]) -> Dict[ProcKey, Process]:
    """One :class:`Process` per plog (and per device log), from the facts its lines print; and one
    per console log of a rank that no plog tells of (a tree of console logs only: the rank from
    the file's name or torch_npu's ``(PID:p, Device:d, RankID:r)`` lines)."""
    found: Dict[ProcKey, Dict[str, Any]] = {}
    consoles: Dict[ProcKey, Dict[str, Any]] = {}
    for log in files:
        if log.kind in (PLOG, DEVICE):
            found[(log.node, log.path)] = {"pid": log.pid, "comms": {}, "ips": []}
        elif log.kind == CONSOLE:
            consoles[(log.node, log.path)] = {"pid": None, "comms": {}, "ips": [], "rank": log.rank}
    for event in events:
        record = found.get((event.node, event.file)) or consoles.get((event.node, event.file))
        if record is None:
            continue
        if record.get("pid") is None and event.pid is not None:
            record["pid"] = event.pid
        if "rank" in record and record["rank"] is None and event.rank is not None:
            record["rank"] = event.rank
        if event.device is not None and event.key is not None:
            record.setdefault("device", event.device)
        fact = event.attr("fact")
        if fact == "comm_init" and event.attr("identifier"):
            record["comms"][event.attr("identifier")] = (_int(event.attr("ranks")) or 0, _int(event.attr("rank")))
            if event.attr("device") is not None:
                record.setdefault("device", _int(event.attr("device")))
        elif fact == "group_rank" and event.attr("group") and (event.attr("rank_id") or "").isdigit():
            # A plog whose init lines are gone (cut by collect, or a WARNING log level) still names
            # the rank in its task exception: group, rankSize, rankId.
            record["comms"].setdefault(
                event.attr("group"), (_int(event.attr("rank_size")) or 0, _int(event.attr("rank_id")))
            )
        elif fact == "link_row" and event.attr("src_ip"):
            record["ips"].append((_int(event.attr("src_rank")), event.attr("src_ip")))
        elif fact == "device_ip" and event.attr("device_ip"):
            record["ips"].append((_int(event.attr("rank")), event.attr("device_ip")))
        elif fact == "op_data" and event.attr("device") is not None:
            record.setdefault("device", _int(event.attr("device")))
        elif event.key in ("hccl.cqe_error", "hccl.ei0013") and event.attr("local_ip"):
            record["ips"].insert(0, (None, event.attr("local_ip")))
            if (event.attr("local_device") or "").isdigit():
                record.setdefault("device", _int(event.attr("local_device")))
    result: Dict[ProcKey, Process] = {}
    for key, record in found.items():
        result[key] = _process(key, record)
    seen = {(p.node, p.pid) for p in result.values()} | {(p.node, p.rank) for p in result.values()}
    for key, record in consoles.items():
        process = _process(key, record)
        if process.rank is None or (process.node, process.pid) in seen or (process.node, process.rank) in seen:
            continue
        result[key] = process
    return result


def _process(key: ProcKey, record: Dict[str, Any]) -> Process:
    comms = record["comms"]
    world = max(comms.items(), key=lambda item: item[1][0]) if comms else None
    rank = world[1][1] if world else record.get("rank")
    ips = record["ips"]
    own = (
        [ip for r, ip in ips if r is not None and r == rank]
        + [ip for r, ip in ips if r is None]
        + [ip for _r, ip in ips]
    )
    pid, device = record.get("pid"), record.get("device")
    return Process(
        node=key[0],
        pid=pid if isinstance(pid, int) else None,
        rank=rank if isinstance(rank, int) else None,
        device=device if isinstance(device, int) else None,
        device_ip=own[0] if own else None,
        file=key[1],
        communicators=tuple(sorted(comms)),
        rank_size=world[1][0] if world else None,
    )


#: Facts of a failure (not of who the process is) that a resumed process's earlier lines hold.
_FAILURE_FACTS = frozenset(
    {"group_rank", "op_data", "base_info", "remote_rank", "link_row", "connected", "need_connect"}
)


def after_resume(events: Sequence[Event]) -> List[Event]:
    """``events`` without what a process logged before it last resumed (resumable training:
    ``attr init success`` / ``HcclCommResume:success``; MindCluster's root-cluster parser ignores
    those lines too): a failure it recovered from is not the one that ended the job. Who the
    process is (rank, communicator, device IP, timeouts) is kept."""
    resumed: Dict[Tuple[str, str], int] = {}
    for event in events:
        if event.attr("fact") == "resume":
            key = (event.node, event.file)
            resumed[key] = max(resumed.get(key, 0), event.seq)
    if not resumed:
        return list(events)
    kept = []
    for event in events:
        mark = resumed.get((event.node, event.file))
        earlier = mark is not None and event.seq < mark
        if earlier and (event.key is not None or event.attr("fact") in _FAILURE_FACTS):
            continue
        kept.append(event)
    return kept


def split_jobs(events: Sequence[Event], files: Sequence[LogFile]) -> List[Job]:
    """The jobs of the tree: processes joined by the communicators they share; the events of
    each. Files that name no communicator go to the job of their node (all of them where the
    node ran more than one), or to one unnamed job when the tree holds no HCCL facts at all.
    What a process logged before it last resumed is left out (:func:`after_resume`)."""
    events = after_resume(events)
    procs = processes(events, files)
    parent: Dict[str, str] = {}

    def find(item: str) -> str:
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for process in procs.values():
        comms = list(process.communicators)
        for other in comms[1:]:
            parent[find(other)] = find(comms[0])
        for comm in comms:
            find(comm)
    groups: Dict[str, Job] = {}
    sizes: Dict[str, int] = {}
    for event in events:
        if event.attr("fact") == "comm_init" and event.attr("identifier"):
            ident = event.attr("identifier") or ""
            sizes[ident] = max(sizes.get(ident, 0), _int(event.attr("ranks")) or 0)
    for root in sorted({find(c) for c in parent}):
        members = {c: sizes.get(c, 0) for c in parent if find(c) == root}
        name = max(members, key=lambda c: (members[c], c))
        groups[root] = Job(name=name, communicators=members)
    jobs_of_file: Dict[str, List[Job]] = {}
    for key, process in procs.items():
        if process.communicators:
            job = groups[find(process.communicators[0])]
            job.processes[key] = process
            jobs_of_file[process.file] = [job]
    if not groups:
        only = Job(name="(no HCCL communicator in the logs)")
        only.processes.update(procs)
        for event in events:
            only.events.append(event)
        return [only]
    node_jobs: Dict[str, List[Job]] = defaultdict(list)
    for job in groups.values():
        for process in job.processes.values():
            if job not in node_jobs[process.node]:
                node_jobs[process.node].append(job)
    for key, process in procs.items():
        if not process.communicators:
            hosts = node_jobs.get(process.node) or (list(groups.values()) if len(groups) == 1 else [])
            if len(hosts) == 1:
                hosts[0].processes[key] = process
                jobs_of_file[process.file] = hosts
    for event in events:
        known = jobs_of_file.get(event.file)
        for job in known if known is not None else _owners(event, groups.values(), node_jobs):
            job.events.append(event)
    return sorted(groups.values(), key=lambda job: job.name)


def _owners(event: Event, jobs: Iterable[Job], node_jobs: Dict[str, List[Job]]) -> List[Job]:
    """The job(s) a console, device or kernel line belongs to."""
    here = node_jobs.get(event.node, [])
    if event.pid is not None:
        named = [job for job in here if job.process_of(event.node, pid=event.pid)]
        if named:
            return named
    if event.rank is not None and len(here) > 1:
        named = [job for job in here if job.process_of(event.node, rank=event.rank)]
        if named:
            return named[:1]
    if here:
        return here
    all_jobs = list(jobs)
    return all_jobs if len(all_jobs) == 1 else []
