"""What the user asked of ``verify --allreduce``, checked, and the timeouts derived from it.

Pure: :func:`resolve_settings` turns :class:`AllreduceOptions` and the inventory into
:class:`RunSettings` (sizes, ranks per node, worker arguments, every timeout) or a list of
problems, before anything is uploaded. The verify command may pass its own options object: any
object with the same attribute names is read (:meth:`AllreduceOptions.coerce`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.verify.allreduce.sizes import SizeSpecError, parse_size_spec

BACKENDS = ("auto", "hccl", "nccl", "gloo")

#: Overall limit for one torchrun run when the user gives none. Real clusters need the worker's
#: full init window (300 s) for HCCL's communicator set-up on hundreds of ranks.
DEFAULT_TIMEOUT_S = 600.0
#: The worker's own defaults (see ``worker.py``); shares of the overall limit cap them.
WORKER_INIT_TIMEOUT_S = 300.0
WORKER_OP_TIMEOUT_S = 120.0
WORKER_TRAIN_TIMEOUT_S = 300.0
MIN_TIMEOUT_S = 5.0
#: After the first node's torchrun fails, the others get this long beyond one collective step to
#: report (their ranks time out on the dead peer and write records) before they are killed.
GRACE_BEYOND_OP_S = 10.0


@dataclass(frozen=True)
class AllreduceOptions:
    """Options of ``ascendprep verify --allreduce`` (None: the default).

    ``timeout`` is the overall limit for the torchrun run on every node; the worker's per-phase
    timeouts are shares of it. ``warmup``, ``iters`` and the ``inject_*`` self-test flags have
    no CLI option: tests and benchmarks use them.
    """

    sizes: Optional[str] = None
    min_busbw: Optional[float] = None
    backend: Optional[str] = None
    nproc_per_node: Optional[int] = None
    timeout: Optional[float] = None
    train: bool = False
    bisect: bool = False
    #: Run even where npu-smi shows processes on the NPUs (verify refuses otherwise: npu.busy).
    allow_busy_npus: bool = False
    warmup: Optional[int] = None
    iters: Optional[int] = None
    inject_wrong: Optional[int] = None
    inject_stall: Optional[int] = None

    @classmethod
    def coerce(cls, given: Any) -> "AllreduceOptions":
        """Read any object with these attribute names (verify's own options dataclass)."""
        if isinstance(given, cls):
            return given
        if given is None:
            return cls()
        values: Dict[str, Any] = {f.name: getattr(given, f.name, f.default) for f in fields(cls)}
        return cls(**values)

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Timeouts:
    """Every limit of one run, in seconds."""

    overall: float
    init: float
    op: float
    train: float
    grace: float

    @property
    def rendezvous(self) -> int:
        """torchrun's static rendezvous (TCPStore) timeout: as long as the worker's init."""
        return max(1, int(math.ceil(self.init)))


@dataclass(frozen=True)
class RunSettings:
    """A checked, complete description of what each node will run."""

    sizes_spec: Optional[str]
    sizes: Optional[Tuple[int, ...]]
    backend: str
    nproc_by_node: Dict[str, int]
    timeouts: Timeouts
    min_busbw: Optional[float]
    min_busbw_source: Optional[str]  # "--min-busbw", "product", None
    train: bool
    bisect: bool
    warmup: Optional[int]
    iters: Optional[int]
    inject_wrong: Optional[int]
    inject_stall: Optional[int]

    @property
    def world_size(self) -> int:
        return sum(self.nproc_by_node.values())

    def worker_arguments(self, node: str) -> List[str]:
        """Arguments after ``worker.py`` for ``node`` (validated values only)."""
        args = [
            "--node-name",
            node,
            "--backend",
            self.backend,
            "--init-timeout",
            _seconds(self.timeouts.init),
            "--op-timeout",
            _seconds(self.timeouts.op),
        ]
        if self.sizes_spec is not None:
            args += ["--sizes", self.sizes_spec]
        if self.warmup is not None:
            args += ["--warmup", str(self.warmup)]
        if self.iters is not None:
            args += ["--iters", str(self.iters)]
        if self.train:
            args += ["--train", "--train-timeout", _seconds(self.timeouts.train)]
        if self.inject_wrong is not None:
            args += ["--inject-wrong", str(self.inject_wrong)]
        if self.inject_stall is not None:
            args += ["--inject-stall", str(self.inject_stall)]
        return args

    def to_dict(self) -> Dict[str, Any]:
        return {
            "sizes": self.sizes_spec,
            "backend": self.backend,
            "nproc_per_node": dict(self.nproc_by_node),
            "world_size": self.world_size,
            "timeouts_s": {
                "overall": self.timeouts.overall,
                "init": self.timeouts.init,
                "op": self.timeouts.op,
                "train": self.timeouts.train,
                "grace": self.timeouts.grace,
            },
            "min_busbw_GBps": self.min_busbw,
            "min_busbw_source": self.min_busbw_source,
            "train": self.train,
            "bisect": self.bisect,
            "warmup": self.warmup,
            "iters": self.iters,
            "injected": {
                k: v
                for k, v in (("inject_wrong", self.inject_wrong), ("inject_stall", self.inject_stall))
                if v is not None
            },
        }


def _seconds(value: float) -> str:
    return f"{value:g}"


def derive_timeouts(overall: float) -> Timeouts:
    """Shares of the overall limit, capped by the worker's own defaults.

    Init gets half (a cold start of HCCL on many ranks is the slowest step), one collective step
    a quarter, so that a dead peer is named by the ranks' watchdogs well before the overall
    limit kills everything.
    """
    init = max(MIN_TIMEOUT_S / 2, min(WORKER_INIT_TIMEOUT_S, overall / 2))
    op = max(MIN_TIMEOUT_S / 2, min(WORKER_OP_TIMEOUT_S, overall / 4))
    train = max(MIN_TIMEOUT_S / 2, min(WORKER_TRAIN_TIMEOUT_S, overall / 2))
    return Timeouts(overall=overall, init=init, op=op, train=train, grace=op + GRACE_BEYOND_OP_S)


def resolve_settings(
    options: AllreduceOptions, nodes: Sequence[Tuple[str, int]], product_min_busbw: Optional[float]
) -> Tuple[Optional[RunSettings], List[str]]:
    """Check ``options`` against the nodes (name, NPUs); returns (settings, []) or (None, problems).

    Every problem names the option, so the user can fix it without reading code.
    """
    problems: List[str] = []
    sizes: Optional[Tuple[int, ...]] = None
    spec = options.sizes.strip() if isinstance(options.sizes, str) else options.sizes
    if spec is not None:
        if not isinstance(spec, str):
            problems.append(f"--sizes {spec!r}: expected a size spec such as 1K:256M")
        else:
            try:
                sizes = tuple(parse_size_spec(spec))
            except SizeSpecError as exc:
                problems.append(f"--sizes: {exc}")
    backend = options.backend or "auto"
    if backend not in BACKENDS:
        problems.append(f"--backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    min_busbw = options.min_busbw if options.min_busbw is not None else product_min_busbw
    source: Optional[str] = None
    if options.min_busbw is not None:
        source = "--min-busbw"
    elif product_min_busbw is not None:
        source = "product"
    if min_busbw is not None and not _positive_number(min_busbw):
        problems.append(f"--min-busbw {min_busbw!r}: give a positive number of GB/s")
    timeout = DEFAULT_TIMEOUT_S if options.timeout is None else options.timeout
    if not _positive_number(timeout) or timeout < MIN_TIMEOUT_S:
        problems.append(f"--timeout {timeout!r}: give at least {MIN_TIMEOUT_S:g} seconds")
    nproc = options.nproc_per_node
    if nproc is not None and (isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1):
        problems.append(f"--nproc-per-node {nproc!r}: give a whole number of at least 1")
    for label, value, low in (("warmup", options.warmup, 0), ("iters", options.iters, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            problems.append(f"{label} {value!r}: give a whole number of at least {low}")
    if not nodes:
        problems.append("the inventory has no nodes to run the all-reduce on")
    if problems:
        return None, problems
    nproc_by_node = {name: (nproc if nproc is not None else npus) for name, npus in nodes}
    world = sum(nproc_by_node.values())
    for label, rank in (("inject_wrong", options.inject_wrong), ("inject_stall", options.inject_stall)):
        if rank is not None and not (isinstance(rank, int) and 0 <= rank < world):
            problems.append(f"{label} {rank!r}: not a rank of this run (0-{world - 1})")
    if problems:
        return None, problems
    return RunSettings(
        sizes_spec=spec,
        sizes=sizes,
        backend=backend,
        nproc_by_node=nproc_by_node,
        timeouts=derive_timeouts(float(timeout)),
        min_busbw=min_busbw,
        min_busbw_source=source,
        train=bool(options.train),
        bisect=bool(options.bisect),
        warmup=options.warmup,
        iters=options.iters,
        inject_wrong=options.inject_wrong,
        inject_stall=options.inject_stall,
    ), []


def _positive_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
