"""The lab fixtures' promise: skip where a lab cannot run, but never silently in CI."""

from __future__ import annotations

import labsupport
import pytest

from ascendprep.lab import testing


def test_unready_machine_skips_locally_but_fails_in_ci(monkeypatch):
    monkeypatch.setattr(labsupport, "missing_requirements", lambda: ["root: lab up creates namespaces"])
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="root: lab up creates namespaces"):
        labsupport.start_test_lab()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        labsupport.start_test_lab()


def test_session_lab_names_carry_the_pid_so_abandoned_ones_are_found():
    match = testing.SESSION_LAB_RE.match(testing.session_lab_name("crash"))
    assert match is not None
    assert match.group(1).isdigit()


def test_the_shipped_lab_helpers_do_not_need_pytest():
    """ascendprep.lab.testing is in the wheel, pytest is not a dependency: it must not import it."""
    import subprocess
    import sys

    code = "import sys; sys.modules['pytest'] = None; import ascendprep.lab.testing"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
