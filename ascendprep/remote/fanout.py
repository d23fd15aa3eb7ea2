"""Run one job on many hosts at once, without one bad host costing the others anything.

A :class:`Session` holds at most one open transport per host for the life of a command, so the
facts phase and the apply phase share one SSH connection per host. ``run`` works through the
hosts with a bounded thread pool (``forks``); whatever goes wrong on a host (no route, a rejected
key, an unknown host key, a timeout, sudo, an exception in the job) becomes that host's
:class:`HostOutcome` with an ``error`` and a ``kind``, and the other hosts carry on.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Dict, Generic, Iterable, List, Optional, Sequence, TypeVar

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import RemoteError
from ascendprep.remote.progress import Progress
from ascendprep.remote.ssh import JumpHosts, SSHTransport
from ascendprep.remote.sudo import SudoGate, SudoPassword
from ascendprep.remote.transport import Transport

T = TypeVar("T")
Job = Callable[[Transport, HostAccess], T]
TransportFactory = Callable[[HostAccess], Transport]


@dataclass(frozen=True)
class HostOutcome(Generic[T]):
    """What happened on one host: a value, or an error with its kind (see ``ERROR_KINDS``)."""

    host: str
    value: Optional[T] = None
    error: Optional[str] = None
    kind: Optional[str] = None
    seconds: float = 0.0

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
    ) -> None:
        if forks < 1:
            raise ValueError(f"forks must be at least 1, not {forks}")
        names = [h.name for h in hosts]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"host names must be unique; repeated: {', '.join(duplicates)}")
        self.hosts: List[HostAccess] = list(hosts)
        self.forks = forks
        self._jumps = JumpHosts()
        #: A prompted sudo password (``--ask-sudo-password``); None: the environment's, if any.
        # One gate for every host: the password is checked on one host before the others get it.
        self._sudo_password = SudoGate(sudo_password)
        self._factory = transport_factory or self._connect_ssh
        self._transports: Dict[str, Transport] = {}
        self._connect_errors: Dict[str, RemoteError] = {}
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _connect_ssh(self, access: HostAccess) -> Transport:
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
            self._transports[access.name] = transport
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
    ) -> Dict[str, HostOutcome[T]]:
        """Run ``job(transport, host)`` on every host (or on ``hosts``), ``forks`` at a time.

        Returns outcomes keyed by host name, in the order the hosts were given.
        """
        targets = list(self.hosts if hosts is None else hosts)
        outcomes: Dict[str, HostOutcome[T]] = {}
        if not targets:
            return outcomes
        if progress is not None:
            progress.start(len(targets))
        pool = ThreadPoolExecutor(max_workers=min(self.forks, len(targets)), thread_name_prefix="ascendprep-host")
        try:
            futures: Dict[Future, HostAccess] = {pool.submit(self._run_one, job, h, progress): h for h in targets}
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[outcome.host] = outcome
        except BaseException:
            # Ctrl-C or a bug in here: stop queued hosts, and close connections so that
            # in-flight jobs fail fast instead of running on unattended.
            pool.shutdown(wait=False, cancel_futures=True)
            self.close()
            raise
        finally:
            pool.shutdown(wait=True)
            if progress is not None:
                progress.stop()
        return {h.name: outcomes[h.name] for h in targets}

    def _run_one(self, job: Job[T], access: HostAccess, progress: Optional[Progress]) -> HostOutcome[T]:
        started = time.monotonic()
        if progress is not None:
            progress.host_started(access.name)
        try:
            value = job(self.transport(access), access)
            outcome: HostOutcome[T] = HostOutcome(access.name, value=value, seconds=time.monotonic() - started)
        except RemoteError as exc:
            if exc.kind == "unreachable":
                self._forget(access.name)  # connection lost mid-job: a later phase may reconnect
            outcome = HostOutcome(access.name, error=str(exc), kind=exc.kind, seconds=time.monotonic() - started)
        except Exception as exc:  # a bug or surprise in the job must not take down the other hosts
            outcome = HostOutcome(
                access.name, error=f"{access.name}: {type(exc).__name__}: {exc}", kind="error",
                seconds=time.monotonic() - started,
            )
        if progress is not None:
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
        self._jumps.close()


def run_on_hosts(
    hosts: Sequence[HostAccess],
    job: Job[T],
    forks: int,
    progress: Optional[Progress] = None,
    transport_factory: Optional[TransportFactory] = None,
) -> Dict[str, HostOutcome[T]]:
    """One fan-out with its own connections, closed at the end. Use Session to keep them."""
    with Session(hosts, forks, transport_factory) as session:
        return session.run(job, progress)
