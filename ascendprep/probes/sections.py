"""The wire format of probe scripts: one delimited section per command, read back into Python.

A probe script prints, for every command it runs::

    @@<nonce> begin <name>[ key=value]...
    <stdout of the command>
    @@<nonce> stderr
    <stderr of the command>
    @@<nonce> end rc=<exit status> tries=<attempts>

after a header line ``@@ascendprep <kind> v2 <nonce>`` and before a final ``@@<nonce> done``.
The nonce is random per rendered script, so no tool output can forge a marker, and text before
the header (a login banner) is ignored.

Format v2 (what the scripts print now): the script ends every stream with one newline of its own,
whatever the stream held, so a marker always starts its own line without the script first looking
at the stream's last byte (that look cost three processes per stream); the parser removes exactly
that newline. Format v1 (older scripts, recorded transcripts, bundles) ended a stream with a
newline only when it lacked one. Both are read, and give the same :class:`Section`: a stdout or
stderr that is either empty or ends with ``\\n`` (a stream whose last line had no newline gets one).

The shell side of the format lives in :mod:`ascendprep.probes.shell`; keep the two in step.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

FORMAT_VERSION = 2
#: Formats :func:`parse_transcript` reads (v1: a stream's newline added only when missing).
READABLE_VERSIONS = (1, 2)

#: Values of section attributes are restricted to this set so that a plain split parses them.
ATTR_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:/+@-]*$")
_NAME_RE = re.compile(r"^[a-z0-9_.-]+$")
_HEADER_RE = re.compile(r"^@@ascendprep (?P<kind>[a-z]+) v(?P<version>\d+) (?P<nonce>[0-9a-f]{16})$")
_END_RE = re.compile(r"^end rc=(?P<rc>\d+) tries=(?P<tries>\d+)$")

#: Exit statuses of coreutils ``timeout``: 124 after TERM, 137 when KILL (``-k``) was needed.
TIMEOUT_RCS = (124, 137)
#: What a shell (and our ``ap_locate``/``ap_installed``) reports for a command that is not there.
NOT_FOUND_RC = 127


def new_nonce() -> str:
    """16 hex digits, fresh per rendered script."""
    return secrets.token_hex(8)


def header_line(kind: str, nonce: str) -> str:
    return f"@@ascendprep {kind} v{FORMAT_VERSION} {nonce}"


def render_attrs(**attrs: object) -> str:
    """`` key=value`` pairs for a begin line (leading space included; '' when none)."""
    parts = []
    for key, value in attrs.items():
        text = str(value)
        if not ATTR_VALUE_RE.match(text):
            raise ValueError(f"section attribute {key}={text!r} has characters outside {ATTR_VALUE_RE.pattern}")
        parts.append(f" {key}={text}")
    return "".join(parts)


@dataclass(frozen=True)
class Section:
    """One command's output. ``rc`` is None when the output stopped inside the section."""

    name: str
    attrs: Dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    rc: Optional[int] = None
    tries: int = 1

    @property
    def npu(self) -> Optional[int]:
        return self.int_attr("npu")

    def int_attr(self, key: str) -> Optional[int]:
        value = self.attrs.get(key, "")
        return int(value) if value.isdigit() else None

    @property
    def timed_out(self) -> bool:
        return self.rc in TIMEOUT_RCS

    @property
    def text(self) -> str:
        """stdout and stderr together, for messages that may be printed on either stream."""
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Transcript:
    """All sections of one script run. ``problem`` says why it is incomplete (None when whole)."""

    kind: Optional[str]
    sections: Tuple[Section, ...] = ()
    problem: Optional[str] = None

    @property
    def complete(self) -> bool:
        return self.problem is None


def parse_transcript(text: str, kind: str) -> Transcript:
    """Split a script's stdout into sections. Never raises: damage is reported in ``problem``."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another one
    nonce = None
    start = 0
    for index, line in enumerate(lines):
        match = _HEADER_RE.match(line.rstrip("\r"))
        if match:
            if match.group("kind") != kind:
                return Transcript(None, problem=f"expected a {kind} script's output, got a {match.group('kind')} script's")
            version = int(match.group("version"))
            if version not in READABLE_VERSIONS:
                return Transcript(kind, problem=f"output format v{match.group('version')} is not v{FORMAT_VERSION}")
            nonce, start = match.group("nonce"), index + 1
            break
    if nonce is None:
        return Transcript(None, problem=f"no ascendprep {kind} header in the output (did the script run?)")
    return _parse_body(lines[start:], "\r" in text, f"@@{nonce} ", kind, version)


def _parse_body(body_lines: List[str], carriage_returns: bool, marker: str, kind: str, version: int) -> Transcript:
    """The sections of a body after its header line.

    Split at the marker lines rather than walking every line: a gather prints ~1,800 lines and
    ~450 markers per host, and this loop runs once per host of a 4,096-host verify. Each piece is
    one marker line's command, then (after its newline) the text up to the next marker. In v1 that
    text is whole lines; in v2 the newline before the next marker is the script's own (consumed by
    the split) and the stream is taken as it is.
    """
    if carriage_returns:
        body_lines = [line.rstrip("\r") for line in body_lines]
    v1 = version == 1
    sections: List[Section] = []
    # The open section: its name (None: none open), attributes and streams as read so far (a
    # stream is one piece unless a marker repeats). Plain locals rather than an object: this runs
    # per host.
    name: Optional[str] = None
    attrs: Dict[str, str] = {}
    out = err = ""
    into_err = False
    done = False
    for piece in ("\n" + "\n".join(body_lines)).split("\n" + marker)[1:]:
        command, newline, rest = piece.partition("\n")
        if command.startswith("begin "):
            if name is not None:
                sections.append(Section(name, attrs, _ended(out), _ended(err), None, 1))
            name, attrs = _begin(command[len("begin "):])
            out = err = ""
            into_err = False
        elif command == "stderr" and name is not None:
            into_err = True
        elif command == "done":
            done = True
            break
        elif name is not None:
            end = _END_RE.match(command)
            if end:
                sections.append(Section(name, attrs, _ended(out), _ended(err), int(end.group("rc")), int(end.group("tries"))))
                name = None
        text = rest + "\n" if v1 else rest
        if newline and text and name is not None:
            if into_err:
                err += text
            else:
                out += text
    problem = None
    if name is not None:
        sections.append(Section(name, attrs, _ended(out), _ended(err), None, 1))
        problem = f"output stopped inside section {name!r}"
    elif not done:
        problem = "output stopped before the script finished (no end marker)"
    return Transcript(kind, tuple(sections), problem)


def _ended(text: str) -> str:
    """A stream as v1 gave it: empty, or ending with a newline (a v1 stream already is)."""
    return text if not text or text[-1] == "\n" else text + "\n"


def _begin(rest: str) -> Tuple[str, Dict[str, str]]:
    """(name, attributes) of a begin line's ``name key=value ...``; a bad name reads "invalid"."""
    name, *pairs = rest.split(" ")
    attrs = dict(pair.partition("=")[::2] for pair in pairs if "=" in pair)
    return (name if _NAME_RE.match(name) else "invalid"), attrs
