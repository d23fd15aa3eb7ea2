"""Run one job on many hosts at once, without one bad host costing the others anything.

A :class:`Session` holds at most one open transport per host for the life of a command, so the
facts phase and the apply phase share one SSH connection per host. ``run`` works through the
hosts with ``forks`` worker threads; whatever goes wrong on a host (no route, a rejected key, an
unknown host key, a timeout, sudo, an exception in the job) becomes that host's
:class:`HostOutcome` with an ``error`` and a ``kind``, and the other hosts carry on.

With a :class:`~ascendprep.remote.deadline.Deadline` the session also bounds the whole command:
once it passes, ``run`` stops waiting, reports every host still at work (or still queued) as
"timed out in STEP", closes those hosts' connections from outside (a thread blocked in
paramiko cannot be killed, but a closed socket wakes it) and returns. The workers are daemon
threads, so one that never wakes does not keep the process alive at exit either.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Generic, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar

from ascendprep.remote.access import HostAccess
from ascendprep.remote.deadline import LIMIT_NAME, Deadline
from ascendprep.remote.errors import CommandTimeout, OutputTooLarge, RemoteError
from ascendprep.remote.sudo import SudoGate, SudoPassword
from ascendprep.remote.transport import Transport
from ascendprep.run.progress import Progress

T = TypeVar("T")
Job = Callable[[Transport, HostAccess], T]
TransportFactory = Callable[[HostAccess], Transport]


@dataclass(frozen=True)
class HostOutcome(Generic[T]):
    """What happened on one host: a value, or an error with its kind (see ``HOST_ERROR_KINDS``)."""

    host: str
    value: Optional[T] = None
    error: Optional[str] = None
    kind: Optional[str] = None
    seconds: float = 0.0
    #: The limit that ended this host's work (``command_timeout``, or the name in ``limits.py`` of
    #: an output cap: ``HOST_OUTPUT_CAP``, ``FETCH_FILE_CAP``), when one did.
    limit: Optional[str] = None
    #: That limit's value in bytes, for an output cap.
    limit_bytes: Optional[int] = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Session:
    """Connections to a set of hosts, opened on first use and kept until the session closes.

    ``transport_factory`` returns a connected Transport for a host or raises RemoteError; the
    default connects with :class:`SSHTransport`, sharing jump-host connections. A host that
    could not be connected is not retried within the session: later phases report the same
    error at once instead of waiting out the connect timeout again.
    """

    def __init__(
        self,
        hosts: Sequence[HostAccess],
        forks: int,
        transport_factory: Optional[TransportFactory] = None,
        sudo_password: Optional[SudoPassword] = None,
        deadline: Optional[Deadline] = None,
    ) -> None:
        if forks < 1:
            raise ValueError(f"forks must be at least 1, not {forks}")
        duplicates = _repeated(h.name for h in hosts)
        if duplicates:
            raise ValueError(f"host names must be unique; repeated: {', '.join(duplicates)}")
        self.hosts: List[HostAccess] = list(hosts)
        self.forks = forks
        #: Jump-host connections shared by the hosts behind them (made with the first SSH host).
        self._jumps: Optional[Any] = None
        #: A prompted sudo password (``--ask-sudo-password``); None: the environment's, if any.
        # One gate for every host: the password is checked on one host before the others get it.
        self._sudo_password = SudoGate(sudo_password)
        self._factory = transport_factory or self._connect_ssh
        self._transports: Dict[str, Transport] = {}
        self._connect_errors: Dict[str, RemoteError] = {}
        self._lock = threading.Lock()
        self._closed = False
        #: The command's overall deadline (None: only the per-step limits apply).
        self.deadline = deadline
        #: Hosts given up on when the deadline passed; their late results are ignored.
        self._abandoned: Set[str] = set()
        #: Limits hit during this session, for reports (``limits_hit`` in JSON output).
        self.limits_hit: List[Dict[str, Any]] = []

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _connect_ssh(self, access: HostAccess) -> Transport:
        # paramiko and fabric load with the first host contacted over SSH, not with the session:
        # plan --offline, verify --from-bundle, --local runs and --help never load them.
        from ascendprep.remote.ssh import JumpHosts, SSHTransport

        with self._lock:
            if self._jumps is None:
                self._jumps = JumpHosts()
        return SSHTransport(access, jumps=self._jumps, sudo_password=self._sudo_password).open()

    def transport(self, access: HostAccess) -> Transport:
        """The open transport for ``access``, connecting on first use (raises RemoteError)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the session is closed")
            if access.name in self._transports:
                return self._transports[access.name]
            if access.name in self._connect_errors:
                earlier = self._connect_errors[access.name]
                raise type(earlier)(earlier.host, earlier.message)
        try:
            transport = self._factory(access)
        except RemoteError as exc:
            with self._lock:
                self._connect_errors[access.name] = exc
            raise
        with self._lock:
            late = self._closed or access.name in self._abandoned
            if not late:
                self._transports[access.name] = transport
        if late:  # connected after the deadline passed or the session closed: nobody will use it
            transport.close()
            raise CommandTimeout(access.name, f"{access.name}: connected only after the session ended")
        return transport

    def exec_counts(self) -> Dict[str, int]:
        """Remote execs per connected host so far (for benchmarks and round-trip budgets)."""
        with self._lock:
            return {name: t.exec_count for name, t in self._transports.items()}

    def run(
        self,
        job: Job[T],
        progress: Optional[Progress] = None,
        hosts: Optional[Iterable[HostAccess]] = None,
        step: str = "the remote step",
    ) -> Dict[str, HostOutcome[T]]:
        """Run ``job(transport, host)`` on every host (or on ``hosts``), ``forks`` at a time.

        Returns outcomes keyed by host name, in the order the hosts were given. ``step`` names
        the phase in "timed out in STEP" when the session's deadline passes during it.
        """
        targets = list(self.hosts if hosts is None else hosts)
        outcomes: Dict[str, HostOutcome[T]] = {}
        if not targets:
            return outcomes
        if self.deadline is not None and self.deadline.passed:
            return self._timed_out([], targets, step, outcomes)
        if progress is not None:
            progress.start(len(targets))
        pending: Deque[HostAccess] = deque(targets)
        running: Set[str] = set()
        #: Filled by the workers under ``state``; the main thread reads it only once all are in,
        #: or copies it under ``state`` when the deadline passes (late workers fill the original).
        done: Dict[str, HostOutcome[T]] = {}
        all_done = threading.Event()
        stop = threading.Event()
        state = threading.Lock()

        def worker() -> None:
            while not stop.is_set():
                with state:
                    if not pending:
                        return
                    access = pending.popleft()
                    running.add(access.name)
                outcome = self._run_one(job, access, progress)
                with state:  # in ``done`` as it leaves ``running``: never in neither
                    done[outcome.host] = outcome
                    running.discard(access.name)
                    if len(done) == len(targets):
                        all_done.set()

        for index in range(min(self.forks, len(targets))):
            threading.Thread(target=worker, name=f"ascendprep-host-{index}", daemon=True).start()
        try:
            # The main thread sleeps until the last host is done, waking only to watch the
            # deadline: waking it for each host's outcome cost its CPU per host and phase
            # (GIL hand-offs).
            while not all_done.is_set():
                if self.deadline is not None and self.deadline.passed:
                    stop.set()
                    with state:
                        queued, busy = list(pending), [h for h in targets if h.name in running]
                        pending.clear()
                        outcomes.update(done)
                    busy = [h for h in busy if h.name not in outcomes]
                    return self._timed_out(busy, queued, step, outcomes, targets)
                wait = 0.5 if self.deadline is None else min(0.5, self.deadline.remaining())
                all_done.wait(max(wait, 0.01))
        except BaseException:
            # Ctrl-C or a bug in here: stop queued hosts, and close connections so that
            # in-flight jobs fail fast instead of running on unattended.
            stop.set()
            self.close()
            raise
        finally:
            if progress is not None:
                progress.stop()
        ordered = {h.name: done[h.name] for h in targets}
        self._note_output_caps(ordered, step)
        return ordered

    def _note_output_caps(self, outcomes: Dict[str, HostOutcome[T]], step: str) -> None:
        """One ``limits_hit`` entry per output cap that cut hosts in this step (names them all)."""
        cut: Dict[Tuple[str, int], List[str]] = {}
        for outcome in outcomes.values():
            if outcome.limit is not None and outcome.limit != LIMIT_NAME and outcome.limit_bytes is not None:
                cut.setdefault((outcome.limit, outcome.limit_bytes), []).append(outcome.host)
        for (limit, cap), names in cut.items():
            self.limits_hit.append({"limit": limit.lower(), "bytes": cap, "step": step, "hosts": names})

    def note_output_cap(self, host: str, error: OutputTooLarge, step: str) -> None:
        """Name an output cap that cut ``host`` in a step run on this session's connections
        outside :meth:`run` (the all-reduce's own threads): one ``limits_hit`` entry per cap and
        step, naming every host it cut, as :meth:`run` records them. Thread-safe."""
        limit = error.limit.lower()
        with self._lock:
            for hit in self.limits_hit:
                if (hit.get("limit"), hit.get("bytes"), hit.get("step")) == (limit, error.cap, step):
                    if host not in hit["hosts"]:
                        hit["hosts"].append(host)
                    return
            self.limits_hit.append({"limit": limit, "bytes": error.cap, "step": step, "hosts": [host]})

    def _timed_out(
        self,
        busy: List[HostAccess],
        queued: List[HostAccess],
        step: str,
        outcomes: Dict[str, HostOutcome[T]],
        targets: Optional[List[HostAccess]] = None,
    ) -> Dict[str, HostOutcome[T]]:
        """Give up on ``busy`` (at work) and ``queued`` (not started) hosts: the deadline passed."""
        assert self.deadline is not None
        what = self.deadline.describe()
        for access in busy:
            outcomes[access.name] = HostOutcome(
                access.name,
                error=f"{access.name}: timed out in {step}: {what} passed",
                kind="timeout",
                seconds=self.deadline.seconds,
                limit=LIMIT_NAME,
            )
        for access in queued:
            outcomes[access.name] = HostOutcome(
                access.name,
                error=f"{access.name}: timed out before {step}: {what} passed",
                kind="timeout",
                limit=LIMIT_NAME,
            )
        names = [h.name for h in busy + queued]
        if names:
            self.limits_hit.append(
                {
                    "limit": LIMIT_NAME,
                    "seconds": self.deadline.seconds,
                    "source": self.deadline.source,
                    "step": step,
                    "hosts": names,
                }
            )
        self._abandon(names)
        order = targets if targets is not None else busy + queued
        self._note_output_caps(
            {h.name: outcomes[h.name] for h in order if h.name in outcomes}, step
        )  # those done in time
        return {h.name: outcomes[h.name] for h in order}

    def _abandon(self, names: List[str]) -> None:
        """Stop using these hosts: later phases fail at once, their connections are closed.

        Closing happens on a daemon thread: closing a transport whose socket is stuck may block.
        """
        closing: List[Transport] = []
        with self._lock:
            for name in names:
                self._abandoned.add(name)
                self._connect_errors[name] = CommandTimeout(
                    name, f"{name}: given up on: {self.deadline.describe() if self.deadline else 'the deadline'} passed"
                )
                transport = self._transports.pop(name, None)
                if transport is not None:
                    closing.append(transport)
        if closing:
            threading.Thread(target=_close_all, args=(closing,), name="ascendprep-close", daemon=True).start()

    def _run_one(self, job: Job[T], access: HostAccess, progress: Optional[Progress]) -> HostOutcome[T]:
        started = time.monotonic()
        if progress is not None:
            progress.host_started(access.name)
        try:
            value = job(self.transport(access), access)
            outcome: HostOutcome[T] = HostOutcome(access.name, value=value, seconds=time.monotonic() - started)
        except OutputTooLarge as exc:
            outcome = HostOutcome(
                access.name,
                error=str(exc),
                kind=exc.kind,
                seconds=time.monotonic() - started,
                limit=exc.limit,
                limit_bytes=exc.cap,
            )
        except RemoteError as exc:
            if exc.kind == "unreachable":
                self._forget(access.name)  # connection lost mid-job: a later phase may reconnect
            outcome = HostOutcome(access.name, error=str(exc), kind=exc.kind, seconds=time.monotonic() - started)
        except Exception as exc:  # a bug or surprise in the job must not take down the other hosts
            outcome = HostOutcome(
                access.name,
                error=f"{access.name}: {type(exc).__name__}: {exc}",
                kind="error",
                seconds=time.monotonic() - started,
            )
        if progress is not None and access.name not in self._abandoned:
            progress.host_finished(access.name, outcome.ok)
        return outcome

    def _forget(self, name: str) -> None:
        with self._lock:
            transport = self._transports.pop(name, None)
        if transport is not None:
            transport.close()

    def close(self) -> None:
        """Close every connection (idempotent)."""
        with self._lock:
            transports = list(self._transports.values())
            self._transports.clear()
            self._closed = True
        for transport in transports:
            transport.close()
        if self._jumps is not None:
            self._jumps.close()


def _repeated(names: Iterable[str]) -> List[str]:
    """The names that occur more than once, sorted: one pass (``list.count`` per name made the
    check quadratic in the host count)."""
    seen: Set[str] = set()
    repeated: Set[str] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return sorted(repeated)


def _close_all(transports: List[Transport]) -> None:
    for transport in transports:
        transport.close()
