"""Which rank failed first: the root-rank rules, each a small function over one job.

When one rank fails, every rank of its communicator soon reports a timeout, so "who reported an
error" says little. Each rule below reads what HCCL itself prints and decides only where the logs
allow it; the order is the one MindCluster's fault diagnosis uses (Ascend/mind-cluster
``component/ascend-faultdiag``, ``pkg/diag/root_cluster``): RDMA error-CQE links, HCCL's own
cluster-exception location, transport wait chains, then the timeouts of the communicator that
failed first (ranks that did not report, processes that died, the last reporter, TLS, the notify
op index and tag). A rule that cannot decide returns suspects, or nothing; where no rule decides,
the answer says so and lists the suspects.

Times of two nodes are compared in one rule only (the last reporter), and only when the spread
passes the timeout by more than :data:`~ascendprep.base.limits.DIAGNOSE_CLOCK_SKEW_S`.

Pure: a job in, verdicts out.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ascendprep.base.limits import DIAGNOSE_CLOCK_SKEW_S
from ascendprep.diagnose.job import Job, ProcKey
from ascendprep.diagnose.model import Culprit, Event, Process, Verdict

#: HCCL's defaults when the logs do not print the setting (HCCL troubleshooting guide: the
#: execution timeout defaults to 1836 s; HCCL_CONNECT_TIMEOUT to 120 s).
DEFAULT_EXEC_TIMEOUT_S = 1836
DEFAULT_CONNECT_TIMEOUT_S = 120

TIMEOUT_KEYS = ("hccl.notify_wait_timeout", "hccl.socket_timeout", "hccl.topo_exchange_timeout")


@dataclass
class Context:
    """A job and what resolves its addresses: device IP -> (node, NPU) from the inventory, and the
    TLS switch of each (node, NPU) read from the collected NPU state."""

    job: Job
    inventory_ips: Mapping[str, Tuple[str, int]] = field(default_factory=dict)
    tls: Mapping[Tuple[str, int], int] = field(default_factory=dict)

    def culprit(self, process: Process) -> Culprit:
        ip = process.device_ip or self._ip_of(process.node, process.device)
        inv = self.inventory_ips.get(ip) if ip else None
        return Culprit(
            node=process.node,
            rank=process.rank,
            device=process.device if process.device is not None else (inv[1] if inv else None),
            device_ip=ip,
            inventory_node=inv[0] if inv else None,
        )

    def _ip_of(self, node: str, device: Optional[int]) -> Optional[str]:
        for ip, (inv_node, npu) in self.inventory_ips.items():
            if inv_node == node and npu == device:
                return ip
        return None

    def process_by_ip(self, ip: str) -> Optional[Process]:
        """The process whose NPU has device IP ``ip``: as its own log printed it, else the
        inventory's (node, NPU) for that IP."""
        process = self.job.by_ip(ip)
        inv = self.inventory_ips.get(ip)
        if process is None and inv is not None:
            for candidate in self.job.processes.values():
                if candidate.node == inv[0] and candidate.device == inv[1]:
                    return candidate
        return process

    def by_ip(self, ip: str) -> Culprit:
        """The process whose NPU has device IP ``ip``, else the inventory's NPU, else the bare IP."""
        process = self.process_by_ip(ip)
        if process is not None:
            return self.culprit(process)
        inv = self.inventory_ips.get(ip)
        return Culprit(
            node=inv[0] if inv else None,
            device=inv[1] if inv else None,
            device_ip=ip,
            inventory_node=inv[0] if inv else None,
        )

    def process_of(self, event: Event) -> Optional[Process]:
        if (event.node, event.file) in self.job.processes:
            return self.job.processes[(event.node, event.file)]
        return (
            self.job.process_of(event.node, pid=event.pid)
            if event.pid is not None
            else (self.job.process_of(event.node, rank=event.rank) if event.rank is not None else None)
        )

    def events(self, *keys: str) -> List[Event]:
        return [event for event in self.job.events if event.key in keys]

    def facts(self, fact: str) -> List[Event]:
        return [event for event in self.job.events if event.attr("fact") == fact]


def _first_per_process(ctx: Context, events: Sequence[Event]) -> Dict[ProcKey, Event]:
    first: Dict[ProcKey, Event] = {}
    for event in events:
        process = ctx.process_of(event)
        if process is None:
            continue
        key = (process.node, process.file)
        if key not in first or event.seq < first[key].seq:
            first[key] = event
    return first


