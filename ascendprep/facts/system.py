"""Host identity: hostname, CPU architecture, /etc/os-release, sha256sum lines, and the variables env.sh exports."""

from __future__ import annotations

import re
import shlex
import sys
from typing import Dict, List, Optional

from ascendprep.base.limits import ENV_SH_MAX_VARIABLES
from ascendprep.facts.text import UnexpectedOutput, first_line

_OS_RELEASE_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")
_EXPORT_RE = re.compile(r"^export ([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_SHA256_RE = re.compile(r"^([0-9a-f]{64})\s")


def parse_word(stdout: str, what: str) -> str:
    """A one-word answer (``uname -n``, ``uname -m``)."""
    words = stdout.split()
    if len(words) != 1:
        raise UnexpectedOutput(f"expected one word for {what}, got {first_line(stdout)!r}")
    return words[0]


def parse_os_release(text: str) -> Dict[str, str]:
    """os-release(5): ``KEY=value`` with shell-style quoting; bad lines are skipped, as the spec says."""
    values: Dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not _OS_RELEASE_KEY.match(key):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        values[sys.intern(key)] = sys.intern(" ".join(words))
    return values


def parse_sha256sum(stdout: str) -> str:
    """``<64 hex>  <path>`` → the digest."""
    match = _SHA256_RE.match(stdout)
    if not match:
        raise UnexpectedOutput(f"not sha256sum output: {first_line(stdout)!r}")
    return match.group(1)


def parse_env_sh(text: str) -> Dict[str, str]:
    """The variables an ``env.sh`` exports: each ``export NAME=VALUE`` line (ascendprep writes one
    per variable, the value shlex-quoted) → ``{NAME: VALUE}`` as sh reads the value; the same name
    twice keeps the last, as sh does. Other lines (the CANN lookup, comments) are skipped. A value
    whose quoting sh would not read as one word is kept as written (it is shown, never run).
    More than :data:`~ascendprep.base.limits.ENV_SH_MAX_VARIABLES` exports is not a file ascendprep
    wrote: refused."""
    values: Dict[str, str] = {}
    for line in text.splitlines():
        match = _EXPORT_RE.match(line)
        if match is None:
            continue
        name, written = match.groups()
        try:
            words: Optional[List[str]] = shlex.split(written)
        except ValueError:
            words = None
        values.pop(name, None)  # a later export of the name is the one sh keeps
        values[name] = ("" if not words else words[0]) if words is not None and len(words) <= 1 else written
        if len(values) > ENV_SH_MAX_VARIABLES:
            raise UnexpectedOutput(f"more than {ENV_SH_MAX_VARIABLES} exported variables")
    return values
