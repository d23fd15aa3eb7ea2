"""Shared by every test folder: puts this folder on sys.path, so that the pytest helpers kept
out of the wheel (``labsupport``) import by name from any test file or conftest."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = str(Path(__file__).resolve().parent)
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