# --- the rules ------------------------------------------------------------------------------------


def rule_cqe_links(ctx: Context) -> Optional[Verdict]:
    """RDMA error CQEs: each names the peer it could not reach. The NPU most links point at is the
    root when several converge on it; when every link comes from one NPU whose peers were alive
    (they reported the job's timeout themselves), that NPU's side of the link failed."""
    cqes = [e for e in ctx.events("hccl.cqe_error", "hccl.ei0013") if e.attr("peer_ip")]
    if not cqes:
        return None
    links: Dict[Tuple[ProcKey, str], Event] = {}
    for event in cqes:
        process = ctx.process_of(event)
        if process is None:
            continue
        links.setdefault(((process.node, process.file), event.attr("peer_ip") or ""), event)
    if not links:
        return None
    targets = Counter(peer for (_src, peer) in links)
    sources = {src for (src, _peer) in links}
    evidence = tuple(sorted(links.values(), key=lambda e: (e.node, e.seq)))[:8]
    top, count = targets.most_common(1)[0]
    if count >= 2 and count > len(links) / 2:
        return Verdict(
            "cqe-links",
            (ctx.by_ip(top),),
            f"{count} of {len(links)} error-CQE links point at device IP {top}: the NPU they converge on",
            evidence,
        )
    if len(sources) == 1:
        src = next(iter(sources))
        process = ctx.job.processes[src]
        peers = [ctx.process_by_ip(peer) for (_s, peer) in links]
        reported = {(p.node, p.file) for p in _reporters(ctx)}
        if all(peer is not None and (peer.node, peer.file) in reported for peer in peers):
            return Verdict(
                "cqe-links",
                (ctx.culprit(process),),
                "only this NPU's RDMA retransmissions ran out (error CQE); its peer(s) "
                + ", ".join(sorted(peer for (_s, peer) in links))
                + " were alive and reported the job's timeout like every other rank: the fault is on this NPU's side of the link",
                evidence,
            )
    suspects: Dict[str, Culprit] = {}
    for src, peer in links:
        for culprit in (ctx.culprit(ctx.job.processes[src]), ctx.by_ip(peer)):
            suspects.setdefault(culprit.label, culprit)
    return Verdict("cqe-links", (), "error-CQE links do not converge on one NPU", evidence, tuple(suspects.values()))


def rule_cluster_exception(ctx: Context) -> Optional[Verdict]:
    """HCCL's cluster heartbeat names the rank where the fault started (``Cluster Exception
    Location[IP/ID]``); the location most reports agree on is the root."""
    events = ctx.events("hccl.cluster_exception")
    votes = Counter(e.attr("peer_ip") or "" for e in events if e.attr("peer_ip"))
    if not votes:
        return None
    (ip, count), *rest = votes.most_common()
    if rest and rest[0][1] == count:
        suspects = tuple(ctx.by_ip(candidate) for candidate, n in votes.items() if n == count)
        return Verdict(
            "cluster-exception",
            (),
            "HCCL's cluster exception names more than one location equally",
            tuple(events[:8]),
            suspects,
        )
    kinds = sorted({e.attr("exception") or "" for e in events if e.attr("peer_ip") == ip} - {""})
    culprit = ctx.by_ip(ip)
    device = next((e.attr("peer_device") for e in events if e.attr("peer_ip") == ip), None)
    if culprit.device is None and device is not None and culprit.node is None:
        culprit = Culprit(node=None, device=None, device_ip=ip)
    reason = f"HCCL's cluster heartbeat located the exception at {ip}/{device}" + (
        f" ({', '.join(kinds)})" if kinds else ""
    )
    return Verdict("cluster-exception", (culprit,), reason, tuple(e for e in events if e.attr("peer_ip") == ip)[:8])


def _walk(edges: Mapping[int, int]) -> Tuple[List[int], List[int]]:
    """Where the wait chains of ``edges`` (rank -> the rank it waits on) end, and the first
    cycle met (empty when none); each rank's chain is followed, none of the chains' starts is
    preferred (their times come from different clocks)."""
    ends: List[int] = []
    for start in sorted(edges):
        path = [start]
        while path[-1] in edges:
            nxt = edges[path[-1]]
            if nxt in path:
                return ends, path[path.index(nxt) :]
            path.append(nxt)
        if path[-1] not in ends:
            ends.append(path[-1])
    return ends, []


