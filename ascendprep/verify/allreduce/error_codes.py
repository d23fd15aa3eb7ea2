"""HCCL's error codes and messages in a rank's log → the cause, the fix, and the verify check that
would have caught it before the run.

The entries are those of the one knowledge base (:mod:`ascendprep.verify.knowledge`,
``data/diagnose/knowledge.yaml``, also read by ``ascendprep diagnose``) that name a fault a
launch of the smoke test can meet (``smoke_key``: EJ0001, EI0006, ...): each with what it means,
what to do, and the check ids (:mod:`ascendprep.verify.checks.registry`) that look for the cause.
:func:`named_causes` finds them in a log, in the order they first appear; :func:`with_named_cause`
adds the first to a node's problem. Pure: no I/O, nothing imported from the launcher.

Codes appear as ``EJ0001: [PID: ...] ...`` or ``Communication_Error_Bind_IP_Port(EI0019): ...``
(newer CANN); both spellings match.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional, Protocol, Tuple, TypeVar

from ascendprep.verify.knowledge import Entry, knowledge, matches_in


@dataclass(frozen=True)
class KnownError:
    """One fault HCCL (or gloo) prints, as the smoke test's verdict names it, and what to do about it."""

    key: str
    entry: Entry
    cause: str
    fix: str
    checks: Tuple[str, ...]
    source: str


def _known(entry: Entry) -> KnownError:
    return KnownError(entry.smoke_key or entry.key, entry, entry.cause, entry.fix, entry.checks, entry.source)


KNOWN_ERRORS: Tuple[KnownError, ...] = tuple(_known(entry) for entry in knowledge().entries if entry.smoke_key)
_BY_ENTRY = {known.entry.key: known for known in KNOWN_ERRORS}


def named_causes(text: str) -> List[KnownError]:
    """The known errors in ``text``, in the order they first appear (each once)."""
    smoke = [known.entry for known in KNOWN_ERRORS]
    base = knowledge()
    found = matches_in(text or "", type(base)(base.layers, tuple(smoke)))
    return [_BY_ENTRY[entry.key] for _offset, entry in found]


def cause_sentence(known: KnownError) -> str:
    """``EJ0001: <cause> (verify would have caught it: npu.busy)``."""
    return f"{known.key}: {known.cause} (ascendprep verify checks this before a run: {', '.join(known.checks)})"


class _Explained(Protocol):
    """A problem that says what went wrong and what to do (frozen dataclasses such as NodeProblem)."""

    @property
    def message(self) -> str: ...

    @property
    def fix(self) -> str: ...


P = TypeVar("P", bound=_Explained)


def with_named_cause(problem: Optional[P], text: str) -> Optional[P]:
    """``problem`` (anything with ``message`` and ``fix``) with the first known error in
    ``text`` named in its message and its fix replaced by that error's; unchanged when none."""
    causes = named_causes(text)
    if problem is None or not causes:
        return problem
    first = causes[0]
    return replace(problem, message=f"{problem.message} -- {cause_sentence(first)}", fix=first.fix)  # type: ignore[type-var]  # dataclasses.replace of a protocol-bound TypeVar
