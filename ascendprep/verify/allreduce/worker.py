#!/usr/bin/env python3
"""ascendprep all-reduce worker: one rank of a cluster-wide all-reduce check.

Run on every node under torchrun, e.g.::

    python -m torch.distributed.run --nnodes 2 --nproc_per_node 8 --node_rank 0 \\
        --master_addr 10.0.0.1 --master_port 29500 worker.py --sizes 1K:256M

The file is uploaded alone to each node, so it is self-contained: Python 3.8+, the standard
library and torch; torch_npu only when it imports. torch is imported inside the functions that
use it, not at the top, so that the control side (``ascendprep.verify.allreduce.sizes`` and
``results``) can import the size parser and the record constants without torch.

Phases, in order, each timed and reported (see ``PHASES``):

* setup: arguments, torchrun environment, backend and device choice (hccl on NPU, nccl on CUDA,
  gloo on CPU; ``--backend`` overrides).
* init: ``init_process_group`` -- the rendezvous with every other rank.
* connectivity: a small all-reduce in which rank r contributes r+1 at index r (so a missing
  contribution is visible), then a barrier.
* performance: a size sweep in the manner of nccl-tests. Per size, one checked all-reduce of a
  known pattern (rank r, element i holds ``i % 13 + r + 1``; every partial sum is a small integer,
  so fp32 sums are exact and every rank compares its result with the closed-form expected value
  element by element), then warm-up and timed iterations on a zero buffer (zeros stay zeros, so
  the timed iterations are checked too). algbw = bytes / time, busbw = algbw * 2(n-1)/n.
* train (``--train``): a few steps of a tiny model with DDP, FSDP and HSDP over a 2-D
  DeviceMesh (nodes x processes per node), as the Ascend samples do; AMP with DDP on
  accelerators. Every rank must end with a finite loss and bit-identical parameters, compared
  with a digest gathered from all ranks.

Where a rank table is in use (``RANK_TABLE_FILE`` set, as ``set_env.sh`` does with the inventory's
``training.rank_table``), setup also checks that the table reads, parses and describes this rank:
its ``rank_id`` on this node, on this rank's device (and, on A3, with this die's SDID). torch_npu
drops a table it cannot use without an error, so the record carries the answer (``rank_table``)
and the control side's ``rank_table`` gate judges it; the run goes on either way.

Every step that talks to other ranks runs under a watchdog: if it overruns its timeout, or the
process is told to stop (torchrun sends SIGTERM to every rank when one fails), the watchdog
thread reports the phase and step it was in and ends the process. A collective blocked inside
C++ cannot be interrupted from Python, so a thread that calls ``os._exit`` is the only reliable
way to turn a dead peer into a named failure instead of a hang.

Output: each rank writes exactly one line ``ASCENDPREP_RESULT {json}`` to stdout (and, with
``--result-dir``, the same JSON to ``rank-<N>.json``). On failure it also writes one line
``ASCENDPREP_ERROR phase=<phase> rank=<rank> node=<node> reason=<text>`` to stderr and exits 1
(2 for bad arguments or environment).

Self-test flags (``--inject-wrong``, ``--inject-stall``) make one rank misbehave on purpose so
that tests can prove the checks fail; a record from such a run lists them under ``injected``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.util
import json
import math
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from array import array
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

RESULT_MARKER = "ASCENDPREP_RESULT "
ERROR_MARKER = "ASCENDPREP_ERROR "
RECORD_SCHEMA_VERSION = 1

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

PHASES = ("setup", "init", "connectivity", "performance", "train")
TRAIN_MODES = ("ddp", "fsdp", "hsdp")
BACKENDS = ("auto", "hccl", "nccl", "gloo")

#: Default sweeps: nccl-tests style x4 steps; the CPU one stays small because gloo over loopback
#: measures the host, not a fabric.
DEFAULT_SIZES_ACCELERATOR = "1K:256M:x4"
DEFAULT_SIZES_CPU = "1K:4M:x4"

#: Element i of rank r's input is ``i % PATTERN_PERIOD + r + 1``. A prime period makes a chunk
#: moved by any power-of-two offset land on different values, so misplaced data is caught.
PATTERN_PERIOD = 13
FP32_BYTES = 4
#: fp32 represents every integer up to 2**24 exactly; the reduced values must stay below it.
FP32_EXACT_LIMIT = 2**24

MAX_SWEEP_SIZES = 64
#: torch's own timeouts are set this much beyond ours, so that the watchdog, which names the
#: phase and writes the record, always fires first (NCCL's watchdog would abort the process).
TIMEOUT_GRACE_S = 30.0
WATCHDOG_POLL_S = 0.2


# --------------------------------------------------------------------------------------------
# Size specs (stdlib only; ascendprep.verify.allreduce.sizes re-exports these for the control side)
# --------------------------------------------------------------------------------------------


class SizeSpecError(ValueError):
    """A size or size spec the user wrote cannot be read; the message says which part and why."""


_SIZE_RE = re.compile(r"^(\d+)\s*([kmgt]?)(i?b)?$", re.IGNORECASE)
_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """Read ``512``, ``8K``, ``64M``, ``1G``, ``1GiB`` or ``1GB`` as bytes.

    Units are binary (1K = 1024), as in nccl-tests and hccl_test.
    """
    if not text.strip():
        raise SizeSpecError("a size is missing")
    match = _SIZE_RE.match(text.strip())
    if match is None:
        raise SizeSpecError(
            f"{text!r} is not a size (use a whole number of bytes with an optional K, M, G or T suffix, e.g. 64M)"
        )
    value = int(match.group(1)) * _UNIT[match.group(2).lower()]
    if value <= 0:
        raise SizeSpecError(f"{text!r}: a size must be at least 1 byte")
    return value


def parse_size_spec(spec: str, max_sizes: int = MAX_SWEEP_SIZES) -> List[int]:
    """Expand ``SIZE``, ``START:END`` (x4 steps), ``START:END:xF`` or ``START:END:+STEP``.

    The sweep runs from START while the size is <= END, as nccl-tests' ``-b/-e/-f/-i`` do, so
    END is included only when a step lands on it.
    """
    text = spec.strip()
    if not text:
        raise SizeSpecError("size spec is empty (expected e.g. 1K:256M or 1K:256M:x4)")
    parts = text.split(":")
    if len(parts) > 3:
        raise SizeSpecError(f"size spec {spec!r}: expected SIZE, START:END or START:END:STEP")
    try:
        start = parse_size(parts[0])
        end = parse_size(parts[1]) if len(parts) >= 2 else start
        step = parts[2].strip() if len(parts) == 3 else "x4"
    except SizeSpecError as exc:
        raise SizeSpecError(f"size spec {spec!r}: {exc}") from None
    if start > end:
        raise SizeSpecError(f"size spec {spec!r}: start {parts[0]} is larger than end {parts[1]}")
    grow = _parse_step(spec, step)
    sizes = [start]
    while True:
        nxt = grow(sizes[-1])
        if nxt > end:
            break
        sizes.append(nxt)
        if len(sizes) > max_sizes:
            raise SizeSpecError(f"size spec {spec!r} gives more than {max_sizes} sizes; use a larger step")
    return sizes


def _parse_step(spec: str, step: str) -> Callable[[int], int]:
    if step[:1] in ("x", "X", "*"):
        digits = step[1:].strip()
        if not digits.isdigit() or int(digits) < 2:
            raise SizeSpecError(f"size spec {spec!r}: step {step!r} must be a whole factor of at least 2, e.g. x2")
        factor = int(digits)
        return lambda size: size * factor
    if step[:1] == "+":
        try:
            increment = parse_size(step[1:])
        except SizeSpecError as exc:
            raise SizeSpecError(f"size spec {spec!r}: step {step!r}: {exc}") from None
        return lambda size: size + increment
    raise SizeSpecError(f"size spec {spec!r}: step {step!r} must be xFACTOR (e.g. x4) or +SIZE (e.g. +1M)")


def format_size(nbytes: int) -> str:
    """Print bytes the way a size spec is written: 1024 -> '1K', 268435456 -> '256M'."""
    for suffix, unit in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def bus_bandwidth_factor(world_size: int) -> float:
    """nccl-tests' all-reduce bus factor 2(n-1)/n: the share of data each link carries."""
    return 2.0 * (world_size - 1) / world_size if world_size > 0 else 0.0