def _chain_verdict(ctx: Context, rule: str, what: str, edges: Mapping[int, int], evidence: Sequence[Event]) -> Verdict:
    ends, cycle = _walk(edges)
    if cycle:
        reason = f"{what} wait chain " + " -> ".join(map(str, cycle + [cycle[0]])) + " is a mutual wait"
        return Verdict(rule, tuple(_rank_culprit(ctx, rank) for rank in cycle), reason, tuple(evidence[:8]))
    if len(ends) == 1:
        reason = f"every {what} wait chain ends at rank {ends[0]}, which waits on nobody"
        return Verdict(rule, (_rank_culprit(ctx, ends[0]),), reason, tuple(evidence[:8]))
    reason = f"the {what} wait chains end at ranks {', '.join(map(str, ends))}"
    return Verdict(rule, (), reason, tuple(evidence[:8]), tuple(_rank_culprit(ctx, rank) for rank in ends))


def rule_transport_chain(ctx: Context) -> Optional[Verdict]:
    """Transport init errors name local -> peer rank: the end of the wait chains (a rank that
    waits on nobody), or a mutual-wait cycle, is the root."""
    events = [e for e in ctx.events("hccl.transport_init") if e.attr("peer_rank") and e.attr("local_rank")]
    if not events:
        return None
    edges: Dict[int, int] = {}
    for event in events:
        edges.setdefault(int(event.attr("local_rank") or 0), int(event.attr("peer_rank") or 0))
    return _chain_verdict(ctx, "transport-chain", "transport", edges, events)


def rule_socket_chain(ctx: Context) -> Optional[Verdict]:
    """The socket table HCCL prints when links time out (``LINK_ERROR_INFO``: dest_ip(rank) |
    dest_port | src_ip(rank) | src_port | role | status | TLS) names the rank each rank waited
    for: the end of the wait chains, or a mutual-wait cycle, is the root."""
    rows = [e for e in ctx.facts("link_row") if (e.attr("dest_rank") or "").isdigit()]
    if not rows:
        return None
    edges: Dict[int, int] = {}
    for event in rows:
        process = ctx.process_of(event)
        local = (
            process.rank if process is not None and process.rank is not None else _int_or_none(event.attr("src_rank"))
        )
        if local is not None:
            edges.setdefault(local, int(event.attr("dest_rank") or 0))
    edges = {local: peer for local, peer in edges.items() if local != peer}
    if not edges:
        return None
    return _chain_verdict(ctx, "socket-chain", "socket", edges, rows)


def _int_or_none(value: Optional[str]) -> Optional[int]:
    return int(value) if value is not None and value.isdigit() else None


def _rank_culprit(ctx: Context, rank: int) -> Culprit:
    process = ctx.job.by_rank(rank)
    return ctx.culprit(process) if process else Culprit(node=None, rank=rank)


def _reporters(ctx: Context) -> List[Process]:
    found = _first_per_process(ctx, ctx.events(*TIMEOUT_KEYS))
    return [ctx.job.processes[key] for key in found if key in ctx.job.processes]


def _failing_group(ctx: Context) -> Tuple[Optional[str], int]:
    """The communicator that failed and its size: the group the timeout reports name most, else
    the job's world communicator."""
    groups = Counter(e.attr("group") for e in ctx.facts("group_rank") if e.attr("group"))
    if groups:
        group = groups.most_common(1)[0][0] or ""
        sizes = [int(e.attr("rank_size") or 0) for e in ctx.facts("group_rank") if e.attr("group") == group]
        return group, max(sizes + [ctx.job.communicators.get(group, 0)])
    return ctx.job.name, ctx.job.world_size or 0


