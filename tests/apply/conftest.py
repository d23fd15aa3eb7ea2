"""A lab of its own for the plan/apply tests (they change it, so it is not shared)."""

from __future__ import annotations

from typing import Iterator

import pytest

from ascendprep.lab.lab import Lab
from labsupport import start_test_lab


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    started = start_test_lab(nodes=3, suffix="apply")
    try:
        yield started
    finally:
        started.down()