def max_exact_world_size() -> int:
    """Largest world size for which every reduced pattern value stays an exact fp32 integer."""
    world = 1
    while _largest_expected_value(world + 1) < FP32_EXACT_LIMIT:
        world += 1
    return world


def _largest_expected_value(world_size: int) -> int:
    return world_size * (PATTERN_PERIOD - 1) + world_size * (world_size + 1) // 2


# --------------------------------------------------------------------------------------------
# The per-rank report
# --------------------------------------------------------------------------------------------


class RankReport:
    """Everything this rank will say about the run, emitted exactly once.

    Both the main thread (normal end) and the watchdog thread (timeout, SIGTERM) may end the
    run, so emission is guarded by a lock and happens once.
    """

    def __init__(
        self,
        rank: Optional[int],
        local_rank: Optional[int],
        world_size: Optional[int],
        local_world_size: Optional[int],
        node: str,
    ) -> None:
        self._lock = threading.Lock()
        self._emitted = False
        self.current_phase = "setup"
        self.data: Dict[str, Any] = {
            "schema_version": RECORD_SCHEMA_VERSION,
            "rank": rank,
            "local_rank": local_rank,
            "world_size": world_size,
            "local_world_size": local_world_size,
            "node": node,
            "hostname": socket.gethostname(),
            "backend": None,
            "device": None,
            "versions": {"python": sys.version.split()[0]},
            "ok": True,
            "error": None,
            "phases": {name: {"status": "not_run", "seconds": None} for name in PHASES},
            "sizes": [],
            "train": None,
            "injected": [],
            "rank_table": None,
        }

    @property
    def ok(self) -> bool:
        return bool(self.data["ok"])

    def fail(self, phase: str, reason: str) -> None:
        """Mark ``phase`` failed; the first failure becomes the run's error."""
        with self._lock:
            entry = self.data["phases"][phase]
            entry["status"] = "fail"
            entry.setdefault("reason", reason)
            if self.data["ok"]:
                self.data["ok"] = False
                self.data["error"] = {"phase": phase, "reason": reason}

    def finish(self, phase: str, seconds: float) -> None:
        with self._lock:
            entry = self.data["phases"][phase]
            entry["seconds"] = round(seconds, 6)
            if entry["status"] == "not_run":
                entry["status"] = "pass"

    def skip(self, phase: str, reason: str) -> None:
        with self._lock:
            self.data["phases"][phase] = {"status": "skipped", "seconds": None, "reason": reason}

    def emit(self, result_dir: Optional[str]) -> bool:
        """Write the result line (and error line); False if it was already written."""
        with self._lock:
            if self._emitted:
                return False
            self._emitted = True
            payload = json.dumps(self.data, sort_keys=True, separators=(",", ":"))
            # One os.write per line: print() writes in pieces that interleave between ranks.
            _write_all(1, (RESULT_MARKER + payload + "\n").encode())
            if result_dir:
                try:
                    _write_result_file(result_dir, self.data.get("rank"), payload)
                except OSError as exc:  # stdout already has the record; say why the file lacks it
                    _write_all(
                        2, f"ascendprep worker: could not write the result file in {result_dir}: {exc}\n".encode()
                    )
            error = self.data["error"]
            if error is not None:
                rank = "?" if self.data["rank"] is None else self.data["rank"]
                line = (
                    f"{ERROR_MARKER}phase={error['phase']} rank={rank} "
                    f"node={self.data['node']} reason={_one_line(error['reason'])}\n"
                )
                _write_all(2, line.encode())
            return True


