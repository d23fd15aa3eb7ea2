"""The all-reduce verdict as gates: each answers one question with ok, a figure and the reasons.

Pure. :func:`ascendprep.verify.allreduce.results.build_verdict` gathers the evidence (ranks, size rows,
stragglers, training) and calls one function per gate; the verdict passes when every blocking
gate is ok. Splitting it this way gives every failure one home: a reader looking for "why did
the all-reduce fail" reads the gate that says no, and the text report ends with the two lines
nccl-tests ends with (``# Out of bounds values : 0 OK`` / ``# Avg bus bandwidth : X``), here
:func:`footer_lines`.

The gates, in order:

* ``connectivity``: every launched rank sent a readable record, the ranks form one job (one
  world size, one backend, no rank twice), and no rank failed outside training and the
  correctness check -- setup, init, the first all-reduce, the size sweep.
* ``wrong_elements``: at least one size was measured and no rank counted a wrong element.
* ``busbw``: the bus bandwidth of the largest size every rank measured reaches the floor
  (``--min-busbw`` or the product's); without a floor it passes and says so.
* ``training`` (``--train``): each mode passed on every rank with one parameter digest.
* ``stragglers``: no rank much slower than the others; a warning, never a failure.
* ``self_test``: no fault was injected (a self-test run is never a verdict on the cluster).
* ``rank_table``: where a rank table is in use (``RANK_TABLE_FILE``), every rank found itself in
  it -- readable, parsed, its global rank on its node and device (and SDID on A3) -- and, on
  hccl, torch_npu did not log that it dropped the table ("switch to original interface"). A
  table torch_npu cannot use is dropped silently, so this gate is the only place it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.base import limits

from .ranks import compress_ranks
from .records import BusbwFloor, RankTableCheck, SizeRow, Straggler, TrainVerdict
from .worker import format_size

CONNECTIVITY = "connectivity"
WRONG_ELEMENTS = "wrong_elements"
BUSBW = "busbw"
TRAINING = "training"
STRAGGLERS = "stragglers"
SELF_TEST = "self_test"
RANK_TABLE = "rank_table"
GATE_NAMES = (CONNECTIVITY, WRONG_ELEMENTS, BUSBW, TRAINING, STRAGGLERS, SELF_TEST, RANK_TABLE)


@dataclass(frozen=True)
class GateResult:
    """One gate's answer. ``figure`` is what was measured, in a few words ("8/8 ranks", "0",
    "12.3 GB/s at 256M"); ``reasons`` say why it is not ok, ``warnings`` what to know anyway.

    A gate that is not ``blocking`` (stragglers) cannot fail the verdict: its reasons are
    warnings. A gate that says no always says why: no reasons with ``ok`` false is refused.
    """

    name: str
    ok: bool
    figure: str
    reasons: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()
    blocking: bool = True

    def __post_init__(self) -> None:
        if not self.ok and not self.reasons:
            raise ValueError(f"gate {self.name} failed without a reason")

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @property
    def fails_verdict(self) -> bool:
        return self.blocking and not self.ok

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "figure": self.figure,
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "blocking": self.blocking,
        }


def connectivity_gate(world_size: Optional[int], reported: int, problems: Sequence[str]) -> GateResult:
    """``problems``: every reason the ranks did not all join and finish as one job (missing or
    unreadable records, disagreements, failures outside training and correctness)."""
    figure = f"{reported}/{world_size if world_size is not None else '?'} ranks"
    if world_size is None and not problems:
        problems = ("the world size is unknown",)
    return GateResult(CONNECTIVITY, not problems, figure, tuple(problems))


def wrong_elements_gate(rows: Sequence["SizeRow"], failures: Sequence[str] = ()) -> GateResult:
    """Zero wrong elements over every size and rank; no measured size is no proof (fails)."""
    if not rows:
        return GateResult(
            WRONG_ELEMENTS,
            False,
            "none measured",
            ("no message size was measured, so correctness is unproven",) + tuple(failures),
        )
    wrong = [row for row in rows if row.wrong_elements]
    total = sum(row.wrong_elements for row in wrong)
    reasons = (
        (f"{total} wrong elements at sizes " + ", ".join(format_size(row.bytes) for row in wrong),) if wrong else ()
    ) + tuple(failures)
    return GateResult(WRONG_ELEMENTS, not reasons, str(total), reasons)


def busbw_gate(floor: Optional["BusbwFloor"], rows: Sequence["SizeRow"], world_size: Optional[int]) -> GateResult:
    """The floor's judgement (see ``results.evaluate_busbw_floor``); without a floor, ok."""
    largest = largest_complete_row(rows, world_size)
    figure = f"{largest.busbw_GBps:.4g} GB/s at {format_size(largest.bytes)}" if largest else "none"
    if floor is None:  # nothing to judge; the footer says that no floor was set
        return GateResult(BUSBW, True, figure)
    return GateResult(BUSBW, floor.passed, figure, () if floor.passed else (floor.reason,))


