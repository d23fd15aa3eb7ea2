"""Lab fixtures for tests/lab (the logic lives in tests/labsupport.py, reusable elsewhere)."""

from labsupport import lab, lab_fault

__all__ = ["lab", "lab_fault"]  # pytest fixtures, used by name
