"""The command deadline: a host that never answers cannot keep a fan-out, or the process, running."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from typing import List

import pytest

from ascendprep.base import limits
from ascendprep.remote.access import HostAccess
from ascendprep.remote.deadline import Deadline, command_deadline, default_timeout
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.transport import Transport
from ascendprep.run.fanout import Session


class StuckTransport(LocalTransport):
    """A transport whose scripts block (as a paramiko read on a dead peer can) until closed."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.closed = threading.Event()

    def run_script(self, script: str, timeout=None):  # type: ignore[override]
        self.closed.wait()  # no timeout: only close() wakes it
        raise RuntimeError("connection closed under the script")

    def close(self) -> None:
        self.closed.set()


def _hosts(*names: str) -> List[HostAccess]:
    return [HostAccess(name=n, address="127.0.0.1") for n in names]


def _session(names, stuck, forks, seconds):
    made = {}

    def factory(access: HostAccess) -> Transport:
        made[access.name] = StuckTransport(access.name) if access.name in stuck else LocalTransport(access.name)
        return made[access.name]

    session = Session(_hosts(*names), forks=forks, transport_factory=factory, deadline=Deadline(seconds))
    return session, made


def _echo(transport: Transport, host: HostAccess) -> str:
    return transport.run_script("echo ok").stdout.strip()


def test_a_stuck_host_is_reported_at_the_deadline_and_the_others_keep_their_results() -> None:
    session, made = _session(["good1", "stuck", "good2"], {"stuck"}, forks=3, seconds=2.0)
    started = time.monotonic()
    outcomes = session.run(_echo, step="gathering facts")
    elapsed = time.monotonic() - started

    assert 1.9 < elapsed < 3.5
    assert list(outcomes) == ["good1", "stuck", "good2"]
    assert outcomes["good1"].value == "ok" and outcomes["good2"].value == "ok"
    stuck = outcomes["stuck"]
    assert (stuck.kind, stuck.limit) == ("timeout", "command_timeout")
    assert stuck.error == "stuck: timed out in gathering facts: the command's deadline (2s, --timeout) passed"
    assert made["stuck"].closed.wait(2), "the stuck host's connection was not closed"
    assert session.limits_hit == [
        {
            "limit": "command_timeout",
            "seconds": 2.0,
            "source": "--timeout",
            "step": "gathering facts",
            "hosts": ["stuck"],
        }
    ]

    # A later phase does not wait again: every host is reported at once.
    started = time.monotonic()
    later = session.run(_echo, step="pinging NPU pairs")
    assert time.monotonic() - started < 0.5
    assert all(o.kind == "timeout" for o in later.values())
    assert (
        later["good1"].error
        == "good1: timed out before pinging NPU pairs: the command's deadline (2s, --timeout) passed"
    )
    session.close()


def test_hosts_still_waiting_for_a_fork_are_reported_too() -> None:
    session, _ = _session(["stuck", "queued"], {"stuck"}, forks=1, seconds=1.0)
    outcomes = session.run(_echo, step="applying changes")
    assert outcomes["stuck"].error.startswith("stuck: timed out in applying changes")
    assert outcomes["queued"].error.startswith("queued: timed out before applying changes")
    assert session.limits_hit[0]["hosts"] == ["stuck", "queued"]
    session.close()


def test_without_a_deadline_nothing_is_cut() -> None:
    session = Session(_hosts("a", "b"), forks=2, transport_factory=lambda h: LocalTransport(h.name))
    outcomes = session.run(lambda t, h: t.run_script("sleep 1; echo late").stdout.strip())
    assert [o.value for o in outcomes.values()] == ["late", "late"]
    assert session.limits_hit == []


def test_a_thread_that_never_wakes_does_not_keep_the_process_alive() -> None:
    """Workers are daemon threads: the process exits once the fan-out has given up on them."""
    code = textwrap.dedent("""
        import threading
        from ascendprep.remote.access import HostAccess
        from ascendprep.run.fanout import Session
        from ascendprep.remote.local import LocalTransport
        from ascendprep.remote.deadline import Deadline

        class Deaf(LocalTransport):
            def run_script(self, script, timeout=None):
                threading.Event().wait()  # nothing ever wakes it, not even close()
            def close(self):
                pass

        session = Session([HostAccess(name="deaf", address="127.0.0.1")], forks=1,
                          transport_factory=lambda h: Deaf(h.name), deadline=Deadline(1))
        print(session.run(lambda t, h: t.run_script("true"), step="x")["deaf"].kind)
    """)
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == "timeout", result.stderr
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "hosts, forks, phases, expected",
    [
        (3, 64, 1, 310 + limits.COMMAND_DEADLINE_SLACK_S),
        (3, 64, 2, 620 + limits.COMMAND_DEADLINE_SLACK_S),
        (130, 64, 1, 3 * 310 + limits.COMMAND_DEADLINE_SLACK_S),
        (16, 4, 2, 2 * 4 * 310 + limits.COMMAND_DEADLINE_SLACK_S),
    ],
)
def test_the_default_deadline_grows_with_the_fleet_and_shrinks_with_forks(hosts, forks, phases, expected) -> None:
    assert default_timeout(hosts, forks, 10, 300, phases) == expected
    deadline = command_deadline(None, hosts, forks, 10, 300, phases)
    assert (deadline.seconds, deadline.source) == (expected, "default")
    assert "set --timeout" in deadline.describe()
    assert command_deadline(42, hosts, forks, 10, 300, phases).seconds == 42


class SlowTransport(LocalTransport):
    """Answers, but only after ``seconds``: past the deadline, while the caller has moved on."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(name)
        self.seconds = seconds
        self.answered = threading.Event()

    def run_script(self, script: str, timeout=None):  # type: ignore[override]
        time.sleep(self.seconds)
        try:
            return super().run_script(script, timeout)
        finally:
            self.answered.set()


def test_an_answer_after_the_deadline_does_not_change_the_outcomes_returned() -> None:
    """The workers fill the outcomes while the main thread sleeps; once the deadline passed, what
    was returned stays as returned, also when a late host answers afterwards."""
    made = {}

    def factory(access: HostAccess) -> Transport:
        made[access.name] = SlowTransport(access.name, 1.5) if access.name == "late" else LocalTransport(access.name)
        return made[access.name]

    session = Session(_hosts("fast", "late"), forks=2, transport_factory=factory, deadline=Deadline(0.7))
    outcomes = session.run(_echo, step="gathering facts")
    returned = dict(outcomes)
    assert outcomes["fast"].value == "ok"
    assert outcomes["late"].kind == "timeout"
    assert made["late"].answered.wait(5)
    time.sleep(0.1)  # the late worker has stored its outcome where it stores them
    assert outcomes == returned
    session.close()