def rule_silent_ranks(ctx: Context) -> Optional[Verdict]:
    """Ranks of the failing communicator that did not report the timeout every other rank
    reported: they were not waiting, they were the ones waited for (died, hung, or never came)."""
    reporters = _reporters(ctx)
    if len(reporters) < 2:
        return None
    group, size = _failing_group(ctx)
    if not size:
        return None
    members: Dict[int, Process] = {}
    for process in ctx.job.processes.values():
        if group in process.communicators or (group == ctx.job.name and process.rank is not None):
            rank = _rank_in(ctx, process, group)
            if rank is not None:
                members[rank] = process
    reported = {(p.node, p.file) for p in reporters}
    silent = [
        rank for rank in range(size) if rank not in members or (members[rank].node, members[rank].file) not in reported
    ]
    if not silent or len(silent) >= size / 2:
        return None
    culprits = []
    notes = []
    for rank in silent:
        if rank in members:
            culprits.append(ctx.culprit(members[rank]))
            notes.append(f"rank {rank} logged nothing about the timeout")
        else:
            culprits.append(Culprit(node=None, rank=rank))
            notes.append(f"rank {rank} left no log (died or never started)")
    evidence = tuple(_first_per_process(ctx, ctx.events(*TIMEOUT_KEYS)).values())[:4]
    return Verdict(
        "silent-ranks",
        tuple(culprits),
        f"{len(reporters)} of {size} ranks of communicator {group} reported the timeout; " + "; ".join(notes),
        evidence,
    )


def _rank_in(ctx: Context, process: Process, group: Optional[str]) -> Optional[int]:
    for event in ctx.job.events:
        if event.file == process.file and event.node == process.node:
            fact = event.attr("fact")
            if fact == "comm_init" and event.attr("identifier") == group and event.attr("rank") is not None:
                return int(event.attr("rank") or 0)
            if fact == "group_rank" and event.attr("group") == group and event.attr("rank_id") is not None:
                return int(event.attr("rank_id") or 0)
    return process.rank if group == ctx.job.name else None


def rule_died(ctx: Context) -> Optional[Verdict]:
    """Init (root info): the root rank lists the ranks that reached it (``connected
    rankinfo[LINE n]: [id],[id],...;``, eight per line, after ``need connect rankNum is [N]``).
    Ranks missing from it that left no plog are processes that died or never started; when every
    missing rank left a plog (they ran, but could not reach the root), the root rank's host side
    is at fault (its network, TCP backlog or open files)."""
    lists = [e for e in ctx.facts("connected") if e.attr("connected")]
    if not lists:
        return None
    connected = {int(rank) for e in lists for rank in re.findall(r"\[(\d+)\]", e.attr("connected") or "")}
    needed = [int(e.attr("need") or 0) for e in ctx.facts("need_connect") if (e.attr("need") or "").isdigit()]
    size = max(needed) if needed else ctx.job.world_size
    if not size:
        return None
    have_log = {p.rank for p in ctx.job.processes.values() if p.rank is not None}
    missing = [rank for rank in range(size) if rank not in connected]
    if not missing:
        return None
    dead = [rank for rank in missing if rank not in have_log]
    if dead:
        return Verdict(
            "died",
            tuple(Culprit(node=None, rank=rank) for rank in dead),
            f"{len(connected)} of {size} ranks reached the root rank; ranks "
            + ", ".join(map(str, dead))
            + " did not and left no plog: their processes died or never started",
            tuple(lists[:2]),
        )
    root = ctx.process_of(lists[0])
    if root is None:
        return None
    return Verdict(
        "died",
        (ctx.culprit(root),),
        "ranks " + ", ".join(map(str, missing)) + " ran but never reached the root rank: its host network, "
        "TCP backlog or open files (ulimit -n) are the likely cause",
        tuple(lists[:2]),
    )


def _timeout_setting(ctx: Context, fact: str, default: int) -> int:
    values = [int(e.attr("seconds") or 0) for e in ctx.facts(fact) if (e.attr("seconds") or "").isdigit()]
    return max(values) if values else default


def _clock(time: Optional[str]) -> Optional[datetime]:
    if not time:
        return None
    try:
        return datetime.strptime(time[:23], "%Y-%m-%d-%H:%M:%S.%f")
    except ValueError:
        return None