def _write_all(fd: int, data: bytes) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _write_result_file(result_dir: str, rank: Optional[int], payload: str) -> None:
    """Atomically write rank-<N>.json so a launcher can fetch records without parsing stdout."""
    os.makedirs(result_dir, exist_ok=True)
    name = f"rank-{rank if rank is not None else 'unknown'}.json"
    fd, tmp = tempfile.mkstemp(dir=result_dir, prefix=f".{name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(payload + "\n")
    os.replace(tmp, os.path.join(result_dir, name))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe_exception(exc: BaseException) -> str:
    """First line of an exception, with its type: enough to name the fault on one line."""
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# --------------------------------------------------------------------------------------------
# Watchdog
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    phase: str
    what: str
    deadline: float  # time.monotonic()
    timeout_s: float


class Watchdog:
    """Ends the run with a named phase when a step overruns or a stop signal arrives.

    ``start()`` blocks SIGTERM and SIGINT in the calling (main) thread before any other thread
    exists, so every thread torch creates later inherits the block and the watchdog thread
    alone receives them via ``sigtimedwait`` -- even while the main thread is stuck in C++.
    """

    STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, report: RankReport, result_dir: Optional[str]) -> None:
        self._report = report
        self._result_dir = result_dir
        self._lock = threading.Lock()
        self._step: Optional[_Step] = None
        self._thread = threading.Thread(target=self._run, name="ascendprep-watchdog", daemon=True)

    def start(self) -> None:
        if hasattr(signal, "pthread_sigmask") and hasattr(signal, "sigtimedwait"):
            signal.pthread_sigmask(signal.SIG_BLOCK, self.STOP_SIGNALS)
        self._thread.start()

    @contextlib.contextmanager
    def step(self, phase: str, what: str, timeout_s: float) -> Iterator[None]:
        """Run one communicating step under a deadline of ``timeout_s`` seconds."""
        with self._lock:
            self._step = _Step(phase, what, time.monotonic() + timeout_s, timeout_s)
        try:
            yield
        finally:
            with self._lock:
                self._step = None

    def _run(self) -> None:
        can_wait_for_signals = hasattr(signal, "sigtimedwait")
        while True:
            if can_wait_for_signals:
                info = signal.sigtimedwait(self.STOP_SIGNALS, WATCHDOG_POLL_S)
                if info is not None:
                    self._stopped_by(signal.Signals(info.si_signo))
            else:
                time.sleep(WATCHDOG_POLL_S)
            with self._lock:
                step = self._step
            if step is not None and time.monotonic() > step.deadline:
                self._end(
                    step.phase,
                    f"timed out after {step.timeout_s:g}s in {step.what} (a peer rank is dead, hung or unreachable)",
                )

    def _stopped_by(self, signum: signal.Signals) -> None:
        with self._lock:
            step = self._step
        reason = f"stopped by {signum.name}"
        if step is not None:
            reason += f" during {step.what}"
        if signum == signal.SIGTERM:
            reason += " (torchrun stops every rank when one fails; look for the first failure)"
        self._end(step.phase if step is not None else self._report.current_phase, reason)

    def _end(self, phase: str, reason: str) -> None:
        self._report.fail(phase, reason)
        self._report.emit(self._result_dir)
        os._exit(EXIT_FAILED)


# --------------------------------------------------------------------------------------------
# Environment, backend and device
# --------------------------------------------------------------------------------------------


class UsageError(Exception):
    """Bad arguments or a worker started outside torchrun: exit 2."""


class PhaseFailed(Exception):
    """A phase found a fault that makes further phases meaningless."""


