"""Shared by every test folder: puts this folder on sys.path, so that the pytest helpers kept
out of the wheel (``labsupport``) import by name from any test file or conftest; gives the
``verify_cluster`` fixture and the ``desired`` state of that cluster; gives the test sshd
(``sshd``, ``known_hosts``: tests/sshd_server.py) to the transport and fan-out tests; and
refuses the golden-update switch under ``CI=true``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = str(Path(__file__).resolve().parent)
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

from sshd_server import known_hosts, sshd  # noqa: E402, F401  (pytest fixtures)

#: Rewrites the expected files under tests/fixtures/golden/ instead of comparing with them.
UPDATE_GOLDEN = "ASCENDPREP_UPDATE_GOLDEN"


def pytest_configure(config: pytest.Config) -> None:
    """CI compares with the expected files and never rewrites them: a run that rewrote its own
    expectations would pass whatever the code now writes."""
    if os.environ.get("CI", "").lower() == "true" and os.environ.get(UPDATE_GOLDEN, "") not in ("", "0"):
        raise pytest.UsageError(
            f"{UPDATE_GOLDEN} is set under CI=true: CI must never rewrite its own golden files."
            f" Unset {UPDATE_GOLDEN} in CI; regenerate the files on a workstation and commit them."
        )


@pytest.fixture(scope="session")
def verify_cluster():
    """The healthy 4-node atlas-a2 cluster every check passes on (tests/verify_cluster_facts.py):
    ``.desired``, ``.healthy(node)`` facts, and ``.judge(facts, lost, selection)``, every check's
    results with some nodes' facts replaced (None: unreachable)."""
    from verify_cluster_facts import VerifyCluster

    return VerifyCluster()


@pytest.fixture(scope="session")
def desired(verify_cluster):
    """The desired state of verify_cluster_facts.INVENTORY (4 atlas-a2 nodes of 8 NPUs)."""
    return verify_cluster.desired