def rule_last_reporter(ctx: Context) -> Optional[Verdict]:
    """Every rank reported the timeout, but over a spread wider than the timeout itself: the last
    one arrived late (its peers had waited the whole timeout before it even started)."""
    first = _first_per_process(ctx, ctx.events("hccl.notify_wait_timeout", "hccl.socket_timeout"))
    timed = [(when, key, event) for key, event in first.items() if (when := _clock(event.time)) is not None]
    if len(timed) < 2:
        return None
    timed.sort(key=lambda item: item[0])
    socket = any(event.key == "hccl.socket_timeout" for _w, _k, event in timed)
    timeout = (
        _timeout_setting(ctx, "connect_timeout", DEFAULT_CONNECT_TIMEOUT_S)
        if socket
        else _timeout_setting(ctx, "exec_timeout", DEFAULT_EXEC_TIMEOUT_S)
    )
    spread = (timed[-1][0] - timed[0][0]).total_seconds()
    if spread <= timeout + DIAGNOSE_CLOCK_SKEW_S:
        return None
    last = timed[-1]
    return Verdict(
        "last-reporter",
        (ctx.culprit(ctx.job.processes[last[1]]),),
        f"the timeout reports spread over {spread:.0f} s, more than the {timeout} s timeout (+{DIAGNOSE_CLOCK_SKEW_S} s for clock skew): the last reporter arrived late",
        (timed[0][2], last[2]),
    )


def rule_tls_minority(ctx: Context) -> Optional[Verdict]:
    """TLS switch differs between the job's NPUs: the minority state cannot link with the rest."""
    states: Dict[Tuple[str, int], int] = {}
    for process in ctx.job.processes.values():
        if process.device is not None and (process.node, process.device) in ctx.tls:
            states[(process.node, process.device)] = ctx.tls[(process.node, process.device)]
    for event in ctx.facts("tls") + ctx.facts("link_row"):
        owner = ctx.process_of(event)
        word = (event.attr("tls") or "").upper()
        word = {"ENABLE": "1", "DISABLE": "0"}.get(word, word)
        if owner is not None and owner.device is not None and word.isdigit():
            states.setdefault((owner.node, owner.device), int(word))
    counts = Counter(states.values())
    if len(counts) < 2:
        return None
    minority, n = min(counts.items(), key=lambda item: (item[1], item[0]))
    if n * 2 >= len(states):
        return None
    culprits = []
    for (node, device), value in sorted(states.items()):
        if value == minority:
            holder = next((p for p in ctx.job.processes.values() if p.node == node and p.device == device), None)
            culprits.append(ctx.culprit(holder) if holder else Culprit(node=node, device=device))
    evidence = tuple(ctx.events("hccl.tls_inconsistent")[:4])
    return Verdict(
        "tls-minority",
        tuple(culprits),
        f"TLS switch is {minority} on {n} NPU(s) and {1 - minority if minority in (0, 1) else 'otherwise'} on the other {len(states) - n}",
        evidence,
    )


def _notify_facts(ctx: Context) -> Dict[ProcKey, Dict[str, str]]:
    """Per process that reported a notify timeout: the op index and tag its task exception names."""
    failing = {key for key in _first_per_process(ctx, ctx.events("hccl.notify_wait_timeout"))}
    found: Dict[ProcKey, Dict[str, str]] = defaultdict(dict)
    for event in ctx.job.events:
        process = ctx.process_of(event)
        if process is None or (process.node, process.file) not in failing:
            continue
        key = (process.node, process.file)
        fact = event.attr("fact")
        if fact == "op_data" and event.attr("index") and "[ERROR]" in event.text:
            found[key].setdefault("index", event.attr("index") or "")
        if fact == "base_info" and event.attr("tag") is not None and "[ERROR]" in event.text:
            found[key].setdefault("tag", event.attr("tag") or "")
    return found


def rule_notify_index(ctx: Context) -> Optional[Verdict]:
    """Ranks that timed out in different ops of one communicator: the one with the smallest op
    index is stuck behind the others (they went on to later ops and waited for it)."""
    facts = {key: int(value["index"]) for key, value in _notify_facts(ctx).items() if value.get("index", "").isdigit()}
    if len(set(facts.values())) < 2:
        return None
    low = min(facts.values())
    culprits = tuple(ctx.culprit(ctx.job.processes[key]) for key, index in sorted(facts.items()) if index == low)
    return Verdict(
        "notify-index",
        culprits,
        f"the ranks timed out in ops {sorted(set(facts.values()))}; op index {low} is the earliest: those ranks are behind",
    )


