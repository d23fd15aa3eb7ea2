"""The end-to-end tests: each needs the lab (root, network namespaces, sshd), so every test
collected here carries the ``lab`` marker (``-m "not lab"`` leaves the folder out).

Fixtures (their logic in tests/labsupport.py, tests/allreduce_cluster.py): ``lab``, one 4-node
lab for the session, and ``lab_fault``; ``verify_lab``, a lab of verify's own (plan + apply
change every node, so it must not be the shared one); ``cluster``, a planned and applied 4-node
lab per module for the all-reduce launcher. The plan/apply modules take a ``lab`` of their own
(``from labsupport import own_lab``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from allreduce_cluster import cluster
from labsupport import lab, lab_fault, start_test_lab

from ascendprep.lab.lab import Lab

__all__ = ["cluster", "lab", "lab_fault", "verify_lab"]  # pytest fixtures, used by name

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test in this folder needs the lab: mark it so, whatever its module says."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="session")
def verify_lab() -> Iterator[Lab]:
    """A 3-node atlas-a2 lab with 4 NPUs per node, up once per session, named
    ``pytest-<pid>-verify`` so it can be up next to the shared ``lab``.

    Three nodes are the fewest that still give a ring, a master pair and an odd one out for
    version skew; four NPUs keep the simulated tool calls (the lab's cost on 2 cores) down.
    """
    started = start_test_lab(nodes=3, product="atlas-a2", suffix="verify", npus=4)
    try:
        yield started
    finally:
        started.down()