@dataclass(frozen=True)
class TorchrunEnv:
    """The variables torchrun sets for each rank."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int


def read_torchrun_env(environ: Dict[str, str]) -> TorchrunEnv:
    """Read RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE; a missing one means no torchrun."""
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if not environ.get(name):
            raise UsageError(
                f"{name} is not set: run this worker under torchrun (python -m torch.distributed.run ... worker.py)"
            )
    values = {}
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        # LOCAL_WORLD_SIZE is absent only when started by hand; then all ranks are local.
        raw = environ.get(name) or environ["WORLD_SIZE"]
        if not raw.isdigit():
            raise UsageError(f"{name}={raw!r} is not a non-negative integer")
        values[name] = int(raw)
    env = TorchrunEnv(values["RANK"], values["LOCAL_RANK"], values["WORLD_SIZE"], values["LOCAL_WORLD_SIZE"])
    if env.world_size < 1 or env.rank >= env.world_size:
        raise UsageError(f"RANK={env.rank} is outside WORLD_SIZE={env.world_size}")
    if env.local_world_size < 1 or env.local_rank >= env.local_world_size:
        raise UsageError(f"LOCAL_RANK={env.local_rank} is outside LOCAL_WORLD_SIZE={env.local_world_size}")
    return env


def _int_or_none(text: Optional[str]) -> Optional[int]:
    return int(text) if text is not None and text.isdigit() else None


@dataclass
class Runtime:
    """The backend and device this rank uses, and how to wait for the device to finish."""

    backend: str
    device: str  # "npu:3", "cuda:0", "cpu"
    device_type: str  # "npu", "cuda", "cpu"

    def synchronize(self) -> None:
        import torch

        if self.device_type == "npu":
            torch.npu.synchronize()  # type: ignore[attr-defined]  # torch_npu adds torch.npu
        elif self.device_type == "cuda":
            torch.cuda.synchronize()


def probe_npu() -> "tuple[bool, Optional[str], bool]":
    """(usable, why not, installed). Importing torch_npu registers ``torch.npu``."""
    if importlib.util.find_spec("torch_npu") is None:
        return False, "torch_npu is not installed", False
    try:
        import torch

        importlib.import_module("torch_npu")  # registers torch.npu and the hccl backend
    except Exception as exc:  # torch_npu raises many kinds when CANN is missing or mismatched
        return (
            False,
            (f"torch_npu is installed but failed to import ({describe_exception(exc)}); is CANN's set_env.sh sourced?"),
            True,
        )
    if not torch.npu.is_available() or torch.npu.device_count() == 0:  # type: ignore[attr-defined]  # torch_npu adds torch.npu
        return (
            False,
            ("torch_npu imported but no NPU is visible (check npu-smi info and ASCEND_RT_VISIBLE_DEVICES)"),
            True,
        )
    return True, None, True


def choose_runtime(requested: str, local_rank: int) -> Runtime:
    """Pick backend and device: hccl on NPU, nccl on CUDA, gloo on CPU, unless overridden.

    With ``auto`` on a node where torch_npu is installed but unusable, this refuses to fall back
    to gloo: a gloo pass there would say nothing about HCCL, which is what the user asked about.
    """
    import torch

    if requested in ("auto", "hccl"):
        usable, why_not, installed = probe_npu()
        if usable:
            count = torch.npu.device_count()  # type: ignore[attr-defined]
            if local_rank >= count:
                raise PhaseFailed(f"LOCAL_RANK {local_rank} but only {count} NPUs are visible")
            torch.npu.set_device(local_rank)  # type: ignore[attr-defined]  # torch_npu adds torch.npu
            return Runtime("hccl", f"npu:{local_rank}", "npu")
        if requested == "hccl" or installed:
            hint = "" if requested == "hccl" else " (pass --backend gloo to test host networking only)"
            raise PhaseFailed(f"hccl backend unavailable: {why_not}{hint}")
    if requested in ("auto", "nccl"):
        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            if local_rank >= count:
                raise PhaseFailed(f"LOCAL_RANK {local_rank} but only {count} CUDA devices are visible")
            torch.cuda.set_device(local_rank)
            return Runtime("nccl", f"cuda:{local_rank}", "cuda")
        if requested == "nccl":
            raise PhaseFailed("nccl backend unavailable: torch sees no CUDA device")
    return Runtime("gloo", "cpu", "cpu")


def installed_versions() -> Dict[str, Optional[str]]:
    import torch

    versions: Dict[str, Optional[str]] = {"torch": torch.__version__, "torch_npu": None}
    torch_npu = sys.modules.get("torch_npu")
    if torch_npu is not None:
        versions["torch_npu"] = getattr(torch_npu, "__version__", None)
    return versions


# --------------------------------------------------------------------------------------------
# Rank table: did this rank get the table it should (docs/a3-superpod.md §4)
# --------------------------------------------------------------------------------------------

RANK_TABLE_ENV = "RANK_TABLE_FILE"
#: The largest rank table read (a 1.2 table of 6,144 dies is about 1.5 MB); a bigger file is
#: refused, not read into memory. The worker is uploaded alone, so the cap lives here, not in
#: ascendprep.base.limits.
RANK_TABLE_MAX_BYTES = 32 * 1024 * 1024
#: The longest reason a rank gives about its table (it quotes the table's values).
RANK_TABLE_REASON_MAX_CHARS = 400
#: Seconds for ``npu-smi info -t spod-info`` (the die's SDID) before the comparison is given up.
SPOD_INFO_TIMEOUT_S = 15.0
_SDID_RE = re.compile(r"^\s*SDID\s*:\s*(\d+)\s*$", re.MULTILINE)


def local_device_id(environ: Dict[str, str], local_rank: int) -> Optional[int]:
    """The physical device this rank uses: ``ASCEND_RT_VISIBLE_DEVICES[local_rank]`` when that
    is set (torch numbers the visible devices from 0), else ``local_rank``; None if unreadable."""
    visible = environ.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if not visible:
        return local_rank
    ids = [part.strip() for part in visible.split(",")]
    if local_rank >= len(ids) or not ids[local_rank].isdigit():
        return None
    return int(ids[local_rank])


def read_die_sdid(device_id: int) -> "tuple[Optional[int], Optional[str]]":
    """(SDID, None) from ``npu-smi info -t spod-info`` for die ``device_id`` (NPU id*2 + chip),
    or (None, why it could not be read)."""
    import subprocess

    npu, chip = divmod(device_id, 2)
    command = ["npu-smi", "info", "-t", "spod-info", "-i", str(npu), "-c", str(chip)]
    try:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=SPOD_INFO_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{' '.join(command)}: {describe_exception(exc)}"
    text = done.stdout[:65536].decode("utf-8", "replace")
    match = _SDID_RE.search(text)
    if done.returncode != 0 or match is None:
        return None, f"{' '.join(command)} exited {done.returncode} without an SDID line"
    return int(match.group(1)), None


def _table_entries(doc: Any) -> "tuple[Dict[int, List[Dict[str, Any]]], Optional[str]]":
    """rank_id -> [(server, device)] from a 1.0/1.2 table, or why the table has no such shape."""
    if not isinstance(doc, dict) or not isinstance(doc.get("server_list"), list):
        return {}, "has no server_list"
    by_rank: Dict[int, List[Dict[str, Any]]] = {}
    for index, server in enumerate(doc["server_list"]):
        devices = server.get("device") if isinstance(server, dict) else None
        if not isinstance(devices, list):
            return {}, f"server_list[{index}] has no device list"
        for position, device in enumerate(devices):
            rank_id = device.get("rank_id") if isinstance(device, dict) else None
            if not isinstance(rank_id, str) or not rank_id.isdigit():
                return {}, f"server_list[{index}].device[{position}].rank_id is {rank_id!r}, not a number string"
            by_rank.setdefault(int(rank_id), []).append({"server": server, "device": device})
    return by_rank, None


def check_rank_table(
    environ: Dict[str, str],
    rank: int,
    local_rank: int,
    identities: Sequence[str],
    read_sdid: Callable[[int], "tuple[Optional[int], Optional[str]]"] = read_die_sdid,
) -> Optional[Dict[str, Any]]:
    """Whether the rank table this rank was given (``RANK_TABLE_FILE``) describes this rank.

    torch_npu builds the communicator from the table with rank = torch's global rank, and drops
    an unreadable or rejected table silently (an INFO log line). So each rank checks that the
    file reads and parses, that exactly one device has ``rank_id`` = its global rank, that the
    device's ``device_id`` is the device this rank runs on, that the device's server is this node
    (``server_id`` or ``host_ip`` one of ``identities``), and on A3 that ``super_device_id`` is the
    die's SDID (spod-info). None when no rank table is in use. Never raises: a bad table is a
    finding for the ``rank_table`` gate, and the run goes on so the other gates still answer.
    """
    path = environ.get(RANK_TABLE_ENV, "").strip()
    if not path:
        return None
    device_id = local_device_id(environ, local_rank)
    result: Dict[str, Any] = {
        "path": path,
        "ok": False,
        "reason": None,
        "device_id": device_id,
        "server_id": None,
        "super_device_id": None,
        "sdid": None,
        "warning": None,
    }

    def refuse(reason: str) -> Dict[str, Any]:
        # the table's values are echoed: one line, capped, whatever the file holds
        result["reason"] = _one_line(reason)[:RANK_TABLE_REASON_MAX_CHARS]
        return result

    try:
        with open(path, "rb") as handle:
            raw = handle.read(RANK_TABLE_MAX_BYTES + 1)
    except OSError as exc:
        return refuse(f"{path} cannot be read ({exc.strerror or exc}): torch_npu drops it silently")
    if len(raw) > RANK_TABLE_MAX_BYTES:
        return refuse(f"{path} is larger than {RANK_TABLE_MAX_BYTES} bytes")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return refuse(f"{path} is not JSON ({_one_line(str(exc))[:120]}): torch_npu drops it silently")
    by_rank, shape_problem = _table_entries(doc)
    if shape_problem:
        return refuse(f"{path} {shape_problem}")
    entries = by_rank.get(rank, [])
    if len(entries) != 1:
        return refuse(
            f"{path} has no device with rank_id {rank}"
            if not entries
            else f"{path} has {len(entries)} devices with rank_id {rank} (HCCL refuses the table)"
        )
    server, device = entries[0]["server"], entries[0]["device"]
    server_id = server.get("server_id")
    result["server_id"] = server_id[:RANK_TABLE_REASON_MAX_CHARS] if isinstance(server_id, str) else None
    wanted = str(device.get("device_id"))
    if device_id is None:
        return refuse(
            f"ASCEND_RT_VISIBLE_DEVICES={environ.get('ASCEND_RT_VISIBLE_DEVICES')!r} "
            f"names no device for local rank {local_rank}"
        )
    if wanted != str(device_id):
        return refuse(
            f"rank_id {rank} is device_id {wanted} in {path}, but rank {rank} runs on "
            f"device {device_id} (local rank {local_rank}): the table's ranks are not "
            "in torchrun's node-rank and local-rank order"
        )
    names = {name for name in identities if name}
    servers = {str(server.get(key)) for key in ("server_id", "host_ip") if server.get(key) is not None}
    if not servers & names:
        return refuse(
            f"rank_id {rank} is on server {sorted(servers)} in {path}, but rank {rank} runs "
            f"on this node ({', '.join(sorted(names))}): the table's servers are not in "
            "torchrun's node-rank order"
        )
    if "super_device_id" in device:
        result["super_device_id"] = str(device["super_device_id"])
        sdid, why_not = read_sdid(device_id)
        result["sdid"] = sdid
        if sdid is None:
            result["warning"] = f"super_device_id not compared with the die's SDID: {why_not}"
        elif str(sdid) != str(device["super_device_id"]):
            return refuse(
                f"rank_id {rank} has super_device_id {device['super_device_id']} in {path}, "
                f"but device {device_id} reports SDID {sdid} (spod-info)"
            )
    result["ok"] = True
    return result


def node_identities(environ: Dict[str, str], node: str) -> List[str]:
    """The names and addresses the rank table may call this node: the inventory name, the
    address the launcher bound (``ASCENDPREP_NODE_ADDRESS``), ``HCCL_IF_IP``, the hostname."""
    names = [node, socket.gethostname(), environ.get("ASCENDPREP_NODE_ADDRESS", ""), environ.get("HCCL_IF_IP", "")]
    return [name.strip() for name in names if name and name.strip()]


# --------------------------------------------------------------------------------------------
# Phases
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def phase(report: RankReport, name: str) -> Iterator[None]:
    """Time a phase; an exception inside fails it (and ends the run) with a one-line reason."""
    report.current_phase = name
    started = time.perf_counter()
    try:
        yield
    except PhaseFailed as exc:
        report.fail(name, str(exc))
        raise
    except Exception as exc:
        report.fail(name, describe_exception(exc))
        raise PhaseFailed(str(exc)) from exc
    finally:
        report.finish(name, time.perf_counter() - started)


def init_process_group(runtime: Runtime, torch_timeout_s: float) -> None:
    """Join the process group; ``torch_timeout_s`` is torch's backstop, beyond every step's."""
    import torch.distributed as dist

    dist.init_process_group(runtime.backend, timeout=timedelta(seconds=torch_timeout_s))


def run_connectivity(
    runtime: Runtime, env: TorchrunEnv, watchdog: Watchdog, first_timeout_s: float, timeout_s: float
) -> Optional[str]:
    """Each rank r adds r+1 at index r; returns a reason if any rank's contribution is absent.

    HCCL and NCCL build their communicator lazily, inside the first collective, and under
    torchrun ``init_process_group`` only joins torchrun's store; so the first all-reduce is the
    real rendezvous of the devices and gets ``first_timeout_s`` (the init timeout).
    """
    import torch
    import torch.distributed as dist

    tensor = torch.zeros(env.world_size, dtype=torch.float32)
    tensor[env.rank] = env.rank + 1
    tensor = tensor.to(runtime.device)
    with watchdog.step("connectivity", "the first all_reduce (communicator set-up)", first_timeout_s):
        dist.all_reduce(tensor)
        runtime.synchronize()
    with watchdog.step("connectivity", "the connectivity barrier", timeout_s):
        dist.barrier()
        runtime.synchronize()
    got = tensor.cpu().tolist()
    wrong = [r for r, value in enumerate(got) if value != r + 1]
    if wrong:
        return f"connectivity all_reduce returned wrong values for the contributions of ranks {_rank_list(wrong)}"
    return None


def _rank_list(ranks: Sequence[int], limit: int = 16) -> str:
    shown = ", ".join(str(r) for r in ranks[:limit])
    return shown + (f" and {len(ranks) - limit} more" if len(ranks) > limit else "")


@dataclass(frozen=True)
class SweepSettings:
    sizes: Sequence[int]
    warmup: int
    iters: int
    timeout_s: float
    inject_wrong: bool
    stall_s: float  # self-test: sleep this long before the sweep (0: do not)


def run_performance(
    runtime: Runtime, env: TorchrunEnv, watchdog: Watchdog, settings: SweepSettings, report: RankReport
) -> None:
    """The size sweep; wrong elements fail the phase but the sweep continues to the end."""
    import torch
    import torch.distributed as dist

    if settings.stall_s:
        # Self-test: this rank stops responding; its peers must time out naming this phase.
        # Bounded, so that a rank nobody stops does not linger.
        time.sleep(settings.stall_s)
    # Sizes are whole fp32 elements: rounded down, at least one.
    counts = sorted({max(1, size // FP32_BYTES) for size in settings.sizes})
    pattern = torch.arange(counts[-1], dtype=torch.int32) % PATTERN_PERIOD
    world = env.world_size
    offset = world * (world + 1) // 2
    bus_factor = bus_bandwidth_factor(world)
    wrong_sizes = []
    for count in counts:
        nbytes = count * FP32_BYTES
        label = f"all_reduce of {format_size(nbytes)} bytes"
        base = pattern[:count]
        data = (base + (env.rank + 1)).to(torch.float32)
        if settings.inject_wrong:
            data[0] += 1
            data[-1] += 1
        buffer = data.to(runtime.device)
        with watchdog.step("performance", f"the checked {label}", settings.timeout_s):
            dist.all_reduce(buffer)
            runtime.synchronize()
        expected = (base * world + offset).to(torch.float32)
        wrong = int((buffer.cpu() != expected).sum().item())
        del data, expected
        buffer.zero_()
        with watchdog.step("performance", f"the warm-up {label}", settings.timeout_s):
            for _ in range(settings.warmup):
                dist.all_reduce(buffer)
            runtime.synchronize()
            dist.barrier()
            runtime.synchronize()
        with watchdog.step("performance", f"the timed {label}", settings.timeout_s):
            started = time.perf_counter()
            for _ in range(settings.iters):
                dist.all_reduce(buffer)
            runtime.synchronize()
            elapsed = time.perf_counter() - started
        wrong += int(buffer.cpu().count_nonzero().item())
        del buffer
        time_us = elapsed / settings.iters * 1e6
        algbw = nbytes / time_us / 1e3  # bytes/us -> GB/s (1e9 bytes per second)
        report.data["sizes"].append(
            {
                "bytes": nbytes,
                "elements": count,
                "time_us": round(time_us, 3),
                "algbw_GBps": round(algbw, 6),
                "busbw_GBps": round(algbw * bus_factor, 6),
                "wrong_elements": wrong,
            }
        )
        if wrong:
            wrong_sizes.append(f"{wrong} at {format_size(nbytes)}")
    if wrong_sizes:
        report.fail("performance", "all_reduce returned wrong elements: " + ", ".join(wrong_sizes))


# --------------------------------------------------------------------------------------------
# Training (DDP, FSDP, HSDP), the way the Ascend PyTorch samples do it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainSettings:
    steps: int
    amp: bool
    timeout_s: float


def _toy_model() -> Any:
    """The samples' ToyModel: Linear(10, 10) -> ReLU -> Linear(10, 5)."""
    import torch.nn as nn

    return nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 5))


