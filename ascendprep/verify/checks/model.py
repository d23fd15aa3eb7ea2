"""What a check is and what it says: small named, declarative checks in the goss/testinfra manner.

A :class:`Check` has a stable id (``network.link``), the groups it belongs to (``--only network``),
a scope (once per node, once per NPU of a node, or once for the cluster), a severity, the probes
whose failure means it *could not* check, and the checks it needs to have passed first.

A check function returns :class:`Verdict`\\ s; the runner turns each into a :class:`CheckResult`
(passed, failed or skipped), which carries the evidence it saw either way. A failed result becomes
a :class:`~ascendprep.base.findings.Finding` for the tables, JSON and JUnit. A check never passes when it
could not look: "could not check: …" is a failure at the check's own severity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, Optional, Tuple

from ascendprep.base.findings import Finding, Severity

#: Scopes: ``node`` runs once per node, ``npu`` once per NPU of a node, ``cluster`` once overall.
SCOPES = ("node", "npu", "cluster")

COULD_NOT_CHECK = "could not check: "


class Status(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    #: Not applicable (nothing planned to compare with, unsupported on the product) or not run
    #: because a check it needs failed; the reason is always given.
    SKIPPED = "skipped"


class _NoEvidence(dict):
    """The evidence of a verdict that shows none: one shared, empty map that refuses changes.
    ~60 results per host had an empty dict each (4,096 hosts: ~16 MB of empty dicts); a check
    that adds evidence later must give its verdict a dict of its own."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the shared empty evidence cannot change: give the verdict its own evidence dict")

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]


#: Evidence of a verdict made without any (passed/failed/could_not_check/skipped with none given).
NO_EVIDENCE: Dict[str, Any] = _NoEvidence()


@dataclass(slots=True)  # slots: ~170 verdicts per host
class Verdict:
    """What a check function says about one thing it looked at.

    ``node``/``npu`` default to where the check ran; cluster checks set them when one node or
    NPU is to blame. ``subject`` names the item within a check (a sysctl key, a file, a ping pair).

    Not frozen: a verdict only carries a check's answer to the runner, which turns it into a
    :class:`CheckResult` at once; a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``, which costs more, ~170 times per host.
    """

    status: Status
    message: str
    evidence: Dict[str, Any] = field(default_factory=dict)
    severity: Optional[Severity] = None
    fix: Optional[str] = None
    subject: Optional[str] = None
    node: Optional[str] = None
    npu: Optional[int] = None


# The verdict helpers name where (node, npu) explicitly and build the Verdict positionally: ~170
# verdicts per host, and keyword arguments through ``**where`` cost more.


def passed(
    message: str,
    evidence: Optional[Dict[str, Any]] = None,
    subject: Optional[str] = None,
    node: Optional[str] = None,
    npu: Optional[int] = None,
) -> Verdict:
    return Verdict(_PASSED, message, evidence or NO_EVIDENCE, None, None, subject, node, npu)


def failed(
    message: str,
    evidence: Optional[Dict[str, Any]] = None,
    fix: Optional[str] = None,
    severity: Optional[Severity] = None,
    subject: Optional[str] = None,
    node: Optional[str] = None,
    npu: Optional[int] = None,
) -> Verdict:
    return Verdict(_FAILED, message, evidence or NO_EVIDENCE, severity, fix, subject, node, npu)


def could_not_check(
    reason: str,
    evidence: Optional[Dict[str, Any]] = None,
    subject: Optional[str] = None,
    fix: Optional[str] = None,
    node: Optional[str] = None,
    npu: Optional[int] = None,
) -> Verdict:
    """A failure: the check needed a value that a probe could not read."""
    return Verdict(_FAILED, COULD_NOT_CHECK + reason, evidence or NO_EVIDENCE, None, fix, subject, node, npu)


def skipped(
    reason: str,
    evidence: Optional[Dict[str, Any]] = None,
    subject: Optional[str] = None,
    node: Optional[str] = None,
    npu: Optional[int] = None,
) -> Verdict:
    return Verdict(_SKIPPED, reason, evidence or NO_EVIDENCE, None, None, subject, node, npu)


_PASSED, _FAILED, _SKIPPED = Status.PASSED, Status.FAILED, Status.SKIPPED


@dataclass(frozen=True)
class Check:
    """One named check. ``run`` takes a NodeContext (+ NPU) or a ClusterContext, by ``scope``."""

    id: str
    groups: Tuple[str, ...]
    scope: str
    severity: Severity
    title: str
    fix: str
    run: Callable[..., Any] = field(repr=False, compare=False)
    #: Probe names (``hccn.link``, ``python``, ...) whose ProbeError means "could not check".
    probes: Tuple[str, ...] = ()
    #: Node checks that must pass first; when one failed this check is skipped, naming it.
    requires: Tuple[str, ...] = ()
    #: ``applies(desired)`` → None, or why the check does not apply to this inventory at all
    #: (then it is reported skipped once, instead of once per node or NPU).
    applies: Optional[Callable[[Any], Optional[str]]] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"{self.id}: scope must be one of {SCOPES}, not {self.scope!r}")
        if not self.groups or not self.id.startswith(self.groups[0] + "."):
            raise ValueError(f"{self.id}: the id must start with its first group")


_STATUS_TEXT = {status: status.value for status in Status}
_SEVERITY_TEXT = {severity: severity.value for severity in Severity}


@dataclass(slots=True)  # slots: ~170 per host are held to the end of a 4,096-host verify
class CheckResult:
    """One check's verdict on one thing, with where, how bad, what it saw, and the fix.

    Not frozen, like :class:`Verdict`: the runner makes each result once and nothing changes it
    after; a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
    (~170 results per host), and a NamedTuple, as fast, takes 16 bytes more per result (a tuple
    subclass allocates a spare item).
    """

    check: str
    status: Status
    severity: Severity
    message: str
    node: Optional[str] = None
    npu: Optional[int] = None
    subject: Optional[str] = None
    fix: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status is Status.FAILED

    @property
    def label(self) -> str:
        """``network.link[npu 3]``, ``files.managed[/etc/ascendprep/env.sh]``: a test case name."""
        parts = []
        if self.npu is not None:
            parts.append(f"npu {self.npu}")
        if self.subject:
            parts.append(self.subject)
        return f"{self.check}[{', '.join(parts)}]" if parts else self.check

    def finding(self) -> Optional[Finding]:
        """The Finding of a failed result (None when it passed or was skipped)."""
        if not self.failed:
            return None
        return Finding(self.check, self.severity, self.message, self.fix, self.node, self.npu, dict(self.evidence))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "check": self.check,
            "status": _STATUS_TEXT[self.status],  # not .value: an enum property, slow ~160 times per host
            "severity": _SEVERITY_TEXT[self.severity],
            "message": self.message,
            "node": self.node,
            "npu": self.npu,
            "subject": self.subject,
            "fix": self.fix,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "CheckResult":
        return cls(
            check=data["check"],
            status=Status(data["status"]),
            severity=Severity(data["severity"]),
            message=data["message"],
            node=data.get("node"),
            npu=data.get("npu"),
            subject=data.get("subject"),
            fix=data.get("fix", ""),
            evidence=dict(data.get("evidence") or {}),
        )
