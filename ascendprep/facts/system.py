"""Host identity: hostname, CPU architecture, /etc/os-release, and sha256sum lines."""

from __future__ import annotations

import re
import shlex
from typing import Dict

from ascendprep.facts.text import UnexpectedOutput, first_line

_OS_RELEASE_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SHA256_RE = re.compile(r"^([0-9a-f]{64})\s")
#: An os-release value that shlex would read as one word without changing it: ``"in double
#: quotes"`` (no quote or backslash inside), ``'in single quotes'``, or a bare word without
#: quotes, backslashes or spaces. Others are read by shlex (os-release(5) allows shell quoting).
_SIMPLE_VALUE = re.compile(r'"([^"\\]*)"|\'([^\']*)\'|[^\s"\'\\]+')


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
        simple = _SIMPLE_VALUE.fullmatch(value)
        if simple is not None:  # one word, plain or in quotes without escapes: what shlex would give
            word = simple.group(1) if simple.group(1) is not None else simple.group(2) if simple.group(2) is not None else value
            values[key] = word
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        values[key] = " ".join(words)
    return values


def parse_sha256sum(stdout: str) -> str:
    """``<64 hex>  <path>`` → the digest."""
    match = _SHA256_RE.match(stdout)
    if not match:
        raise UnexpectedOutput(f"not sha256sum output: {first_line(stdout)!r}")
    return match.group(1)