def rule_notify_tag(ctx: Context) -> Optional[Verdict]:
    """Ranks that timed out in differently tagged ops (AllReduce on most, AllGather on one): the
    rarest tag shows the rank that called a different operator."""
    facts = {key: value["tag"] for key, value in _notify_facts(ctx).items() if value.get("tag")}
    counts = Counter(facts.values())
    if len(counts) < 2:
        return None
    rare, n = min(counts.items(), key=lambda item: (item[1], item[0]))
    if n * 2 >= len(facts):
        return None
    culprits = tuple(ctx.culprit(ctx.job.processes[key]) for key, tag in sorted(facts.items()) if tag == rare)
    return Verdict(
        "notify-tag", culprits, f"{n} rank(s) ran {rare} while {len(facts) - n} ran {counts.most_common(1)[0][0]}"
    )


def rule_notify_remote(ctx: Context) -> Optional[Verdict]:
    """Each timed-out rank names the rank it waited for (``remote rank [N]``, or ``local``: its own
    secondary stream). A rank that waits on itself and is waited on by others is the root; else
    the rank where every wait chain ends is, and a cycle is a deadlock (ops called in different
    orders): no root, the ranks of the cycle are suspects."""
    reporting = _first_per_process(ctx, ctx.events("hccl.notify_wait_timeout"))
    waits: Dict[int, str] = {}
    for event in ctx.facts("remote_rank"):
        process = ctx.process_of(event)
        value = (event.attr("remote_rank") or "").lower()
        if process is None or process.rank is None or (process.node, process.file) not in reporting:
            continue
        if value.isdigit() or value == "local":
            waits.setdefault(process.rank, value)
    if len(waits) < 2:
        return None
    waited = {int(value) for value in waits.values() if value.isdigit()}
    selfish = sorted(rank for rank, value in waits.items() if value == "local" and rank in waited)
    if selfish:
        return Verdict(
            "notify-remote",
            tuple(_rank_culprit(ctx, rank) for rank in selfish),
            f"rank(s) {', '.join(map(str, selfish))} waited on their own secondary stream while the others waited on them",
        )
    ends = set()
    for start in sorted(waits):
        path = [start]
        while waits.get(path[-1], "").isdigit():
            nxt = int(waits[path[-1]])
            if nxt in path:
                cycle = path[path.index(nxt) :]
                return Verdict(
                    "notify-remote",
                    (),
                    "notify waits form a cycle "
                    + " -> ".join(map(str, cycle + [nxt]))
                    + ": a deadlock (ops called in different orders), no single root",
                    suspects=tuple(_rank_culprit(ctx, rank) for rank in cycle),
                )
            path.append(nxt)
        ends.add(path[-1])
    if len(ends) != 1 or next(iter(ends)) in waits:
        return None
    end = next(iter(ends))
    return Verdict(
        "notify-remote",
        (_rank_culprit(ctx, end),),
        f"every notify wait chain ends at rank {end}, which waits on nobody",
    )


#: The rules in the order they are tried; the first that decides names the root.
RULES: Tuple[Tuple[str, Callable[[Context], Optional[Verdict]]], ...] = (
    ("cqe-links", rule_cqe_links),
    ("cluster-exception", rule_cluster_exception),
    ("transport-chain", rule_transport_chain),
    ("silent-ranks", rule_silent_ranks),
    ("died", rule_died),
    ("tls-minority", rule_tls_minority),
    ("socket-chain", rule_socket_chain),
    ("last-reporter", rule_last_reporter),
    ("notify-index", rule_notify_index),
    ("notify-tag", rule_notify_tag),
    ("notify-remote", rule_notify_remote),
)


def decide(ctx: Context) -> Tuple[Optional[Verdict], List[Verdict]]:
    """The first verdict that names a root, and every verdict the rules gave (the undecided
    ones carry suspects)."""
    given: List[Verdict] = []
    for _name, rule in RULES:
        verdict = rule(ctx)
        if verdict is None:
            continue
        given.append(verdict)
        if verdict.decided:
            return verdict, given
    return None, given


def erroring(ctx: Context) -> List[Culprit]:
    """Every process with an error event, for the list of suspects when no rule decides."""
    seen: Dict[ProcKey, Culprit] = {}
    for event in ctx.job.events:
        if event.key is None:
            continue
        process = ctx.process_of(event)
        if process is not None:
            seen.setdefault((process.node, process.file), ctx.culprit(process))
    return list(seen.values())
