"""One ``Version`` type for every component of the Ascend PyTorch stack.

``parse_version(kind, text)`` turns a spelling into a hashable, totally ordered ``Version``.
Two schemes sit behind it:

* Huawei's own (``ascend_scheme``) for ``cann``, ``driver`` (alias ``hdk``) and ``firmware``;
* PEP 440 (``pep440``) for ``torch``, ``torch_npu``, ``torchvision`` and ``python``.

Versions of different kinds do not compare (a CANN 8.0.0 is not "less than" a driver 24.1.0);
doing so raises ``TypeError`` like comparing a str with an int.

Equality follows the order key, not the spelling: ``8.0.RC2.beta1 == 8.0.RC2`` (community and
commercial edition of one CANN release), ``24.1.RC2 == 24.1.rc2``, ``2.1.0+cpu == 2.1.0`` (public
part only; ``.local`` keeps ``cpu``), ``3.10 == 3.10.0``. The original spelling stays in ``.text``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

from ascendprep.compat.ascend_scheme import PHASE_FINAL, AscendParts, parse_ascend
from ascendprep.compat.pep440 import Pep440Parts, parse_pep440

ASCEND_KINDS = ("cann", "driver", "firmware")
PEP440_KINDS = ("torch", "torch_npu", "torchvision", "python")
_ALIASES = {"hdk": "driver"}
KINDS = ASCEND_KINDS + PEP440_KINDS

_MAX_LEN = 128

_EXAMPLES = {
    "cann": "8.0.RC1, 8.0.RC2.alpha003, 8.0.0, 8.5.0-beta.1, 7.0.T10, 8.5.X",
    "driver": "24.1.rc2, 24.1.rc2.1, 23.0.7, 25.0.RC1.1, 25.5.X",
    "firmware": "7.1.0.11.220, 6.0.rc1.2",
    "torch": "2.1.0, 2.1.0+cpu, 2.14.0.dev20260719+cpu",
    "torch_npu": "2.1.0.post6, 2.11.0rc1, 1.8.1-rc1",
    "torchvision": "0.16.0, 0.17",
    "python": "3.10, 3.10.12",
}


class VersionError(ValueError):
    """A version string that is not a spelling of the named kind, or an unknown kind."""

    def __init__(self, kind: str, text: object, reason: str) -> None:
        self.kind = kind
        self.text = text
        super().__init__(f"{kind} version {text!r}: {reason}")


@dataclass(frozen=True, eq=False)
class Version:
    """A parsed version of one stack component. Build with ``parse_version``."""

    kind: str
    text: str
    key: tuple = field(repr=False)
    release_key: tuple = field(repr=False)
    line: Tuple[int, int] = field(repr=False)
    release: Tuple[int, ...] = field(repr=False)
    is_prerelease: bool = field(repr=False)
    is_wildcard: bool = field(repr=False)
    local: Optional[str] = field(repr=False)
    public: str = field(repr=False)

    # -- ordering -------------------------------------------------------------------------------
    def _key_of(self, other: object) -> Optional[tuple]:
        """``other``'s key, None when it is not a Version; TypeError across kinds."""
        if not isinstance(other, Version):
            return None
        if other.kind != self.kind:
            raise TypeError(f"cannot compare a {self.kind} version with a {other.kind} version")
        return other.key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.kind == other.kind and self.key == other.key

    def __hash__(self) -> int:
        return hash((self.kind, self.key))

    def __lt__(self, other: object) -> bool:
        key = self._key_of(other)
        return NotImplemented if key is None else self.key < key

    def __le__(self, other: object) -> bool:
        key = self._key_of(other)
        return NotImplemented if key is None else self.key <= key

    def __gt__(self, other: object) -> bool:
        key = self._key_of(other)
        return NotImplemented if key is None else self.key > key

    def __ge__(self, other: object) -> bool:
        key = self._key_of(other)
        return NotImplemented if key is None else self.key >= key

    def __str__(self) -> str:
        return self.text

    # -- matching -------------------------------------------------------------------------------
    def covers(self, other: "Version") -> bool:
        """True when ``other`` is this release, a hotfix of it, or inside this wildcard.

        ``8.5.X`` covers every 8.5 release (8.5.0, 8.5.2, hotfixes) but not the pre-releases
        ``8.5.0.alpha001`` / ``8.5.0-beta.1``: the tables that use X list releases.
        ``25.0.RC1`` covers ``25.0.rc1.1`` (a hotfix ships with the compatibility of the release
        it fixes); ``8.0.RC2`` does not cover the pre-release ``8.0.RC2.alpha003``.
        """
        if other.kind != self.kind:
            return False
        if self.is_wildcard:
            return other.line == self.line and not other.is_prerelease and not other.is_wildcard
        if self.key == other.key:
            return True
        return self.kind in ASCEND_KINDS and self.key == self.release_key == other.release_key

    @property
    def minor(self) -> str:
        """``"3.10"`` for Python 3.10.12, ``"2.1"`` for torch 2.1.0+cpu: the MAJOR.MINOR line."""
        return f"{self.line[0]}.{self.line[1]}"