def run_training(
    runtime: Runtime, env: TorchrunEnv, watchdog: Watchdog, settings: TrainSettings, report: RankReport
) -> None:
    """Run DDP, FSDP and HSDP in turn; a mode that raises ends training, a failed check does not."""
    results: Dict[str, Dict[str, Any]] = {}
    report.data["train"] = results
    runners = {"ddp": _train_ddp, "fsdp": _train_fsdp, "hsdp": _train_hsdp}
    for mode in TRAIN_MODES:
        started = time.perf_counter()
        try:
            with watchdog.step("train", f"{mode.upper()} training", settings.timeout_s):
                result = runners[mode](runtime, env, settings)
        except _Skip as skip:
            result = {"status": "skipped", "reason": str(skip)}
        except Exception as exc:
            results[mode] = {
                "status": "fail",
                "reason": describe_exception(exc),
                "seconds": round(time.perf_counter() - started, 6),
            }
            for later in TRAIN_MODES[TRAIN_MODES.index(mode) + 1 :]:
                results[later] = {"status": "not_run", "reason": f"{mode} failed before it"}
            raise PhaseFailed(f"{mode}: {describe_exception(exc)}") from exc
        result["seconds"] = round(time.perf_counter() - started, 6)
        results[mode] = result
    failed = [f"{mode}: {r['reason']}" for mode, r in results.items() if r["status"] == "fail"]
    if failed:
        report.fail("train", "; ".join(failed))


