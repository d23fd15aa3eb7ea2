"""The check tests' shared set-up: ``desired`` is the healthy cluster's desired state, from the
``verify_cluster`` fixture (tests/conftest.py); a test judges facts with ``judge`` or
``verify_cluster.judge`` (tests/checks/verify_cluster_facts.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def desired(verify_cluster):
    """The desired state of verify_cluster_facts.INVENTORY (4 atlas-a2 nodes of 8 NPUs)."""
    return verify_cluster.desired
