"""A finding: one thing a rule or a check has to say, with where, how bad, and how to fix it.

Shared by the planner (rule violations), plan (compatibility), and verify (checks), so that every
output format (table, JSON, JUnit) renders them the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Iterable, Optional


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """``id`` is stable (``ipplan.duplicate``); ``node``/``npu`` say where; ``fix`` is one line."""

    id: str
    severity: Severity
    message: str
    fix: str = ""
    node: Optional[str] = None
    npu: Optional[int] = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        return cls(**{**data, "severity": Severity(data["severity"])})


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