def training_gate(train: Sequence["TrainVerdict"], failures: Sequence[str] = ()) -> GateResult:
    """Every training mode that ran passed on every rank; skipped modes are warnings."""
    if not train and not failures:
        return GateResult(TRAINING, True, "not run")
    reasons = tuple(
        f"training {t.mode} failed on ranks {compress_ranks(t.ranks_failed) or '?'}: {t.reason}"
        for t in train
        if t.status == "fail"
    ) + tuple(failures)
    warnings = tuple(f"training {t.mode} skipped: {t.reason}" for t in train if t.status == "skipped")
    figure = ", ".join(f"{t.mode} {t.status}" for t in train) or "no result"
    return GateResult(TRAINING, not reasons, figure, reasons, warnings)


def stragglers_gate(stragglers: Sequence["Straggler"]) -> GateResult:
    """A warning per straggling rank (see ``results.StragglerRule``); never fails the verdict."""
    reasons = tuple(
        f"rank {s.rank} ({s.node}) straggles at {', '.join(format_size(b) for b in s.sizes)}: "
        f"up to {s.worst_ratio:.1f}x the median time"
        for s in stragglers
    )
    figure = f"{len(stragglers)} rank{'' if len(stragglers) == 1 else 's'}"
    return GateResult(STRAGGLERS, not reasons, figure, reasons, blocking=False)


def self_test_gate(injected: Sequence[str]) -> GateResult:
    """A run with injected faults tests ascendprep, not the cluster: it never passes."""
    if not injected:
        return GateResult(SELF_TEST, True, "none injected")
    return GateResult(
        SELF_TEST,
        False,
        ", ".join(injected),
        (
            f"self-test faults were injected ({', '.join(injected)}): "
            "this run is a test of ascendprep, not a verdict on the cluster",
        ),
    )


def rank_table_gate(
    backend: Optional[str], ranks: Sequence[Tuple[int, str, Optional["RankTableCheck"]]], dropped_at: Sequence[str] = ()
) -> GateResult:
    """``ranks``: (rank, node, its check or None when it had no ``RANK_TABLE_FILE``);
    ``dropped_at``: log lines where torch_npu said it fell back from the table."""
    using = [(rank, node, check) for rank, node, check in ranks if check is not None]
    if not using:
        return GateResult(RANK_TABLE, True, "not in use")
    reasons: List[str] = []
    without = sorted(rank for rank, _, check in ranks if check is None)
    if without:
        reasons.append(
            f"ranks {compress_ranks(without)} had no RANK_TABLE_FILE while the others "
            "had one: set_env.sh differs between nodes"
        )
    paths = sorted({check.path for _, _, check in using})
    if len(paths) > 1:
        reasons.append(f"the ranks were given different rank tables: {', '.join(paths)}")
    bad = sorted((rank, node, check) for rank, node, check in using if not check.ok)
    for rank, node, check in bad[: limits.ALLREDUCE_RANK_TABLE_NAMED_RANKS]:
        reasons.append(f"rank {rank} ({node}): {check.reason}")
    if len(bad) > limits.ALLREDUCE_RANK_TABLE_NAMED_RANKS:
        reasons.append(
            f"and {len(bad) - limits.ALLREDUCE_RANK_TABLE_NAMED_RANKS} more ranks: "
            f"{compress_ranks([rank for rank, _, _ in bad[limits.ALLREDUCE_RANK_TABLE_NAMED_RANKS :]])}"
        )
    if backend == "hccl" and dropped_at:
        reasons.append(
            f"torch_npu dropped the rank table and built the communicator without it "
            f"('switch to original interface' at {', '.join(dropped_at[:4])})"
        )
    unchecked = sorted(rank for rank, _, check in using if check.warning)
    warnings: Tuple[str, ...] = ()
    if unchecked:
        first = next(check.warning for _, _, check in sorted(using) if check.warning)
        warnings = (f"ranks {compress_ranks(unchecked)}: {first}",)
    figure = f"{len(using) - len(bad)}/{len(ranks)} ranks found in {', '.join(paths)}"
    return GateResult(RANK_TABLE, not reasons, figure, tuple(reasons), warnings)


def largest_complete_row(rows: Sequence["SizeRow"], world_size: Optional[int]) -> Optional["SizeRow"]:
    """The largest size every rank measured: where the fabric, not latency, sets the time."""
    complete = complete_rows(rows, world_size)
    return max(complete, key=lambda row: row.bytes) if complete else None


def complete_rows(rows: Sequence["SizeRow"], world_size: Optional[int]) -> List["SizeRow"]:
    return [row for row in rows if world_size is not None and row.ranks_reporting == world_size]