def parse_version(kind: str, text: object) -> Version:
    """Parse ``text`` as a version of ``kind`` (cann, driver/hdk, firmware, torch, torch_npu,
    torchvision, python). Raises ``VersionError`` naming the kind, the text and what was expected.
    """
    kind = _ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise VersionError(kind, text, f"unknown version kind; expected one of {', '.join(KINDS)}")
    if not isinstance(text, str):
        raise VersionError(kind, text, f"expected a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise VersionError(kind, text, "empty version")
    if len(stripped) > _MAX_LEN:
        raise VersionError(kind, text[:40] + "...", f"longer than {_MAX_LEN} characters")
    if kind in ASCEND_KINDS:
        parts = parse_ascend(stripped, community_beta_is_release=kind == "cann")
        if parts is None:
            raise VersionError(kind, text, f"not a recognised spelling (e.g. {_EXAMPLES[kind]})")
        return _from_ascend(kind, stripped, parts)
    pep = parse_pep440(stripped)
    if pep is None:
        raise VersionError(kind, text, f"not a recognised spelling (e.g. {_EXAMPLES[kind]})")
    if kind == "python" and len(pep.release) < 2:
        raise VersionError(kind, text, "a Python version needs at least MAJOR.MINOR (e.g. 3.10)")
    return _from_pep440(kind, stripped, pep)


def _from_ascend(kind: str, text: str, parts: AscendParts) -> Version:
    return Version(
        kind=kind,
        text=text,
        key=parts.key,
        release_key=parts.release_key,
        line=parts.line,
        release=parts.line + ((parts.point,) if parts.phase == PHASE_FINAL else ()),
        is_prerelease=parts.is_prerelease,
        is_wildcard=parts.is_wildcard,
        local=None,
        public=text,
    )


def _from_pep440(kind: str, text: str, parts: Pep440Parts) -> Version:
    release = parts.release + (0,) * (2 - len(parts.release))
    return Version(
        kind=kind,
        text=text,
        key=parts.key,
        release_key=parts.key,
        line=(release[0], release[1]),
        release=parts.release,
        is_prerelease=parts.is_prerelease,
        is_wildcard=False,
        local=parts.local,
        public=parts.public,
    )


def base_release(version: Version) -> str:
    """``X.Y.Z`` of a PEP 440 version without pre/post/dev/local: ``2.1.0.post8`` -> ``2.1.0``.

    torch_npu's setup derives its exact torch pin this way (docs/compat-notes.md §1).
    """
    if version.kind not in PEP440_KINDS:
        raise ValueError(f"base_release needs a PEP 440 kind, got {version.kind}")
    return ".".join(str(part) for part in version.release)
