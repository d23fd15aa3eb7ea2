"""Turn the per-rank records of an all-reduce run into one verdict.

Everything here is pure: text or dicts in, frozen dataclasses out, so the rules can be tested
without torch or hosts. The launcher collects each rank's ``ASCENDPREP_RESULT`` line (or its
``rank-<N>.json`` file), calls :func:`parse_worker_output` / :func:`record_from_dict`, then
:func:`build_verdict`.

The judgement is a set of gates (connectivity, wrong elements, busbw floor, training,
stragglers, self-test), each a pure function in :mod:`ascendprep.verify.allreduce.gates`; this module
gathers their evidence, in the spirit of nccl-tests:

* **Per-size table**: a collective is done when its slowest rank is, so a size's time is the
  maximum over ranks; algbw = bytes / time (GB/s, 1e9 bytes/s); busbw = algbw * 2(n-1)/n.
* **Stragglers**: see :class:`StragglerRule`.
* **Bandwidth floor** ("is it fast"): the busbw of the largest size that every rank measured
  must reach ``min_busbw_GBps``. Large messages are where the fabric, not latency, sets the
  time. A floor asked for without such a measurement fails: no data is not a pass.
* **Training** (when the worker ran ``--train``): each mode passed on every rank, with one
  parameter digest shared by all ranks; skipped modes are reported with their reason.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .gates import (
    CONNECTIVITY,
    WRONG_ELEMENTS,
    GateResult,
    busbw_gate,
    connectivity_gate,
    largest_complete_row,
    rank_table_gate,
    self_test_gate,
    stragglers_gate,
    training_gate,
    wrong_elements_gate,
)
from .ranks import compress_ranks, short_list
from .records import BusbwFloor, RankTableCheck, RankTime, RankTimes, SizeRow, Straggler, TrainVerdict
from .worker import (
    ERROR_MARKER,
    RECORD_SCHEMA_VERSION,
    RESULT_MARKER,
    bus_bandwidth_factor,
    format_size,
)

VERDICT_SCHEMA_VERSION = 2  # 2: "gates" added, "gate" renamed "busbw_floor"

CONNECTIVITY_PHASES = ("setup", "init", "connectivity")


class RecordError(ValueError):
    """A result record that cannot be read; the message says where and what."""


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseOutcome:
    status: str  # pass | fail | skipped | not_run
    seconds: Optional[float] = None
    reason: Optional[str] = None


@dataclass(frozen=True)
class SizeMeasurement:
    """One rank's result for one message size."""

    bytes: int
    time_us: float
    wrong_elements: int


@dataclass(frozen=True)
class TrainOutcome:
    status: str  # pass | fail | skipped | not_run
    reason: Optional[str] = None
    api: Optional[str] = None
    param_digest: Optional[str] = None
    amp: Optional[str] = None


@dataclass(frozen=True)
class RankRecord:
    """What one rank reported (the worker's JSON record, validated)."""

    rank: int
    node: str
    world_size: int
    ok: bool
    local_rank: Optional[int] = None
    backend: Optional[str] = None
    error_phase: Optional[str] = None
    error_reason: Optional[str] = None
    phases: Mapping[str, PhaseOutcome] = field(default_factory=dict)
    sizes: Tuple[SizeMeasurement, ...] = ()
    train: Optional[Mapping[str, TrainOutcome]] = None
    injected: Tuple[str, ...] = ()
    rank_table: Optional["RankTableCheck"] = None


@dataclass(frozen=True)
class WorkerError:
    """An ``ASCENDPREP_ERROR`` line: the one-line reason a rank gave for failing."""

    rank: Optional[int]
    node: str
    phase: str
    reason: str


@dataclass(frozen=True)
class CollectedOutput:
    """Everything read from the ranks' output, plus what could not be read."""

    records: Tuple[RankRecord, ...] = ()
    errors: Tuple[WorkerError, ...] = ()
    problems: Tuple[str, ...] = ()
    #: Where torch_npu said it dropped the rank table ("switch to original interface").
    rank_table_dropped: Tuple[str, ...] = ()

    def merged(self, other: "CollectedOutput") -> "CollectedOutput":
        """Combine output collected from several nodes."""
        return CollectedOutput(
            self.records + other.records,
            self.errors + other.errors,
            self.problems + other.problems,
            self.rank_table_dropped + other.rank_table_dropped,
        )


