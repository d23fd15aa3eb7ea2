"""Reading one log file: what kind it is, and the events in it, streamed with bounded memory.

A file's kind comes from its name where the name tells it (CANN's ``plog-<pid>_<time>.log`` and
``device-<pid>_<time>.log``, the console logs ``rank-N.txt`` / ``worker-N.log`` that MindCluster's
fault diagnosis reads, ``messages`` / ``dmesg`` / ``kern.log``), else from its first bytes (a plog
line starts ``[ERROR] HCCL(pid,proc):``, a kernel line ``[  12.345678]`` or ``Mon DD HH:MM:SS host
kernel:``); a file with NUL bytes at its start is binary and not read.

The file is read in chunks (:data:`~ascendprep.base.limits.DIAGNOSE_READ_CHUNK_BYTES`); each
chunk is cut at its last newline (a newline is never inside a UTF-8 sequence, so no character is
split), decoded with undecodable bytes replaced, and searched once with an Aho-Corasick automaton
of every literal the knowledge base and the HCCL facts need (``pyahocorasick``). Only the lines
that hold a literal are cut out and looked at; an entry's own regular expression runs on those
lines only. A line longer than :data:`~ascendprep.base.limits.DIAGNOSE_LINE_MAX_CHARS` is read up
to the cap, the rest skipped, and counted as truncated. In a CANN log (plog, device log), whose
lines all start with their level, a fault is matched only on ERROR, WARNING and EVENT lines and the
INFO lines are read for the facts HCCL prints there (rank, communicator, device IP, timeouts):
those lines are found with ``bytes.find`` before anything is decoded.

Pure but for reading the binary stream it is given.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import BinaryIO, Callable, Dict, List, Optional, Tuple

import ahocorasick

from ascendprep.base.limits import DIAGNOSE_EVENTS_PER_ENTRY, DIAGNOSE_LINE_MAX_CHARS, DIAGNOSE_READ_CHUNK_BYTES
from ascendprep.diagnose.model import CONSOLE, DEVICE, KERNEL, PLOG, Event, FileStats, LogFile
from ascendprep.verify.knowledge import Entry, KnowledgeBase

# --- what a file is ---------------------------------------------------------------------------------

_PLOG_NAME = re.compile(r"^plog-(\d{1,10})_\d{1,20}\.log$")
_DEVICE_NAME = re.compile(r"^device-(\d{1,10})_\d{1,20}\.log$")
_CONSOLE_NAME = re.compile(r"^(?:rank|worker)[-_](\d{1,6})(?:\..*?)?\.(?:txt|log)$")
_KERNEL_NAME = re.compile(r"^(?:messages|dmesg|kern\.log|kernel\.log|syslog|vmcore_dmesg\.txt)(?:[-.][\w.-]*)?$")
_PLOG_HEAD = re.compile(rb"^\[(?:ERROR|WARNING|INFO|DEBUG|EVENT|TRACE)\] ?[A-Z_]+\(\d+,")
_KERNEL_HEAD = re.compile(
    rb"^(?:\[\s*\d+\.\d+\]|\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ kernel:|\d{4}-\d\d-\d\dT\S+ \S+ kernel:)"
)
_CONSOLE_HEAD = re.compile(rb"Traceback \(most recent call last\)|\(PID:\d+, Device:|\[rank\d+\]:|E[A-Z0-9]\d{4}: ")

#: Bytes of a file's start read to tell its kind and whether it is binary.
HEAD_BYTES = 8192


def kind_of(
    name: str, head: bytes, under_device_dir: bool = False
) -> Tuple[Optional[str], Optional[int], Optional[int]]:
    """(kind, pid, rank) of a file from its name, else its first bytes; kind None: not a log
    diagnose reads. ``under_device_dir``: the file sits in a ``device-<id>`` folder or a bundle's
    ``device/`` folder (CANN's device-side application logs)."""
    if b"\x00" in head:
        return None, None, None
    found = _PLOG_NAME.match(name)
    if found:
        return (DEVICE if under_device_dir else PLOG), int(found.group(1)), None
    found = _DEVICE_NAME.match(name)
    if found:
        return DEVICE, int(found.group(1)), None
    found = _CONSOLE_NAME.match(name)
    if found:
        return CONSOLE, None, int(found.group(1))
    if _KERNEL_NAME.match(name):
        return KERNEL, None, None
    first = head.lstrip()[:1024]
    if _PLOG_HEAD.match(first):
        return (DEVICE if under_device_dir else PLOG), None, None
    if _KERNEL_HEAD.match(first):
        return KERNEL, None, None
    if _CONSOLE_HEAD.search(head):
        return CONSOLE, None, None
    return None, None, None


# --- the facts HCCL prints about a process (read, not matched against the knowledge base) --------

#: Literal -> fact name: lines that carry a process's rank, communicator, device, settings.
FACT_LITERALS: Dict[str, str] = {
    "Entry-HcclCommInit": "comm_init",
    "groupRank information is group:[": "group_rank",
    "opData information is": "op_data",
    "base information is streamID": "base_info",
    "connected rankinfo": "connected",
    "need connect rankNum is [": "need_connect",
    "attr init success": "resume",
    "HcclCommResume:success": "resume",
    "| client |": "link_row",
    "| server |": "link_row",
    "HCCL_EXEC_TIMEOUT": "exec_timeout",
    "ExecTimeOut is set": "exec_timeout",
    "HCCL_CONNECT_TIMEOUT is set": "connect_timeout",
    "remote rank": "remote_rank",
    "deviceIp[": "device_ip",
    "tls switch[": "tls",
    "TlsStatus": "tls",
}

#: What finds, in a CANN log's INFO lines, the lines with the facts of :data:`FACT_LITERALS` that
#: HCCL prints at INFO (the rest are on its ERROR lines, read anyway); fewer, shorter needles:
#: ``_TIMEOUT`` finds both HCCL_EXEC_TIMEOUT and HCCL_CONNECT_TIMEOUT.
INFO_FACT_NEEDLES = (
    "attr init success",
    "HcclCommResume:success",
    "Entry-HcclCommInit",
    "deviceIp[",
    "_TIMEOUT",
    "TimeOut is set",
    "tls switch[",
    "TlsStatus",
    "connected rankinfo",
)

_FIELD = {
    "rank": re.compile(r"(?<![A-Za-z])rank\[(\d+)\]"),
    "ranks": re.compile(r"\branks\[(\d+)\]"),
    "identifier": re.compile(r"identifier\[([^\]]+)\]"),
    "device": re.compile(r"(?:deviceLogicId|logicDevId|deviceId)\[(\d+)\]"),
    "group": re.compile(r"group:\[([^\]]*)\]"),
    "rank_size": re.compile(r"rankSize\[(\d+)\]"),
    "rank_id": re.compile(r"rankId\[(\d+)\]"),
    "index": re.compile(r"\bindex\[(\d+)\]"),
    "tag": re.compile(r"\btag\[([^\]]*)\]"),
    "device_ip": re.compile(r"deviceIp\[([0-9a-fA-F.:]+)\]"),
    "remote_rank": re.compile(r"remote rank[:\s]*\[(\w+)\]"),
    "seconds": re.compile(r"(?:HCCL_EXEC_TIMEOUT|ExecTimeOut|HCCL_CONNECT_TIMEOUT)\D{0,40}?(\d{1,7})"),
    "connected": re.compile(r"connected rankinfo\[LINE \d+\]:\s*((?:\[\d+\][,;\s]*)+)"),
    "need": re.compile(r"need connect rankNum is \[(\d+)\]"),
    "resume": re.compile(r"(attr init success|HcclCommResume:success)"),
    "link_row": re.compile(
        r"\|\s*(?P<dest_ip>[0-9a-fA-F.:]+)\((?P<dest_rank>\d+)\)\s*\|\s*\d+\s*\|\s*(?P<src_ip>[0-9a-fA-F.:]+)"
        r"\((?P<src_rank>\d+)\)\s*\|\s*\d+\s*\|\s*(?P<role>\w+)\s*\|\s*(?P<status>[\w ]+?)\s*\|(?:\s*(?P<tls>[A-Z]+)\s*\|)?"
    ),
    "tls": re.compile(r"(?:tls switch|TlsStatus)\D{0,4}(\d)"),
}

_PLOG_LINE = re.compile(
    r"^\[(?P<level>[A-Z]+)\] ?(?P<module>[A-Z_]+)\((?P<pid>\d+),[^)]*\):"
    r"(?P<time>\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3})"
)
_TORCH_LINE = re.compile(r"\(PID:(?P<pid>\d+), Device:(?P<device>-?\d+), RankID:(?P<rank>-?\d+)\)")
_CANN_CONSOLE = re.compile(r"\[PID: (?P<pid>\d+)\] (?P<time>\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3})")
_RANK_PREFIX = re.compile(r"^\[rank(?P<rank>\d+)\]:")
_KERNEL_TIME = re.compile(r"^\[\s*(?P<time>\d+\.\d+)\]|^(?P<stime>\w{3} [ \d]\d \d\d:\d\d:\d\d)")
_CQE_PEER = re.compile(
    r"remoteIP\{[^}]*deviceIp\[(?P<ip>[^\]]+)\]|remoteIP:\[(?P<ip2>[^\]]+)\]|\bip:\[(?P<ip3>[^\]]+)\]"
)
_CQE_LOCAL = re.compile(r"localInfo\{[^}]*deviceId\[(?P<dev>[^\]]+)\][^}]*deviceIp\[(?P<ip>[^\]]+)\]")
_CQE_TIME = re.compile(r"time:\[(?P<time>[^\]]+)\]")
_EI0013 = re.compile(
    r"Local information: server (?P<lserver>\S+), device ID (?P<ldev>\d+), device IP (?P<lip>[^.\s]+(?:\.\d+){3})\. "
    r"Peer information: server (?P<pserver>\S+), device ID (?P<pdev>\d+), device IP (?P<pip>\d+(?:\.\d+){3})"
)


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def fact_attrs(fact: str, line: str) -> Dict[str, str]:
    """The fields a fact line carries (``rank``, ``identifier``, ``tag``...), as printed."""
    names = {
        "comm_init": ("rank", "ranks", "identifier", "device"),
        "group_rank": ("group", "rank_size", "rank_id"),
        "op_data": ("device", "index"),
        "base_info": ("tag",),
        "connected": ("connected",),
        "need_connect": ("need",),
        "link_row": ("link_row",),
        "resume": ("resume",),
        "exec_timeout": ("seconds",),
        "connect_timeout": ("seconds",),
        "remote_rank": ("remote_rank",),
        "device_ip": ("device_ip", "rank", "device"),
        "tls": ("tls", "device_ip", "rank"),
    }[fact]
    found: Dict[str, str] = {}
    for name in names:
        match = _FIELD[name].search(line)
        if match and match.groupdict():
            found.update({key: value for key, value in match.groupdict().items() if value is not None})
        elif match:
            found[name] = match.group(1).strip()
    return found


def cqe_attrs(line: str) -> Dict[str, str]:
    """The peer (and local end, where printed) of an error-CQE line."""
    found: Dict[str, str] = {}
    peer = _CQE_PEER.search(line)
    if peer:
        found["peer_ip"] = next(value for value in peer.groups() if value)
    local = _CQE_LOCAL.search(line)
    if local:
        found["local_ip"] = local.group("ip")
    when = _CQE_TIME.search(line)
    if when:
        found["hccl_time"] = when.group("time")
    both = _EI0013.search(line)
    if both:
        found.update(local_ip=both.group("lip"), peer_ip=both.group("pip"), peer_device=both.group("pdev"))
        found["local_device"] = both.group("ldev")
    return found


#: Where a CANN log line that can hold a fault starts (after a newline), and the levels whose
#: lines hold only facts (CANN log levels: DEBUG, INFO, WARNING, ERROR, EVENT).
_LEVEL_MARKERS = (b"\n[ERROR]", b"\n[WARNING]", b"\n[EVENT]")
_QUIET_LEVELS = ("[INFO]", "[DEBUG]", "[TRACE]")

# --- the scanner --------------------------------------------------------------------------------------

Sink = Callable[[Event], None]


class Scanner:
    """The automaton of every literal, built once per knowledge base and used for every file."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.automaton = ahocorasick.Automaton()
        owners: Dict[str, List[Tuple[str, object]]] = defaultdict(list)
        for entry in kb.entries:
            for group in entry.match:
                # The longest literal of an alternative is the rarest: it alone chooses the lines.
                owners[max(group, key=len)].append(("entry", entry))
        for literal, fact in FACT_LITERALS.items():
            owners[literal].append(("fact", fact))
        for literal, owned in owners.items():
            self.automaton.add_word(literal, tuple(owned))
        self.automaton.make_automaton()
        self.fact_bytes = tuple(literal.encode() for literal in INFO_FACT_NEEDLES)

    def scan(self, stream: BinaryIO, log: LogFile, sink: Sink, stats: Optional[FileStats] = None) -> FileStats:
        """Every event of ``stream`` (the file ``log``) handed to ``sink`` in the file's order."""
        stats = stats or FileStats()
        kept: Dict[str, int] = defaultdict(int)
        counts: Dict[str, int] = defaultdict(int)
        lineno = 0
        tail = b""
        skipping = False  # inside a line longer than the cap, after the part kept
        seq = [0]

        def handle(text: str, number: int) -> None:
            self._line(text, number, log, sink, kept, counts, stats, seq)

        while True:
            chunk = stream.read(DIAGNOSE_READ_CHUNK_BYTES)
            if not chunk:
                break
            buffer = tail + chunk
            cut = buffer.rfind(b"\n")
            if cut < 0:
                # No newline yet: keep up to the cap of this line, drop the rest of it.
                if skipping:
                    tail = b""
                elif len(buffer) > DIAGNOSE_LINE_MAX_CHARS:
                    lineno += 1
                    stats.truncated_lines += 1
                    handle(buffer[:DIAGNOSE_LINE_MAX_CHARS].decode("utf-8", "replace"), lineno)
                    skipping, tail = True, b""
                else:
                    tail = buffer
                continue
            block, tail = buffer[: cut + 1], buffer[cut + 1 :]
            if skipping:
                first = block.find(b"\n")
                block = block[first + 1 :]
                skipping = False
            lineno = self._any_block(block, lineno, handle, stats, log.kind)
        if tail and not skipping:
            lineno = self._any_block(tail + b"\n", lineno, handle, stats, log.kind)
        stats.lines = lineno
        for key, count in counts.items():
            if not key.startswith("fact:"):
                stats.matches[key] = stats.matches.get(key, 0) + count
                stats.events += count
        return stats

    def _any_block(
        self, block: bytes, lineno: int, handle: Callable[[str, int], None], stats: FileStats, kind: str
    ) -> int:
        if kind in (PLOG, DEVICE):
            return self._plog_block(block, lineno, handle, stats)
        return self._block(block.decode("utf-8", "replace"), lineno, handle, stats)

    def _plog_block(self, block: bytes, lineno: int, handle: Callable[[str, int], None], stats: FileStats) -> int:
        """A CANN log's whole lines: only its ERROR, WARNING and EVENT lines can hold a fault, and
        its INFO lines only the facts :data:`FACT_LITERALS` names. Both are found with
        ``bytes.find`` (memchr-fast), so the INFO and DEBUG lines that are nearly all of a plog
        are never decoded; the lines found go through the automaton like any other."""
        starts = set()
        for marker in _LEVEL_MARKERS:
            if block.startswith(marker[1:]):
                starts.add(0)
            pos = block.find(marker)
            while pos >= 0:
                starts.add(pos + 1)
                pos = block.find(marker, pos + 1)
        for literal in self.fact_bytes:
            pos = block.find(literal)
            while pos >= 0:
                start = block.rfind(b"\n", 0, pos) + 1
                starts.add(start)
                pos = block.find(b"\n", pos)
                pos = block.find(literal, pos) if pos >= 0 else -1
        counted_to = 0
        for start in sorted(starts):
            end = block.find(b"\n", start)
            lineno += block.count(b"\n", counted_to, start) + 1
            counted_to = end + 1
            raw = block[start:end]
            if len(raw) > DIAGNOSE_LINE_MAX_CHARS:
                stats.truncated_lines += 1
                raw = raw[:DIAGNOSE_LINE_MAX_CHARS]
            handle(raw.decode("utf-8", "replace").rstrip("\r"), lineno)
        return lineno + block.count(b"\n", counted_to)

    def _block(self, text: str, lineno: int, handle: Callable[[str, int], None], stats: FileStats) -> int:
        """Hand each line of ``text`` (whole lines) that holds a literal to ``handle``; the
        line number after the block."""
        counted_to = 0
        line_end = -1
        for end, _owned in self.automaton.iter(text):
            if end <= line_end:
                continue
            start = text.rfind("\n", 0, end) + 1
            line_end = text.find("\n", end)
            lineno += text.count("\n", counted_to, start) + 1
            counted_to = line_end + 1
            line = text[start:line_end]
            if len(line) > DIAGNOSE_LINE_MAX_CHARS:
                stats.truncated_lines += 1
                line = line[:DIAGNOSE_LINE_MAX_CHARS]
            handle(line.rstrip("\r"), lineno)
        return lineno + text.count("\n", counted_to)

    def _line(
        self,
        line: str,
        number: int,
        log: LogFile,
        sink: Sink,
        kept: Dict[str, int],
        counts: Dict[str, int],
        stats: FileStats,
        seq: List[int],
    ) -> None:
        owned = set()
        for _end, owners in self.automaton.iter(line):
            owned.update(owners)
        if log.kind in (PLOG, DEVICE) and line.startswith(_QUIET_LEVELS):
            owned = {owner for owner in owned if owner[0] == "fact"}
        base = _base_fields(line, log)
        matched: List[Tuple[Entry, Dict[str, str]]] = []
        for kind, owner in owned:
            if kind != "entry":
                continue
            assert isinstance(owner, Entry)
            if log.kind not in owner.files:
                continue
            fields = owner.fields(line)
            if fields is not None:
                matched.append((owner, fields))
        if any(not entry.generic for entry, _ in matched):
            matched = [(entry, fields) for entry, fields in matched if not entry.generic]
        facts = sorted({owner for kind, owner in owned if kind == "fact"}, key=str)
        for fact in facts:
            assert isinstance(fact, str)
            attrs = fact_attrs(fact, line)
            if not attrs:
                continue
            counts["fact:" + fact] += 1
            if kept["fact:" + fact] >= DIAGNOSE_EVENTS_PER_ENTRY * 10:
                continue
            kept["fact:" + fact] += 1
            seq[0] += 1
            sink(_event(line, number, log, base, seq[0], None, {"fact": fact, **attrs}))
        for entry, fields in sorted(matched, key=lambda item: item[0].key):
            counts[entry.key] += 1
            if kept[entry.key] >= DIAGNOSE_EVENTS_PER_ENTRY:
                continue
            kept[entry.key] += 1
            if entry.key in ("hccl.cqe_error", "hccl.ei0013"):
                fields = {**fields, **cqe_attrs(line)}
            seq[0] += 1
            sink(_event(line, number, log, base, seq[0], entry, fields))


def _base_fields(line: str, log: LogFile) -> Dict[str, Optional[str]]:
    """pid, rank, device and time as the line's own prefix prints them."""
    found: Dict[str, Optional[str]] = {}
    plog = _PLOG_LINE.match(line)
    if plog:
        found.update(pid=plog.group("pid"), time=plog.group("time"), module=plog.group("module"))
    torch = _TORCH_LINE.search(line)
    if torch:
        found.update(pid=torch.group("pid"), device=torch.group("device"), rank=torch.group("rank"))
    cann = _CANN_CONSOLE.search(line)
    if cann:
        found.setdefault("pid", cann.group("pid"))
        found.setdefault("time", cann.group("time"))
    prefix = _RANK_PREFIX.match(line)
    if prefix:
        found.setdefault("rank", prefix.group("rank"))
    if log.kind == KERNEL:
        when = _KERNEL_TIME.match(line)
        if when:
            found["time"] = when.group("time") or when.group("stime")
    return found


_COMPONENT_LETTER = {
    "I": "HCCL",
    "J": "HCCP",
    "E": "Runtime",
    "H": "ACL",
    "L": "Driver",
    "Z": "Operators",
    "3": "AI CPU",
}


def component_of(code: Optional[str]) -> Optional[str]:
    """The CANN component a code's second letter names (``EI0002`` -> HCCL)."""
    if code and len(code) == 6 and code[0] == "E":
        return _COMPONENT_LETTER.get(code[1])
    return None


def _event(
    line: str,
    number: int,
    log: LogFile,
    base: Dict[str, Optional[str]],
    seq: int,
    entry: Optional[Entry],
    fields: Dict[str, str],
) -> Event:
    attrs = dict(fields)
    code = attrs.pop("code", None) or (entry.code if entry else None)
    if code is None and entry is not None:
        found = re.search(r"(?<![A-Za-z0-9])(E[A-Z0-9]\d{4})(?![0-9])", line)
        code = found.group(1) if found else None
    rank = _int(attrs.pop("rank", None)) if entry is not None else None
    if rank is None:
        rank = _int(base.get("rank"))
    if rank is None:
        rank = log.rank
    device = _int(attrs.pop("device", None)) if entry is not None else None
    if device is None:
        device = _int(base.get("device"))
    pid = _int(attrs.pop("pid", None)) if entry is not None and log.kind != KERNEL else None
    if pid is None:
        pid = _int(base.get("pid")) if log.kind != KERNEL else None
    if pid is None and log.kind in (PLOG, DEVICE):
        pid = log.pid
    device_ip = attrs.pop("device_ip", None) if entry is not None else None
    component = (entry.component if entry else None) or component_of(code)
    if entry is not None and entry.generic and component_of(code):
        component = component_of(code)
    if log.kind == KERNEL and "pid" in fields:
        attrs["killed_pid"] = fields["pid"]
    return Event(
        file=log.path,
        line=number,
        node=log.node,
        seq=seq,
        text=line,
        key=entry.key if entry else None,
        pid=pid,
        rank=rank,
        device=device,
        device_ip=device_ip,
        code=code,
        component=component,
        time=base.get("time"),
        attrs=tuple(sorted(attrs.items())),
    )
