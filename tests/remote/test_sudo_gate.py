"""SudoGate: the password is checked on one host, once, before any other host gets it."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

from ascendprep.remote.errors import SudoError, UnreachableError
from ascendprep.remote.sudo import SudoGate, SudoPassword


def test_a_rejected_password_is_sent_to_no_other_host() -> None:
    gate = SudoGate(SudoPassword("typo"))
    checks: List[str] = []

    def check_on(host: str):  # type: ignore[no-untyped-def]
        def check() -> bool:
            checks.append(host)
            time.sleep(0.2)  # the other hosts arrive meanwhile and must wait, not check
            return False

        return check

    errors = {}

    def admit(host: str) -> None:
        try:
            gate.admit(host, check_on(host))
        except SudoError as exc:
            errors[host] = str(exc)

    threads = [threading.Thread(target=admit, args=(f"node{i}",)) for i in range(1, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(checks) == 1
    first = checks[0]
    assert errors[first].startswith(f"sudo on {first} rejected the sudo password")
    for host, message in errors.items():
        if host != first:
            assert message.startswith(f"sudo password not tried on {host}: it was rejected on {first}")
    with pytest.raises(SudoError, match=f"sudo on {first} rejected"):
        gate.admit(first, lambda: pytest.fail("checked twice"))


def test_an_accepted_password_is_checked_once() -> None:
    gate = SudoGate(SudoPassword("right"))
    calls = []
    gate.admit("node1", lambda: calls.append(1) or True)
    gate.admit("node2", lambda: calls.append(2) or True)
    assert calls == [1]
    assert "right" not in repr(gate)


def test_a_check_that_could_not_decide_leaves_it_to_the_next_host() -> None:
    gate = SudoGate(SudoPassword("pw"))

    def unreachable() -> bool:
        raise UnreachableError("node1", "node1: no route")

    with pytest.raises(UnreachableError):
        gate.admit("node1", unreachable)
    gate.admit("node2", lambda: True)
    gate.admit("node1", lambda: pytest.fail("already accepted"))