_MISSING = object()


def _field(data: Mapping[str, Any], key: str, kinds: Tuple[type, ...], where: str, optional: bool = False) -> Any:
    value = data.get(key, _MISSING)
    if value is _MISSING or value is None:
        if optional:
            return None
        raise RecordError(f"{where}: '{key}' is missing")
    # bool is an int in Python; a JSON true where a number belongs is still malformed.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(kind.__name__ for kind in kinds)
        raise RecordError(f"{where}: '{key}' should be {names}, got {value!r}")
    return value


_NUMBER = (int, float)


def record_from_dict(data: Any, where: str = "record") -> RankRecord:
    """Validate one worker record (a decoded JSON object) and return it typed."""
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != RECORD_SCHEMA_VERSION:
        raise RecordError(
            f"{where}: record schema_version {version!r}, this ascendprep reads "
            f"{RECORD_SCHEMA_VERSION} (worker and control side differ in version)"
        )
    error = _field(data, "error", (dict,), where, optional=True) or {}
    if data.get("rank") is None:
        reason = error.get("reason", "no reason given")
        raise RecordError(f"{where}: record has no rank (was the worker started by torchrun?); its error: {reason}")
    rank = _field(data, "rank", (int,), where)
    where = f"{where} (rank {rank})"
    phases = {}
    for name, entry in (_field(data, "phases", (dict,), where) or {}).items():
        if not isinstance(entry, dict):
            raise RecordError(f"{where}: phase '{name}' should be an object")
        phases[name] = PhaseOutcome(
            status=_field(entry, "status", (str,), f"{where} phase '{name}'"),
            seconds=_field(entry, "seconds", _NUMBER, f"{where} phase '{name}'", optional=True),
            reason=_field(entry, "reason", (str,), f"{where} phase '{name}'", optional=True),
        )
    sizes = []
    for index, entry in enumerate(_field(data, "sizes", (list,), where)):
        at = f"{where} sizes[{index}]"
        if not isinstance(entry, dict):
            raise RecordError(f"{at}: should be an object")
        measurement = SizeMeasurement(
            bytes=_field(entry, "bytes", (int,), at),
            time_us=float(_field(entry, "time_us", _NUMBER, at)),
            wrong_elements=_field(entry, "wrong_elements", (int,), at),
        )
        if measurement.bytes <= 0 or not measurement.time_us > 0 or measurement.wrong_elements < 0:
            raise RecordError(f"{at}: bytes and time_us must be positive, wrong_elements >= 0")
        sizes.append(measurement)
    return RankRecord(
        rank=rank,
        node=_field(data, "node", (str,), where),
        world_size=_field(data, "world_size", (int,), where),
        ok=_field(data, "ok", (bool,), where),
        local_rank=_field(data, "local_rank", (int,), where, optional=True),
        backend=_field(data, "backend", (str,), where, optional=True),
        error_phase=error.get("phase"),
        error_reason=error.get("reason"),
        phases=phases,
        sizes=tuple(sizes),
        train=_train_from_dict(_field(data, "train", (dict,), where, optional=True), where),
        injected=tuple(str(item) for item in _field(data, "injected", (list,), where, optional=True) or ()),
        rank_table=_rank_table_from_dict(_field(data, "rank_table", (dict,), where, optional=True), where),
    )


def _rank_table_from_dict(data: Optional[Mapping[str, Any]], where: str) -> Optional[RankTableCheck]:
    if data is None:
        return None
    at = f"{where} rank_table"
    check = RankTableCheck(
        path=_field(data, "path", (str,), at),
        ok=_field(data, "ok", (bool,), at),
        reason=_field(data, "reason", (str,), at, optional=True),
        warning=_field(data, "warning", (str,), at, optional=True),
    )
    if not check.ok and not check.reason:
        raise RecordError(f"{at}: not ok without a reason")
    return check


