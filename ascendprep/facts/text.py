"""Small text helpers shared by the probe parsers, and the error they raise.

Parsers are strict: text they do not recognise raises :class:`UnexpectedOutput`, which the
gather step records as a ``ProbeError`` for that probe instead of guessing a value.
"""

from __future__ import annotations

from typing import Dict, Iterator, Optional, Tuple


class UnexpectedOutput(ValueError):
    """A tool printed something its parser does not recognise."""


def content_lines(text: str) -> Iterator[str]:
    """Lines with surrounding whitespace (and stray CRs from a pty) removed, blanks skipped."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            yield stripped


def split_colon(line: str) -> Optional[Tuple[str, str]]:
    """``"  NPU ID     : 0"`` → ``("NPU ID", "0")``; None when the line has no colon."""
    key, sep, value = line.partition(":")
    if not sep:
        return None
    return key.strip(), value.strip()


def key_value_file(text: str) -> Dict[str, str]:
    """``key=value`` lines (version.info, install.info); comments and other lines are skipped.

    A repeated key keeps its first value, as ``grep key | head -1``-style readers do.
    """
    values: Dict[str, str] = {}
    for line in content_lines(text):
        if line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if sep and key and key not in values:
            values[key] = value.strip()
    return values


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line, shortened for error messages."""
    for line in content_lines(text):
        return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def not_as_expected(expected: str, stdout: str) -> UnexpectedOutput:
    """The error for output that lacks what the parser needs, quoting both sides exactly.

    ``expected`` names the form, e.g. ``'default gateway:<ip>, Iface:eth<k>'``; what came is the
    first line of the output (or ``no output``), so a user can compare the two at a glance.
    """
    got = first_line(stdout)
    return UnexpectedOutput(f"expected {expected}, got {got!r}" if got else f"expected {expected}, got no output")
