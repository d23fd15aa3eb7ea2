"""Parsing and ordering of Huawei's own version spellings: CANN, NPU driver / Ascend HDK, firmware.

None of these is PEP 440. The rules come from docs/compat-notes.md §2; where the
notes leave a choice open the choice is written down here.

Shape: ``MAJOR.MINOR.POINT[.SUFFIX...]`` split on ``.`` and ``-``, matched case-insensitively.

* POINT is ``RCn`` (a release candidate of the MAJOR.MINOR line), a number (``8.0.0``, ``23.0.7``,
  ``7.1.0.11.220``), ``Tn`` (an internal test build, ``7.0.T10``), or ``X`` (a wildcard used in the
  data: ``8.5.X`` = any 8.5 release).
* SUFFIX is a stage (``alphaN``, ``betaN`` / ``beta.N`` / ``-beta.N``, ``rcN`` after a numeric
  point, driver build ``bNNN``) or hotfix numbers (``6.3.RC3.1``, ``25.0.rc1.1``,
  ``7.1.0.11.220``).

Order within one MAJOR.MINOR line::

    Tn  <  RC1.alpha.. < RC1 < RC1.1 (hotfix)  <  RC2 ...  <  Z.alpha < Z-beta.N < Z.rcN < Z < Z.h  <  X

* ``X.Y.RCn.alphaN`` sorts just below ``X.Y.RCn`` (the dated 8.2.RC1 alphas came out before it).
* Test builds ``X.Y.Tn`` are pre-releases whose place in the cycle is not recoverable from the
  public spelling (8.0.T63 carries the inner version of 8.0.0, 7.0.T10 an early 7.0 one); they
  sort below every RC and final release of their line, so a test build never satisfies a
  "at least X.Y.RCn" requirement.
* CANN's community edition suffix ``.beta1`` on the old scheme (before 8.5) names the same release
  as the commercial spelling, so ``8.0.RC2.beta1 == 8.0.RC2``. From 8.5.0 on, ``-beta.N`` (also
  spelled ``.beta.N``/``.betaN``) is a pre-release and sorts below the final release. Driver
  ``betaN`` is always a pre-release.
* Driver ``.bNNN`` build tags are placed between beta and the plain release (inferred: a build
  number of a not-yet-final package).
* ``X`` sorts after every concrete version of its line, so a wildcard is the top of its range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

PHASE_TEST = 0
PHASE_RC = 1
PHASE_FINAL = 2
PHASE_WILDCARD = 3

STAGE_ALPHA = 0
STAGE_BETA = 1
STAGE_BUILD = 2
STAGE_RC = 3
STAGE_RELEASE = 4

_SPLIT = re.compile(r"[.\-]")
_STAGE_TOKEN = re.compile(r"^(alpha|beta|rc|b)([0-9]*)$")
_STAGE_RANK = {"alpha": STAGE_ALPHA, "beta": STAGE_BETA, "b": STAGE_BUILD, "rc": STAGE_RC}

# CANN moved to semantic-style versions (X.Y.Z, X.Y.Z-beta.N) at 8.5.0; before that a `.betaN`
# suffix marked the community edition of a commercial release, not a pre-release.
_CANN_NEW_SCHEME_FROM = (8, 5)


@dataclass(frozen=True)
class AscendParts:
    """One parsed Ascend version. ``key`` orders it; ``release_key`` is the key without hotfix."""

    line: Tuple[int, int]
    phase: int
    point: int
    stage: int
    stage_n: int
    hotfix: Tuple[int, ...]

    @property
    def key(self) -> tuple:
        return (self.line, self.phase, self.point, self.stage, self.stage_n, self.hotfix)

    @property
    def release_key(self) -> tuple:
        return (self.line, self.phase, self.point, self.stage, self.stage_n, ())

    @property
    def is_prerelease(self) -> bool:
        return self.phase == PHASE_TEST or self.stage != STAGE_RELEASE

    @property
    def is_wildcard(self) -> bool:
        return self.phase == PHASE_WILDCARD


def _int(token: str) -> Optional[int]:
    return int(token) if token.isdigit() else None


def parse_ascend(text: str, *, community_beta_is_release: bool) -> Optional[AscendParts]:
    """Parse a CANN / driver / firmware spelling; None when it is not one.

    ``community_beta_is_release``: True for CANN, where ``.betaN`` before 8.5 is the community
    edition of the same release.
    """
    tokens = [token for token in _SPLIT.split(text.strip().lower())]
    if len(tokens) < 3 or any(token == "" for token in tokens):
        return None
    major, minor = _int(tokens[0]), _int(tokens[1])
    if major is None or minor is None:
        return None
    line = (major, minor)

    point_token = tokens[2]
    if point_token == "x":
        if len(tokens) != 3:
            return None
        return AscendParts(line, PHASE_WILDCARD, 0, STAGE_RELEASE, 0, ())
    if point_token.isdigit():
        phase, point = PHASE_FINAL, int(point_token)
    elif re.fullmatch(r"rc[0-9]+", point_token):
        phase, point = PHASE_RC, int(point_token[2:])
    elif re.fullmatch(r"t[0-9]+", point_token):
        phase, point = PHASE_TEST, int(point_token[1:])
    else:
        return None

    suffix = _parse_suffix(tokens[3:])
    if suffix is None:
        return None
    stage, stage_n, hotfix = suffix
    if phase == PHASE_TEST and (stage != STAGE_RELEASE or hotfix):
        return None
    if stage == STAGE_RC and phase != PHASE_FINAL:
        return None  # "8.0.RC1.rc2" is not a spelling anyone uses
    if stage == STAGE_BETA and community_beta_is_release and line < _CANN_NEW_SCHEME_FROM:
        stage, stage_n = STAGE_RELEASE, 0
    return AscendParts(line, phase, point, stage, stage_n, hotfix)


def _parse_suffix(tokens: List[str]) -> Optional[Tuple[int, int, Tuple[int, ...]]]:
    """Suffix after the point: hotfix numbers, or one stage with an optional number."""
    if not tokens:
        return STAGE_RELEASE, 0, ()
    if all(token.isdigit() for token in tokens):
        return STAGE_RELEASE, 0, tuple(int(token) for token in tokens)
    stage_match = _STAGE_TOKEN.match(tokens[0])
    if stage_match is None:
        return None
    name, glued = stage_match.groups()
    rest = tokens[1:]
    if name == "b" and not glued:
        return None  # a bare "b" is not a build tag
    if glued:
        number = int(glued)
    elif len(rest) == 1 and rest[0].isdigit():
        number, rest = int(rest[0]), []  # "-beta.1", "9.1.0.beta.1"
    else:
        number = 0  # "1.0.27.alpha"
    if rest:
        return None
    return _STAGE_RANK[name], number, ()
