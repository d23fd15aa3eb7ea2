"""What the all-reduce's judgement reads, as records: per-size rows, stragglers, the bandwidth
floor, the training modes and each rank's rank-table check (built by
:mod:`ascendprep.verify.allreduce.results`, judged by :mod:`ascendprep.verify.allreduce.gates`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class RankTableCheck:
    """One rank's check of the rank table it was given (``worker.check_rank_table``)."""

    path: str
    ok: bool
    reason: Optional[str] = None
    warning: Optional[str] = None


@dataclass(frozen=True)
class SizeRow:
    bytes: int
    time_us: float  # slowest rank
    algbw_GBps: float
    busbw_GBps: float
    wrong_elements: int  # summed over ranks
    ranks_reporting: int
    median_us: float
    slowest_rank: int
    slowest_node: str


@dataclass(frozen=True)
class Straggler:
    rank: int
    node: str
    sizes: Tuple[int, ...]  # bytes at which the rule flagged this rank
    worst_ratio: float  # time / median at the worst size


@dataclass(frozen=True)
class RankTime:
    rank: int
    node: str
    time_us: float


@dataclass(frozen=True)
class RankTimes:
    """Every rank's time at one message size, the largest measured: what the straggler rule
    compares with the median, kept so a report can draw each rank against it."""

    bytes: int
    median_us: float
    ranks: Tuple[RankTime, ...]  # by rank


@dataclass(frozen=True)
class BusbwFloor:
    """The bandwidth floor's judgement in figures: the ``busbw`` gate's details."""

    min_busbw_GBps: float
    passed: bool
    reason: str
    measured_busbw_GBps: Optional[float] = None
    at_bytes: Optional[int] = None


@dataclass(frozen=True)
class TrainVerdict:
    mode: str
    status: str  # pass | fail | skipped | not_run
    reason: Optional[str] = None
    ranks_failed: Tuple[int, ...] = ()
    api: Optional[str] = None
    amp: Optional[str] = None
