"""Fan-out: bounded concurrency, per-host failures that never stop the others, one connection per host."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import List

import pytest
from rich.console import Console
from sshd_server import Sshd, free_port

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import UnreachableError
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.transport import Transport
from ascendprep.run.fanout import Session
from ascendprep.run.progress import Progress, progress_for_terminal


def run_on_hosts(hosts, job, forks, progress=None, transport_factory=None):  # type: ignore[no-untyped-def]
    """One fan-out on connections of its own, closed at the end (what a one-phase command does)."""
    with Session(hosts, forks, transport_factory) as session:
        return session.run(job, progress)


def _hostname_job(transport: Transport, host: HostAccess) -> str:
    return transport.run_script("echo $((20 + 22))").raise_for_status(host.name).stdout.strip()


def test_one_dead_host_and_one_untrusted_host_do_not_stop_the_others(
    sshd: Sshd, known_hosts: Path, tmp_path: Path
) -> None:
    untrusted = tmp_path / "empty_known_hosts"
    untrusted.write_text("")
    hosts = [
        sshd.access("good1", known_hosts=[known_hosts]),
        HostAccess(name="dead", address="127.0.0.1", port=free_port(), known_hosts=[known_hosts], connect_timeout=5),
        sshd.access("stranger", known_hosts=[untrusted]),
        sshd.access("good2", known_hosts=[known_hosts]),
    ]
    started = time.monotonic()
    outcomes = run_on_hosts(hosts, _hostname_job, forks=4)
    assert time.monotonic() - started < 8
    assert list(outcomes) == ["good1", "dead", "stranger", "good2"]
    assert outcomes["good1"].ok and outcomes["good1"].value == "42"
    assert outcomes["good2"].ok and outcomes["good2"].value == "42"
    assert (outcomes["dead"].kind, outcomes["dead"].value) == ("unreachable", None)
    assert "connection refused" in outcomes["dead"].error
    assert outcomes["stranger"].kind == "host_key" and "--accept-new-host-keys" in outcomes["stranger"].error


def test_session_keeps_one_connection_per_host_across_phases(sshd: Sshd, known_hosts: Path) -> None:
    hosts = [sshd.access(f"n{i}", known_hosts=[known_hosts]) for i in range(3)]
    before = sshd.logins()
    with Session(hosts, forks=3) as session:
        facts = session.run(_hostname_job)
        applied = session.run(lambda t, h: t.run_script("echo applied").stdout)
        assert session.exec_counts() == {"n0": 2, "n1": 2, "n2": 2}
    assert all(o.ok for o in facts.values()) and all(o.value == "applied\n" for o in applied.values())
    assert sshd.logins() - before == 3


def test_failures_inside_jobs_are_recorded_with_their_kind() -> None:
    hosts = [HostAccess(name=n, address="127.0.0.1") for n in ("ok", "fails", "buggy", "slow")]

    def job(transport: Transport, host: HostAccess) -> str:
        if host.name == "fails":
            transport.run_script("echo 'no hccn_tool' >&2; exit 2").raise_for_status(host.name, "probe")
        if host.name == "buggy":
            raise KeyError("npu7")
        if host.name == "slow":
            transport.run_script("sleep 30", timeout=0.5).raise_for_status(host.name, "probe")
        return "fine"

    outcomes = run_on_hosts(hosts, job, forks=2, transport_factory=lambda h: LocalTransport(h.name))
    assert outcomes["ok"].value == "fine"
    assert (outcomes["fails"].kind, outcomes["fails"].error) == (
        "error",
        "probe on fails exited with rc 2: no hccn_tool",
    )
    assert outcomes["buggy"].kind == "error" and "KeyError" in outcomes["buggy"].error
    assert outcomes["slow"].kind == "timeout" and "timed out" in outcomes["slow"].error


def test_concurrency_is_bounded_by_forks() -> None:
    hosts = [HostAccess(name=f"n{i}", address="127.0.0.1") for i in range(9)]
    lock = threading.Lock()
    running: List[int] = [0]
    peak: List[int] = [0]

    def job(transport: Transport, host: HostAccess) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1

    outcomes = run_on_hosts(hosts, job, forks=3, transport_factory=lambda h: LocalTransport(h.name))
    assert all(o.ok for o in outcomes.values())
    assert peak[0] == 3


def test_a_host_that_failed_to_connect_is_not_retried_within_a_session() -> None:
    attempts: List[str] = []

    def factory(host: HostAccess) -> Transport:
        attempts.append(host.name)
        if host.name == "down":
            raise UnreachableError(host.name, "down: no route to host 10.0.0.9")
        return LocalTransport(host.name)

    hosts = [HostAccess(name="up", address="127.0.0.1"), HostAccess(name="down", address="10.0.0.9")]
    with Session(hosts, forks=2, transport_factory=factory) as session:
        first = session.run(lambda t, h: "x")
        second = session.run(lambda t, h: "y")
    assert sorted(attempts) == ["down", "up"]
    assert first["down"].error == second["down"].error == "down: no route to host 10.0.0.9"
    assert second["up"].value == "y"


def test_session_rejects_duplicate_names_and_zero_forks() -> None:
    host = HostAccess(name="n1", address="127.0.0.1")
    with pytest.raises(ValueError, match="repeated: n1"):
        Session([host, host], forks=2)
    with pytest.raises(ValueError, match="forks must be at least 1"):
        Session([host], forks=0)


def test_session_names_each_repeated_host_once_and_checks_large_fleets_in_linear_time() -> None:
    hosts = [HostAccess(name=f"n{i}", address="127.0.0.1") for i in range(50_000)]
    started = time.process_time()
    Session(hosts, forks=2).close()  # list.count per name took minutes at this size
    assert time.process_time() - started < 5
    again = [HostAccess(name=n, address="127.0.0.1") for n in ("b", "a", "b", "c", "a", "b")]
    with pytest.raises(ValueError, match=r"repeated: a, b$"):
        Session(again, forks=2)


def test_progress_counts_done_failed_and_in_flight() -> None:
    screen = io.StringIO()
    progress = Progress("facts", Console(file=screen, force_terminal=True, width=100))
    hosts = [HostAccess(name=f"n{i}", address="127.0.0.1") for i in range(4)]

    def job(transport: Transport, host: HostAccess) -> None:
        if host.name == "n3":
            raise RuntimeError("boom")

    run_on_hosts(hosts, job, forks=2, progress=progress, transport_factory=lambda h: LocalTransport(h.name))
    assert (progress.done, progress.failed, progress.in_flight) == (3, 1, 0)
    assert progress.summary() == "3 done · 1 failed · 0 in flight · 0 remaining"
    assert "facts" in screen.getvalue()


def test_no_progress_output_when_stderr_is_not_a_terminal() -> None:
    assert progress_for_terminal("facts", io.StringIO()) is None


def test_targets_behind_one_jump_host_share_one_login_to_it(sshd: Sshd, known_hosts: Path) -> None:
    bastion = sshd.access("bastion", known_hosts=[known_hosts])
    hosts = [sshd.access(f"n{i}", known_hosts=[known_hosts], jump=bastion) for i in range(3)]
    before = sshd.logins()
    outcomes = run_on_hosts(hosts, _hostname_job, forks=3)
    assert [o.value for o in outcomes.values()] == ["42", "42", "42"]
    assert sshd.logins() - before == 1 + 3


def test_a_dead_jump_host_is_tried_once_not_once_per_target(sshd: Sshd, known_hosts: Path) -> None:
    bastion = HostAccess(name="bastion", address="127.0.0.1", port=free_port(), known_hosts=[known_hosts])
    hosts = [sshd.access(f"n{i}", known_hosts=[known_hosts], jump=bastion) for i in range(4)]
    started = time.monotonic()
    outcomes = run_on_hosts(hosts, _hostname_job, forks=4)
    assert time.monotonic() - started < 3  # one refused connect + one retry, shared by all four
    assert {o.kind for o in outcomes.values()} == {"unreachable"}
    assert all("via jump host bastion: connection refused" in o.error for o in outcomes.values())
