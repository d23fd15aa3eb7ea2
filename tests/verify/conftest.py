"""A lab of verify's own: plan + apply change every node, so it must not be the lab other suites use.

The fixture logic is tests/labsupport.py's (skip where a lab cannot start, fail under CI=true);
only the lab's name differs (``pytest-<pid>-verify``), so it can be up next to tests/lab's ``lab``
fixture in the same session.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from ascendprep.lab.lab import Lab
from labsupport import start_test_lab


@pytest.fixture(scope="session")
def verify_lab() -> Iterator[Lab]:
    """A 3-node atlas-a2 lab with 4 NPUs per node, up once per session.

    Three nodes are the fewest that still give a ring, a master pair and an odd one out for
    version skew; four NPUs keep the simulated tool calls (the lab's cost on 2 cores) down.
    """
    lab = start_test_lab(nodes=3, product="atlas-a2", suffix="verify", npus=4)
    try:
        yield lab
    finally:
        lab.down()
