"""What diagnose reads and finds: log files, the events in them, and the verdict.

A failed Ascend job leaves, on every node, CANN host logs (``plog-<pid>_<time>.log``, one per
process), device logs, the training console logs (``rank-N.txt``, ``worker-N.log``) and the kernel's
messages. Each line that matters becomes an :class:`Event` that carries where it was read
(``file:line``), the node, and what the line itself says about the process: pid, rank, NPU device
id, device IP, error code and component. Events keep the order in which their file holds them
(``seq``): that order is exact within a process and a node, while the wall clocks of two nodes
may differ, so nothing here sorts events of different nodes by their printed time.

Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

#: Kinds of log file, as the collect bundle's manifest names them.
PLOG = "plog"
DEVICE = "device"
CONSOLE = "console"
KERNEL = "kernel"
STATE = "state"
KINDS = (PLOG, DEVICE, CONSOLE, KERNEL, STATE)


@dataclass(frozen=True)
class LogFile:
    """One file of the tree: its path as shown (relative to the tree given), the node it belongs
    to, its kind, and what its name says (the plog's pid, the console log's rank)."""

    path: str
    node: str
    kind: str
    pid: Optional[int] = None
    rank: Optional[int] = None
    #: collect cut the file at its per-file cap and kept its newest bytes: its first lines are gone.
    cut: bool = False


@dataclass(frozen=True)
class Skipped:
    """A file of the tree that was not read, and why (binary, a link out of the tree, ...)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Event:
    """One line that matters: where it is, whose it is, and what it says.

    ``key`` is the knowledge-base entry it matched (``None``: a line read only for the facts it
    carries, such as the rank and communicator of a process). ``attrs`` holds the fields the line
    names (``tag``, ``index``, ``peer_ip``, ``group``...), as printed."""

    file: str
    line: int
    node: str
    seq: int
    text: str
    key: Optional[str] = None
    pid: Optional[int] = None
    rank: Optional[int] = None
    device: Optional[int] = None
    device_ip: Optional[str] = None
    code: Optional[str] = None
    component: Optional[str] = None
    #: The time as the line prints it (plog ``2025-10-24-11:18:29.597.044``), not parsed into a
    #: clock: it is only compared with times of the same node.
    time: Optional[str] = None
    attrs: Tuple[Tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def attr(self, name: str) -> Optional[str]:
        for key, value in self.attrs:
            if key == name:
                return value
        return None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "node": self.node,
            "key": self.key,
            "pid": self.pid,
            "rank": self.rank,
            "device": self.device,
            "device_ip": self.device_ip,
            "code": self.code,
            "component": self.component,
            "time": self.time,
            "text": self.text,
        }


@dataclass
class FileStats:
    """What reading one file came to: lines read, lines cut at the line cap, knowledge-base
    matches found (all of them, also those past the evidence kept)."""

    lines: int = 0
    truncated_lines: int = 0
    events: int = 0
    #: Matches per knowledge-base entry, all of them (the events kept are the first few).
    matches: Dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Process:
    """One rank's process as its own log tells it: node, pid, rank in the world communicator,
    NPU device id and device IP, the communicators it joined, and the file it wrote."""

    node: str
    pid: Optional[int]
    rank: Optional[int]
    device: Optional[int]
    device_ip: Optional[str]
    file: str
    communicators: Tuple[str, ...] = ()
    rank_size: Optional[int] = None

    @property
    def label(self) -> str:
        parts = [f"rank {self.rank}" if self.rank is not None else "rank ?", f"node {self.node}"]
        if self.device is not None:
            parts.append(f"NPU {self.device}")
        if self.device_ip:
            parts.append(f"device IP {self.device_ip}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Culprit:
    """A rank (or an NPU without a known rank) named as the root cause, or as a suspect."""

    node: Optional[str]
    rank: Optional[int] = None
    device: Optional[int] = None
    device_ip: Optional[str] = None
    #: the inventory's name for the node and the NPU index there, when ``--inventory`` resolved it.
    inventory_node: Optional[str] = None

    @property
    def label(self) -> str:
        parts = [f"rank {self.rank}" if self.rank is not None else "rank ?"]
        parts.append(f"node {self.inventory_node or self.node or '?'}")
        parts.append(f"NPU {self.device}" if self.device is not None else "NPU ?")
        if self.device_ip:
            parts.append(f"device IP {self.device_ip}")
        return ", ".join(parts)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "node": self.inventory_node or self.node,
            "log_node": self.node,
            "rank": self.rank,
            "device": self.device,
            "device_ip": self.device_ip,
        }


@dataclass(frozen=True)
class Verdict:
    """What one root-rank rule decided: the culprits (empty: it could not decide), why, and the
    evidence lines. ``suspects`` are named where the rule narrowed the field without deciding."""

    rule: str
    culprits: Tuple[Culprit, ...]
    reason: str
    evidence: Tuple[Event, ...] = ()
    suspects: Tuple[Culprit, ...] = ()

    @property
    def decided(self) -> bool:
        return bool(self.culprits)


@dataclass
class Cause:
    """A knowledge-base fault found in the job: the entry, where it happened, and whether anything
    else in the job explains it (a root cause explains itself)."""

    key: str
    title: str
    cause: str
    fix: str
    severity: str
    component: str
    layer: str
    checks: Tuple[str, ...]
    source: str
    events: List[Event] = field(default_factory=list)
    count: int = 0
    root: bool = True
    explained_by: List[str] = field(default_factory=list)
    #: The vendor's fault level of the NPU event code (data/health_codes.yaml): "RestartNPU: reset
    #: the NPU ..."; None for a fault that is no NPU event.
    vendor_level: Optional[str] = None