class _Skip(Exception):
    """This torch/device cannot run the mode; the reason is reported, nothing is faked."""


def _train_ddp(runtime: Runtime, env: TorchrunEnv, settings: TrainSettings) -> Dict[str, Any]:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _seeded_model(runtime)
    device_ids = None if runtime.device_type == "cpu" else [env.local_rank]
    wrapped = DDP(model, device_ids=device_ids)
    amp_context, scaler, amp_note = _amp_for(runtime, settings.amp)
    loss = _train_steps(wrapped, runtime, env, settings.steps, amp_context, scaler)
    result = _judge(loss, _params_digest(wrapped.module.parameters()), runtime)
    result.update({"api": "DistributedDataParallel", "amp": amp_note})
    return result


def _train_fsdp(runtime: Runtime, env: TorchrunEnv, settings: TrainSettings) -> Dict[str, Any]:
    return _train_sharded(runtime, env, settings, mesh_shape=None)


def _train_hsdp(runtime: Runtime, env: TorchrunEnv, settings: TrainSettings) -> Dict[str, Any]:
    if env.world_size % env.local_world_size:
        raise _Skip(
            f"WORLD_SIZE {env.world_size} is not a multiple of LOCAL_WORLD_SIZE "
            f"{env.local_world_size}: nodes run different process counts"
        )
    nodes = env.world_size // env.local_world_size
    return _train_sharded(runtime, env, settings, mesh_shape=(nodes, env.local_world_size))


def _train_sharded(
    runtime: Runtime, env: TorchrunEnv, settings: TrainSettings, mesh_shape: Optional["tuple[int, int]"]
) -> Dict[str, Any]:
    """FSDP (mesh_shape None) or HSDP over a (nodes, procs per node) DeviceMesh.

    On NPU/GPU this uses ``FullyShardedDataParallel`` as the Ascend samples do. That class
    refuses CPU devices in current torch, so on CPU it uses ``fully_shard`` (FSDP2), whose
    2-D mesh form is HSDP; if neither fits, the mode is skipped with the reason.
    """
    if runtime.device_type == "cpu":
        return _train_fully_shard(runtime, env, settings, mesh_shape)
    return _train_fsdp1(runtime, env, settings, mesh_shape)


def _init_mesh(runtime: Runtime, shape: "tuple[int, ...]", names: "tuple[str, ...]") -> Any:
    try:
        from torch.distributed.device_mesh import init_device_mesh
    except ImportError:
        raise _Skip("torch.distributed.device_mesh.init_device_mesh is missing (torch < 2.2)")
    return init_device_mesh(runtime.device_type, shape, mesh_dim_names=names)


