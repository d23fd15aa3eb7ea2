"""Pytest support for tests that need a running lab: skip-or-fail, and the lab fixtures.

Kept in the tests tree, not the package, because it imports pytest (the wheel does not need
it); what has no pytest in it lives in ``ascendprep.lab.testing``. Import it by name
(``from labsupport import start_test_lab``): tests/conftest.py puts this folder on sys.path.
Fixtures are used from a folder's ``conftest.py``::

    from labsupport import lab, lab_fault  # noqa: F401  (pytest fixtures)

``lab`` brings one 4-node atlas-a2 lab up per test session and takes it down at the end.
Where a lab cannot start (not root, no sshd, ...) the tests are skipped, except under
``CI=true``, where a silent skip would hide that nothing was tested: there they fail, saying
what is missing.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pytest

from ascendprep.lab.lab import Lab
from ascendprep.lab.system import missing_requirements
from ascendprep.lab.testing import start_session_lab


def skip_or_fail(reason: str) -> None:
    """Skip the test, or under ``CI=true`` fail it: CI must not pass without running the lab."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the lab cannot start: {reason} (CI=true: lab tests must run in CI)", pytrace=False)
    pytest.skip(f"the lab cannot start here: {reason}")


def require_lab_host() -> None:
    """Skip (or fail in CI) unless this machine can run a lab."""
    problems = missing_requirements()
    if problems:
        skip_or_fail("; ".join(problems))


def start_test_lab(nodes: int = 4, product: str = "atlas-a2", suffix: str = "", **options: Any) -> Lab:
    """Bring up a lab for tests (skipping or failing as :func:`skip_or_fail` says when it cannot)."""
    require_lab_host()
    return start_session_lab(nodes, product, suffix, **options)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """A 4-node atlas-a2 lab, up once for the whole test session."""
    started = start_test_lab()
    try:
        yield started
    finally:
        started.down()


@pytest.fixture(scope="module", name="lab")
def own_lab() -> Iterator[Lab]:
    """A 3-node lab of a module's own, named ``lab`` where a module imports it
    (``from labsupport import own_lab``): for the plan/apply tests, which change the nodes, so
    it is not the session's shared ``lab``."""
    started = start_test_lab(nodes=3, suffix="apply")
    try:
        yield started
    finally:
        started.down()


@pytest.fixture
def lab_fault(lab: Lab) -> Iterator[Callable[..., dict[str, Any]]]:
    """``lab_fault("node2", "slow", rate="8mbit")``: injected now, healed when the test ends."""
    injected: list[tuple[str, str]] = []

    def inject(node: str, kind: str, **options: Any) -> dict[str, Any]:
        record = lab.fault(node, kind, **options)
        injected.append((node, kind))
        return record

    yield inject
    for node, kind in reversed(injected):
        lab.heal(node, kind)


def verify_json(lab: Lab, workdir: Any, *options: str) -> tuple[int, dict[str, Any]]:
    """``verify LAB-INVENTORY --format json OPTIONS`` in-process, run from ``workdir``: exit code, report.

    From ``workdir`` because verify writes its evidence bundle under the current directory.
    """
    import json

    from click.testing import CliRunner

    from ascendprep.commands.verify import verify_command

    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        outcome = CliRunner().invoke(verify_command, [str(lab.inventory_path), "--format", "json", *options])
    finally:
        os.chdir(cwd)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    return outcome.exit_code, json.loads(outcome.stdout)
