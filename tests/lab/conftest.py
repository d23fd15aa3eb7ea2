"""Lab fixtures for tests/lab (the logic lives in ascendprep.lab.testing, reusable elsewhere)."""

from ascendprep.lab.testing import lab, lab_fault

__all__ = ["lab", "lab_fault"]  # pytest fixtures, used by name