def _train_fsdp1(
    runtime: Runtime, env: TorchrunEnv, settings: TrainSettings, mesh_shape: Optional["tuple[int, int]"]
) -> Dict[str, Any]:
    import inspect

    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy

    model = _seeded_model(runtime)
    if mesh_shape is None:
        wrapped = FSDP(model, device_id=env.local_rank)
        note: Dict[str, Any] = {"api": "FullyShardedDataParallel"}
    else:
        if "device_mesh" not in inspect.signature(FSDP.__init__).parameters:
            raise _Skip("FullyShardedDataParallel has no device_mesh argument (torch < 2.2)")
        mesh = _init_mesh(runtime, mesh_shape, ("replicate", "shard"))
        wrapped = FSDP(
            model, device_mesh=mesh, device_id=env.local_rank, sharding_strategy=ShardingStrategy.HYBRID_SHARD
        )
        note = {"api": "FullyShardedDataParallel(HYBRID_SHARD)", "mesh": list(mesh_shape)}
    loss = _train_steps(wrapped, runtime, env, settings.steps, contextlib.nullcontext, None)
    with FSDP.summon_full_params(wrapped):
        digest = _params_digest(wrapped.parameters())
    result = _judge(loss, digest, runtime)
    result.update(note)
    return result


def _train_fully_shard(
    runtime: Runtime, env: TorchrunEnv, settings: TrainSettings, mesh_shape: Optional["tuple[int, int]"]
) -> Dict[str, Any]:
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        raise _Skip(
            "FullyShardedDataParallel needs an accelerator and this torch has no "
            "fully_shard (torch < 2.6) to shard on CPU"
        )
    if mesh_shape is None:
        mesh = _init_mesh(runtime, (env.world_size,), ("shard",))
        note: Dict[str, Any] = {"api": "fully_shard"}
    else:
        mesh = _init_mesh(runtime, mesh_shape, ("replicate", "shard"))
        note = {"api": "fully_shard(2-D mesh)", "mesh": list(mesh_shape)}
    model = _seeded_model(runtime)
    fully_shard(model, mesh=mesh)
    loss = _train_steps(model, runtime, env, settings.steps, contextlib.nullcontext, None)
    digest = _params_digest(p.full_tensor() for p in model.parameters())
    result = _judge(loss, digest, runtime)
    result.update(note)
    return result


def _seeded_model(runtime: Runtime) -> Any:
    import torch

    torch.manual_seed(0)  # identical initial weights on every rank
    return _toy_model().to(runtime.device)


def _amp_for(runtime: Runtime, wanted: bool) -> "tuple[Callable[[], Any], Any, Dict[str, Any]]":
    """Autocast context factory, GradScaler and a note; AMP only on accelerators.

    The Ascend AMP sample uses ``torch_npu.npu.amp`` with DDP, one process per NPU.
    """
    import torch

    if not wanted:
        return contextlib.nullcontext, None, {"status": "skipped", "reason": "--no-amp"}
    if runtime.device_type == "npu":
        from torch_npu.npu import amp

        return amp.autocast, amp.GradScaler(), {"status": "on", "api": "torch_npu.npu.amp"}
    if runtime.device_type == "cuda":
        scaler_cls = getattr(getattr(torch, "amp", None), "GradScaler", None)
        scaler = scaler_cls("cuda") if scaler_cls is not None else torch.cuda.amp.GradScaler()
        return (
            lambda: torch.autocast("cuda", dtype=torch.float16),
            scaler,
            {"status": "on", "api": "torch.autocast(cuda, float16)"},
        )
    return contextlib.nullcontext, None, {"status": "skipped", "reason": "AMP is exercised on NPU/GPU only (CPU run)"}


def _train_steps(
    model: Any, runtime: Runtime, env: TorchrunEnv, steps: int, autocast: Callable[[], Any], scaler: Any
) -> float:
    """A few SGD steps on per-rank random data (as the samples do); returns the last loss."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(1000 + env.rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_value = float("nan")
    for _ in range(steps):
        inputs = torch.randn(20, 10, generator=generator).to(runtime.device)
        labels = torch.randn(20, 5, generator=generator).to(runtime.device)
        optimizer.zero_grad()
        with autocast():
            loss = F.mse_loss(model(inputs).float(), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        loss_value = float(loss.detach().float().cpu().item())
    runtime.synchronize()
    return loss_value


def _params_digest(params: Any) -> bytes:
    """SHA-256 of all parameters' fp32 values, in order: equal digests mean bit-identical weights.

    Goes through ``tolist`` and ``array('f')`` (exact for fp32) because torch may lack numpy.
    """
    hasher = hashlib.sha256()
    for param in params:
        hasher.update(array("f", param.detach().float().cpu().flatten().tolist()).tobytes())
    return hasher.digest()


def _judge(loss: float, digest: bytes, runtime: Runtime) -> Dict[str, Any]:
    """Gather every rank's digest and compare; also require a finite loss."""
    import torch
    import torch.distributed as dist

    # 16 digest bytes as four int32 values: a dtype every backend can all_gather.
    mine = torch.tensor(list(memoryview(digest[:16]).cast("i")), dtype=torch.int32)
    mine = mine.to(runtime.device)
    gathered = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)
    digests = [t.cpu().tolist() for t in gathered]
    differing = [r for r, d in enumerate(digests) if d != digests[dist.get_rank()]]
    reasons = []
    if not math.isfinite(loss):
        reasons.append(f"loss is not finite ({loss})")
    if differing:
        reasons.append(f"parameters differ from ranks {_rank_list(differing)}")
    result: Dict[str, Any] = {
        "status": "fail" if reasons else "pass",
        "loss": loss if math.isfinite(loss) else str(loss),
        "params_identical": not differing,
        "param_digest": digest[:16].hex(),
    }
    if reasons:
        result["reason"] = "; ".join(reasons)
    return result


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


_NODE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")


def _node_name(text: str) -> str:
    """Inventory names are host-like; anything else would break the one-line error format."""
    if not _NODE_NAME_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a node name (letters, digits, '.', '_', ':', '-')")
    return text


def _size_spec(text: str) -> List[int]:
    try:
        return parse_size_spec(text)
    except SizeSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
        return value

    return convert


