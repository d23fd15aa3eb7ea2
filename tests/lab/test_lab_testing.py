"""The lab fixtures' promise: skip where a lab cannot run, but never silently in CI."""

from __future__ import annotations

import pytest

from ascendprep.lab import testing


def test_unready_machine_skips_locally_but_fails_in_ci(monkeypatch):
    monkeypatch.setattr(testing, "missing_requirements", lambda: ["root: lab up creates namespaces"])
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="root: lab up creates namespaces"):
        testing.start_test_lab()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        testing.start_test_lab()


def test_session_lab_names_carry_the_pid_so_abandoned_ones_are_found():
    match = testing.SESSION_LAB_RE.match(testing.session_lab_name("crash"))
    assert match is not None
    assert match.group(1).isdigit()