def _train_from_dict(data: Optional[Mapping[str, Any]], where: str) -> Optional[Mapping[str, TrainOutcome]]:
    if data is None:
        return None
    modes = {}
    for mode, entry in data.items():
        at = f"{where} train '{mode}'"
        if not isinstance(entry, dict):
            raise RecordError(f"{at}: should be an object")
        amp = entry.get("amp")
        modes[mode] = TrainOutcome(
            status=_field(entry, "status", (str,), at),
            reason=_field(entry, "reason", (str,), at, optional=True),
            api=_field(entry, "api", (str,), at, optional=True),
            param_digest=_field(entry, "param_digest", (str,), at, optional=True),
            amp=amp.get("status") if isinstance(amp, dict) else None,
        )
    return modes


_ERROR_LINE = re.compile(r"phase=(\S+) rank=(\S+) node=(\S+) reason=(.*)$")


def parse_worker_output(text: str, source: str = "output") -> CollectedOutput:
    """Find the result and error lines in torchrun output (stdout and stderr may be mixed).

    Markers are searched anywhere in a line, so prefixes such as torchrun's ``[default0]:``
    do not hide them. An unreadable record is a problem, not an exception: one garbled rank
    must not hide what the others said.
    """
    records: List[RankRecord] = []
    errors: List[WorkerError] = []
    problems: List[str] = []
    dropped: List[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{source} line {number}"
        at = line.find(RESULT_MARKER)
        if at >= 0:
            try:
                data = json.loads(line[at + len(RESULT_MARKER) :])
                records.append(record_from_dict(data, where))
            except json.JSONDecodeError as exc:
                problems.append(
                    f"{where}: result record is not valid JSON ({exc.msg}); output of several ranks may be interleaved"
                )
            except RecordError as exc:
                problems.append(str(exc))
            continue
        at = line.find(ERROR_MARKER)
        if at >= 0:
            match = _ERROR_LINE.match(line[at + len(ERROR_MARKER) :].strip())
            if match is None:
                problems.append(f"{where}: unreadable error line: {line.strip()}")
                continue
            phase, rank, node, reason = match.groups()
            errors.append(WorkerError(int(rank) if rank.isdigit() else None, node, phase, reason))
            continue
        if RANK_TABLE_DROPPED_LINE in line:
            dropped.append(where)
    return CollectedOutput(tuple(records), tuple(errors), tuple(problems), tuple(dropped))


#: torch_npu's INFO line when it cannot build the communicator from ``RANK_TABLE_FILE`` and falls
#: back to root-info (ProcessGroupHCCL::createHCCLCommEx, ``ASCEND_LOGI``; docs/a3-superpod.md §4):
#: "The rank_table_file is not available, ..." or "Create global hccl comm with ranktable failed,
#: ...". CANN writes INFO lines to the log read here only with ASCEND_GLOBAL_LOG_LEVEL=1 and
#: ASCEND_SLOG_PRINT_TO_STDOUT=1; the worker's own check does not depend on them.
RANK_TABLE_DROPPED_LINE = "switch to original interface"


# --------------------------------------------------------------------------------------------
# Verdict
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StragglerRule:
    """When a rank counts as a straggler at one message size.

    A rank straggles at a size when its time is more than ``ratio`` times the median time of
    all ranks at that size AND at least ``floor_us`` above that median, and at least
    ``min_ranks`` ranks measured the size. The ratio keeps ordinary spread on large messages
    from naming a node; the floor keeps microsecond jitter on small messages from doing so;
    with fewer than three ranks there is no majority to call normal.

    In a synchronous all-reduce every rank waits for the slowest link, so a slow *link* shows
    as low busbw on all ranks (the gate catches it); a straggler here is a rank that is slow on
    its own side -- a busy host CPU, a throttled device, a slow launch path.
    """

    ratio: float = 1.5
    floor_us: float = 100.0
    min_ranks: int = 3


@dataclass(frozen=True)
class RankFailure:
    rank: Optional[int]
    node: str
    phase: str
    reason: str


@dataclass(frozen=True)
class AllreduceVerdict:
    """The answer to "does an all-reduce across every rank work, correctly and fast enough".

    ``gates`` hold the judgement (see :mod:`ascendprep.verify.allreduce.gates`): the verdict passes
    when no blocking gate failed, and its reasons and warnings are the gates'. The other
    fields are the evidence the gates were given.
    """

    gates: Tuple[GateResult, ...]
    world_size: Optional[int]
    backend: Optional[str]
    ranks_reported: Tuple[int, ...]
    missing_ranks: Tuple[int, ...]
    missing_nodes: Tuple[str, ...]
    failures: Tuple[RankFailure, ...]
    sizes: Tuple[SizeRow, ...]
    stragglers: Tuple[Straggler, ...]
    busbw_floor: Optional[BusbwFloor]
    train: Tuple[TrainVerdict, ...]
    straggler_rule: StragglerRule = StragglerRule()
    rank_times: Optional[RankTimes] = None
    schema_version: int = VERDICT_SCHEMA_VERSION

    def gate_named(self, name: str) -> GateResult:
        for gate in self.gates:
            if gate.name == name:
                return gate
        raise KeyError(f"no all-reduce gate named {name!r}")

    @property
    def passed(self) -> bool:
        return not any(gate.fails_verdict for gate in self.gates)

    @property
    def reasons(self) -> Tuple[str, ...]:
        """Why the verdict failed: the reasons of the blocking gates that said no."""
        return tuple(reason for gate in self.gates if gate.fails_verdict for reason in gate.reasons)

    @property
    def warnings(self) -> Tuple[str, ...]:
        """What a passing run should still tell: non-blocking gates' reasons, every gate's warnings."""
        return tuple(reason for gate in self.gates if not gate.blocking for reason in gate.reasons) + tuple(
            warning for gate in self.gates for warning in gate.warnings
        )

    @property
    def connectivity_passed(self) -> bool:
        return self.gate_named(CONNECTIVITY).ok

    @property
    def correctness_passed(self) -> bool:
        return self.gate_named(WRONG_ELEMENTS).ok

    @property
    def straggler_nodes(self) -> Tuple[str, ...]:
        return tuple(sorted({s.node for s in self.stragglers}))

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form (lists, not tuples) carrying ``schema_version``."""
        return {
            "schema_version": self.schema_version,
            "passed": self.passed,
            "gates": [gate.to_dict() for gate in self.gates],
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "world_size": self.world_size,
            "backend": self.backend,
            "ranks_reported": len(self.ranks_reported),
            "missing_ranks": list(self.missing_ranks),
            "missing_nodes": list(self.missing_nodes),
            "connectivity": {"passed": self.connectivity_passed},
            "correctness": {
                "passed": self.correctness_passed,
                "wrong_elements": sum(row.wrong_elements for row in self.sizes),
            },
            "failures": [vars(failure).copy() for failure in self.failures],
            "sizes": [vars(row).copy() for row in self.sizes],
            "stragglers": [dict(vars(s), sizes=list(s.sizes)) for s in self.stragglers],
            "straggler_nodes": list(self.straggler_nodes),
            "straggler_rule": vars(self.straggler_rule).copy(),
            "rank_times": None
            if self.rank_times is None
            else {
                "bytes": self.rank_times.bytes,
                "median_us": self.rank_times.median_us,
                "ranks": [[r.rank, r.node, r.time_us] for r in self.rank_times.ranks],
            },
            "busbw_floor": vars(self.busbw_floor).copy() if self.busbw_floor is not None else None,
            "train": [dict(vars(t), ranks_failed=list(t.ranks_failed)) for t in self.train],
        }


def algorithm_bandwidth(nbytes: int, time_us: float) -> float:
    """GB/s (1e9 bytes per second), as nccl-tests and hccl_test report it."""
    return nbytes / time_us / 1e3


def bus_bandwidth(algbw_GBps: float, world_size: int) -> float:
    """nccl-tests' all-reduce bus bandwidth: algbw * 2(n-1)/n, comparable across world sizes."""
    return algbw_GBps * bus_bandwidth_factor(world_size)


def build_verdict(
    collected: CollectedOutput,
    *,
    expected_world_size: Optional[int] = None,
    expected_nodes: Optional[Sequence[str]] = None,
    min_busbw_GBps: Optional[float] = None,
    straggler_rule: StragglerRule = StragglerRule(),
) -> AllreduceVerdict:
    """Judge one run from everything the ranks said: gather the evidence, ask each gate.

    ``expected_world_size`` and ``expected_nodes`` come from the launcher (nodes x processes
    per node, inventory names passed to the worker as ``--node-name``); without them the
    world size is taken from the records, and a rank that never reported is still named
    because its number is missing from 0..world_size-1.
    """
    if min_busbw_GBps is not None and not (math.isfinite(min_busbw_GBps) and min_busbw_GBps > 0):
        raise ValueError(f"min_busbw_GBps must be a positive number of GB/s, got {min_busbw_GBps!r}")
    joining: List[str] = list(collected.problems)

    records, duplicates = _unique_by_rank(collected.records)
    joining.extend(duplicates)
    world_size = _world_size(records, expected_world_size, joining)
    reported = tuple(sorted(r.rank for r in records))
    missing = _missing_ranks(reported, world_size)
    if not records:
        joining.append("no rank reported a result")
    if missing:
        joining.append(f"{len(missing)} of {world_size} ranks sent no result: ranks {compress_ranks(missing)}")
    seen_nodes = {r.node for r in records}
    missing_nodes = tuple(n for n in (expected_nodes or ()) if n not in seen_nodes)
    if missing_nodes:
        joining.append(f"nodes with no result: {', '.join(missing_nodes)}")
    outsiders = [r.rank for r in records if world_size is not None and r.rank >= world_size]
    if outsiders:
        joining.append(f"ranks {compress_ranks(outsiders)} are outside world size {world_size}")

    backend = _backend(records, joining)
    failures = _failures(records, collected.errors)
    wrong_failures = [f for f in failures if f.phase == "performance" and "wrong elements" in f.reason]
    train_failures = [f for f in failures if f.phase == "train"]
    other_failures = [f for f in failures if f not in wrong_failures and f not in train_failures]
    joining.extend(_describe_failures(other_failures))
    failed_ranks = {f.rank for f in failures}
    unjoined = [
        r.rank
        for r in records
        if r.rank not in failed_ranks
        and not all(r.phases.get(name, PhaseOutcome("not_run")).status == "pass" for name in CONNECTIVITY_PHASES)
    ]
    if unjoined:
        joining.append(
            f"ranks {compress_ranks(unjoined)} did not pass {', '.join(CONNECTIVITY_PHASES)} and gave no reason"
        )

    rows = _size_rows(records, world_size)
    stragglers = find_stragglers(records, straggler_rule)
    floor = evaluate_busbw_floor(rows, world_size, min_busbw_GBps) if min_busbw_GBps is not None else None
    train = _train_verdicts(records)
    injected = sorted({item for r in records for item in r.injected})

    return AllreduceVerdict(
        gates=(
            connectivity_gate(world_size, len(reported), joining),
            wrong_elements_gate(rows, _describe_failures(wrong_failures)),
            busbw_gate(floor, rows, world_size),
            training_gate(train, _describe_failures(train_failures)),
            stragglers_gate(stragglers),
            self_test_gate(injected),
            rank_table_gate(backend, [(r.rank, r.node, r.rank_table) for r in records], collected.rank_table_dropped),
        ),
        world_size=world_size,
        backend=backend,
        ranks_reported=reported,
        missing_ranks=missing,
        missing_nodes=missing_nodes,
        failures=tuple(failures),
        sizes=tuple(rows),
        stragglers=tuple(stragglers),
        busbw_floor=floor,
        train=tuple(train),
        straggler_rule=straggler_rule,
        rank_times=largest_size_times(records),
    )


def largest_size_times(records: Sequence[RankRecord]) -> Optional[RankTimes]:
    """Each rank's time at the largest message size any rank measured (where a rank slow on its
    own side stands out most), with the median the straggler rule compares it to."""
    largest = max((m.bytes for r in records for m in r.sizes), default=None)
    if largest is None:
        return None
    ranks = sorted(
        (RankTime(r.rank, r.node, m.time_us) for r in records for m in r.sizes if m.bytes == largest),
        key=lambda t: t.rank,
    )
    return RankTimes(largest, statistics.median(t.time_us for t in ranks), tuple(ranks))


def _unique_by_rank(records: Iterable[RankRecord]) -> Tuple[List[RankRecord], List[str]]:
    by_rank: Dict[int, RankRecord] = {}
    problems = []
    for record in records:
        first = by_rank.setdefault(record.rank, record)
        if first is not record:
            problems.append(
                f"rank {record.rank} reported more than once "
                f"(nodes {first.node} and {record.node}); the first record is used"
            )
    return sorted(by_rank.values(), key=lambda r: r.rank), problems


def _world_size(records: Sequence[RankRecord], expected: Optional[int], reasons: List[str]) -> Optional[int]:
    claimed = sorted({r.world_size for r in records})
    if len(claimed) > 1:
        reasons.append(f"ranks disagree on the world size: {', '.join(map(str, claimed))}")
    if expected is not None:
        if claimed and claimed != [expected]:
            reasons.append(f"ranks report world size {', '.join(map(str, claimed))} but {expected} were launched")
        return expected
    return max(claimed) if claimed else None


def _missing_ranks(reported: Sequence[int], world_size: Optional[int]) -> Tuple[int, ...]:
    if world_size is None:
        return ()
    present = set(reported)
    return tuple(r for r in range(world_size) if r not in present)


def _backend(records: Sequence[RankRecord], reasons: List[str]) -> Optional[str]:
    backends = sorted({r.backend for r in records if r.backend})
    if len(backends) > 1:
        reasons.append(f"ranks used different backends: {', '.join(backends)}")
    return backends[0] if len(backends) == 1 else None


def _failures(records: Sequence[RankRecord], errors: Sequence[WorkerError]) -> List[RankFailure]:
    """One entry per failed rank: its record's error, or its error line when no record came."""
    failures = [
        RankFailure(r.rank, r.node, r.error_phase or "unknown", r.error_reason or "failed without a reason")
        for r in records
        if not r.ok
    ]
    with_record = {r.rank for r in records}
    seen = set()
    for error in errors:
        if error.rank in with_record or (error.rank, error.phase) in seen:
            continue
        seen.add((error.rank, error.phase))
        failures.append(RankFailure(error.rank, error.node, error.phase, error.reason))
    return failures


_STOPPED = "stopped by SIG"


def _describe_failures(failures: Sequence[RankFailure]) -> List[str]:
    """Group identical failures; ranks that were merely stopped by the launcher come last."""
    groups: Dict[Tuple[str, str], List[RankFailure]] = {}
    for failure in failures:
        groups.setdefault((failure.phase, failure.reason), []).append(failure)
    ordered = sorted(groups.items(), key=lambda item: (_STOPPED in item[0][1], item[0][0]))
    lines = []
    for (phase, reason), members in ordered:
        noun = "rank" if len(members) == 1 else "ranks"
        ranks = compress_ranks(f.rank for f in members if f.rank is not None) or "?"
        nodes = short_list(sorted({f.node for f in members}))
        lines.append(f"{noun} {ranks} ({nodes}) failed in {phase}: {reason}")
    return lines


def _size_rows(records: Sequence[RankRecord], world_size: Optional[int]) -> List[SizeRow]:
    by_size: Dict[int, List[Tuple[RankRecord, SizeMeasurement]]] = {}
    for record in records:
        for measurement in record.sizes:
            by_size.setdefault(measurement.bytes, []).append((record, measurement))
    rows = []
    for nbytes in sorted(by_size):
        entries = by_size[nbytes]
        slowest_record, slowest = max(entries, key=lambda e: e[1].time_us)
        algbw = algorithm_bandwidth(nbytes, slowest.time_us)
        rows.append(
            SizeRow(
                bytes=nbytes,
                time_us=slowest.time_us,
                algbw_GBps=algbw,
                busbw_GBps=bus_bandwidth(algbw, world_size or len(entries)),
                wrong_elements=sum(m.wrong_elements for _, m in entries),
                ranks_reporting=len(entries),
                median_us=statistics.median(m.time_us for _, m in entries),
                slowest_rank=slowest_record.rank,
                slowest_node=slowest_record.node,
            )
        )
    return rows


def find_stragglers(records: Sequence[RankRecord], rule: StragglerRule = StragglerRule()) -> List[Straggler]:
    """Apply :class:`StragglerRule` at every size; one entry per flagged rank."""
    by_size: Dict[int, List[Tuple[RankRecord, float]]] = {}
    for record in records:
        for measurement in record.sizes:
            by_size.setdefault(measurement.bytes, []).append((record, measurement.time_us))
    flagged: Dict[int, Tuple[RankRecord, List[int], float]] = {}
    for nbytes in sorted(by_size):
        entries = by_size[nbytes]
        if len(entries) < rule.min_ranks:
            continue
        median = statistics.median(t for _, t in entries)
        for record, time_us in entries:
            if time_us > rule.ratio * median and time_us - median >= rule.floor_us:
                _, sizes, worst = flagged.setdefault(record.rank, (record, [], 0.0))
                sizes.append(nbytes)
                flagged[record.rank] = (record, sizes, max(worst, time_us / median))
    return [
        Straggler(rank, record.node, tuple(sizes), round(worst, 3))
        for rank, (record, sizes, worst) in sorted(flagged.items())
    ]


def evaluate_busbw_floor(rows: Sequence[SizeRow], world_size: Optional[int], min_busbw_GBps: float) -> BusbwFloor:
    """Compare the busbw of the largest size measured by every rank with the threshold.

    Fails closed: without such a size there is nothing to vouch for the fabric.
    """
    row = largest_complete_row(rows, world_size)
    if row is None:
        return BusbwFloor(
            min_busbw_GBps,
            False,
            f"--min-busbw {min_busbw_GBps:g} GB/s asked for, but no message size was "
            "measured by every rank, so bandwidth is unproven",
        )
    passed = row.busbw_GBps >= min_busbw_GBps
    relation = "reaches" if passed else "is below"
    return BusbwFloor(
        min_busbw_GBps,
        passed,
        f"bus bandwidth {row.busbw_GBps:.3f} GB/s at {format_size(row.bytes)} {relation} "
        f"--min-busbw {min_busbw_GBps:g} GB/s",
        measured_busbw_GBps=row.busbw_GBps,
        at_bytes=row.bytes,
    )


def _train_verdicts(records: Sequence[RankRecord]) -> List[TrainVerdict]:
    trained = [r for r in records if r.train is not None]
    modes: List[str] = []
    for record in trained:
        modes.extend(m for m in record.train or {} if m not in modes)
    return [
        _train_verdict(mode, [(r.rank, (r.train or {}).get(mode, _NO_TRAIN_RESULT)) for r in trained]) for mode in modes
    ]


_NO_TRAIN_RESULT = TrainOutcome("not_run", "no result for this mode")


def _train_verdict(mode: str, outcomes: Sequence[Tuple[int, TrainOutcome]]) -> TrainVerdict:
    """One mode across ranks: any failure fails it; a pass needs one shared parameter digest."""
    first = outcomes[0][1]
    statuses = {o.status for _, o in outcomes}
    failed = [(rank, o) for rank, o in outcomes if o.status == "fail"]
    if failed:
        status, reason = "fail", failed[0][1].reason
    elif statuses == {"pass"}:
        digests = {o.param_digest for _, o in outcomes}
        status, reason = (
            ("pass", None)
            if len(digests) == 1
            else ("fail", f"parameter digests differ between ranks ({len(digests)} distinct)")
        )
    elif len(statuses) == 1:
        status = first.status
        reason = "; ".join(sorted({o.reason or "no reason given" for _, o in outcomes}))
    else:
        status = "fail"
        reason = "ranks disagree: " + ", ".join(
            f"{s} on ranks {compress_ranks(rank for rank, o in outcomes if o.status == s)}" for s in sorted(statuses)
        )
    return TrainVerdict(mode, status, reason, tuple(rank for rank, _ in failed), first.api, first.amp)