def _non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="worker.py", description="One rank of the ascendprep all-reduce check; run it under torchrun."
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="process-group backend (default: hccl on NPU, nccl on CUDA, gloo on CPU)",
    )
    parser.add_argument(
        "--sizes",
        type=_size_spec,
        default=None,
        help=f"sweep: SIZE, START:END (x4 steps), START:END:xF or START:END:+STEP; "
        f"fp32, so sizes round down to whole 4-byte elements "
        f"(default {DEFAULT_SIZES_ACCELERATOR} on NPU/GPU, "
        f"{DEFAULT_SIZES_CPU} on CPU)",
    )
    parser.add_argument("--warmup", type=_non_negative_int, default=5, help="warm-up all-reduces per size (default 5)")
    parser.add_argument("--iters", type=_positive(int), default=20, help="timed all-reduces per size (default 20)")
    parser.add_argument(
        "--init-timeout",
        type=_positive(float),
        default=300.0,
        help="seconds to wait for every rank to join (default 300)",
    )
    parser.add_argument(
        "--op-timeout",
        type=_positive(float),
        default=120.0,
        help="seconds for each collective step: one check, one warm-up or one timed batch (default 120)",
    )
    parser.add_argument("--train", action="store_true", help="also train a tiny model with DDP, FSDP and HSDP")
    parser.add_argument("--train-steps", type=_positive(int), default=5)
    parser.add_argument(
        "--train-timeout", type=_positive(float), default=300.0, help="seconds for each training mode (default 300)"
    )
    parser.add_argument("--no-amp", action="store_true", help="train DDP without AMP")
    parser.add_argument(
        "--node-name",
        type=_node_name,
        default=None,
        help="name reported for this node (default: hostname); the launcher passes the inventory name",
    )
    parser.add_argument(
        "--result-dir",
        default=None,
        help="also write rank-<N>.json here (atomically), for launchers that fetch files instead of reading stdout",
    )
    selftest = parser.add_argument_group(
        "self-test (fault injection to prove the checks fail; never for a real verdict)"
    )
    selftest.add_argument(
        "--inject-wrong",
        type=_non_negative_int,
        metavar="RANK",
        default=None,
        help="this rank corrupts two input elements of every checked all-reduce",
    )
    selftest.add_argument(
        "--inject-stall",
        type=_non_negative_int,
        metavar="RANK",
        default=None,
        help="this rank stops responding before the performance phase (for 3 x --op-timeout + 30 s)",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    environ = dict(os.environ)
    node_default = socket.gethostname()
    report = RankReport(
        _int_or_none(environ.get("RANK")),
        _int_or_none(environ.get("LOCAL_RANK")),
        _int_or_none(environ.get("WORLD_SIZE")),
        _int_or_none(environ.get("LOCAL_WORLD_SIZE")),
        node_default,
    )
    try:
        args = build_parser().parse_args(argv)
        if args.node_name:
            report.data["node"] = args.node_name
        env = read_torchrun_env(environ)
    except UsageError as exc:
        report.fail("setup", str(exc))
        report.emit(None)
        return EXIT_USAGE
    watchdog = Watchdog(report, args.result_dir)
    watchdog.start()
    try:
        _run_phases(args, env, report, watchdog)
    except PhaseFailed:
        pass  # already recorded in the report by phase()
    report.emit(args.result_dir)
    return EXIT_OK if report.ok else EXIT_FAILED


def _run_phases(args: argparse.Namespace, env: TorchrunEnv, report: RankReport, watchdog: Watchdog) -> None:
    with phase(report, "setup"):
        largest = max_exact_world_size()
        if env.world_size > largest:
            raise PhaseFailed(
                f"WORLD_SIZE {env.world_size} exceeds {largest}, the largest for which the exact fp32 check holds"
            )
        runtime = choose_runtime(args.backend, env.local_rank)
        report.data["backend"] = runtime.backend
        report.data["device"] = runtime.device
        report.data["versions"].update(installed_versions())
        report.data["rank_table"] = check_rank_table(
            dict(os.environ), env.rank, env.local_rank, node_identities(dict(os.environ), report.data["node"])
        )
        for flag in ("inject_wrong", "inject_stall"):
            if getattr(args, flag) is not None:
                report.data["injected"].append(f"{flag}={getattr(args, flag)}")
    with phase(report, "init"):
        with watchdog.step("init", "init_process_group (rendezvous with every rank)", args.init_timeout):
            longest = max(args.init_timeout, args.op_timeout, args.train_timeout)
            init_process_group(runtime, longest + TIMEOUT_GRACE_S)
    with phase(report, "connectivity"):
        wrong = run_connectivity(runtime, env, watchdog, args.init_timeout, args.op_timeout)
        if wrong:
            report.fail("connectivity", wrong)
    default_sizes = DEFAULT_SIZES_CPU if runtime.device_type == "cpu" else DEFAULT_SIZES_ACCELERATOR
    sweep = SweepSettings(
        sizes=args.sizes or parse_size_spec(default_sizes),
        warmup=args.warmup,
        iters=args.iters,
        timeout_s=args.op_timeout,
        inject_wrong=args.inject_wrong == env.rank,
        stall_s=3 * args.op_timeout + TIMEOUT_GRACE_S if args.inject_stall == env.rank else 0.0,
    )
    with phase(report, "performance"):
        run_performance(runtime, env, watchdog, sweep, report)
    if args.train:
        with phase(report, "train"):
            settings = TrainSettings(args.train_steps, not args.no_amp, args.train_timeout)
            run_training(runtime, env, watchdog, settings, report)
    else:
        report.skip("train", "not requested (--train)")
    if report.ok:
        import torch.distributed as dist

        with watchdog.step(report.current_phase, "destroy_process_group", args.op_timeout):
            dist.destroy_process_group()


def _exit_without_teardown(code: int) -> None:
    """Exit without interpreter shutdown, once the record is out.

    Shutdown runs torch's C++ destructors: after a failure they can block on dead peers, and
    after a clean gloo run with DDP/FSDP they sometimes abort ("terminate called without an
    active exception", seen with torch 2.13), which would turn a pass into a failed exit.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        exit_code = main()
    except Exception:  # a bug in this worker: still one line naming it, then the traceback
        sys.stderr.write(
            f"{ERROR_MARKER}phase=worker rank={os.environ.get('RANK', '?')} "
            f"node={socket.gethostname()} reason=internal error, traceback follows\n"
        )
        traceback.print_exc()
        exit_code = EXIT_FAILED
    _exit_without_teardown(exit_code)
