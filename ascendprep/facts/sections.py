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

The shell side of the format lives in :mod:`ascendprep.facts.shell`; keep the two in step.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from types import MappingProxyType
from typing import List, Mapping, NamedTuple, Optional, Tuple

from ascendprep.base.limits import SECTION_ID_MAX_DIGITS

FORMAT_VERSION = 2
#: Formats :func:`parse_transcript` reads (v1: a stream's newline added only when missing).
READABLE_VERSIONS = (1, 2)

#: Values of section attributes are restricted to this set so that a plain split parses them.
ATTR_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:/+@-]*$")
_NAME_RE = re.compile(r"^[a-z0-9_.-]+$")
#: The header, as a line anywhere in a text (the first one counts; text before it is a banner).
_HEADER_RE = re.compile(r"^@@ascendprep (?P<kind>[a-z]+) v(?P<version>\d+) (?P<nonce>[0-9a-f]{16})$", re.MULTILINE)
#: (At most 9 digits each: a real exit status is under 256, and int() refuses 4,300 digits.)
_END_RE = re.compile(r"^end rc=(?P<rc>\d{1,9}) tries=(?P<tries>\d{1,9})$")

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


#: The attributes of a section that has none: one read-only empty map for all of them.
NO_ATTRS: Mapping[str, str] = MappingProxyType({})


def id_number(text: str) -> Optional[int]:
    """An id or count a node printed (``npu=3``, a ping script's ``timeout=15``) as a number; None
    when it is none. Decimal digits only (``²`` is a digit to ``isdigit`` that int() refuses) and at
    most :data:`~ascendprep.base.limits.SECTION_ID_MAX_DIGITS` of them (int() refuses 4,300), since a
    node may print anything there."""
    return int(text) if text.isdecimal() and len(text) <= SECTION_ID_MAX_DIGITS else None


class Section(NamedTuple):
    """One command's output. ``rc`` is None when the output stopped inside the section."""

    name: str
    attrs: Mapping[str, str] = NO_ATTRS
    stdout: str = ""
    stderr: str = ""
    rc: Optional[int] = None
    tries: int = 1

    @property
    def npu(self) -> Optional[int]:
        return id_number(self.attrs.get("npu", ""))

    def int_attr(self, key: str) -> Optional[int]:
        """The attribute's number (:func:`id_number`); None when it is none."""
        return id_number(self.attrs.get(key, ""))

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
    """Split a script's stdout into sections. Never raises: damage is reported in ``problem``.

    The format is defined line by line (see the module doc). Carriage returns that end a line (a
    terminal-minded tool, a Windows-edited file on the node) are dropped first. The text after the
    header line is then split at the marker lines rather than read line by line: a gather prints
    some 2,000 lines per host but only a few hundred markers.
    """
    if "\r" in text:
        text = "\n".join(line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n"))
    header = _HEADER_RE.search(text)
    if header is None:
        return Transcript(None, problem=f"no ascendprep {kind} header in the output (did the script run?)")
    if header.group("kind") != kind:
        return Transcript(None, problem=f"expected a {kind} script's output, got a {header.group('kind')} script's")
    version = header.group("version")
    if len(version) > 4 or int(version) not in READABLE_VERSIONS:  # (int() refuses 5,000 digits)
        return Transcript(kind, problem=f"output format v{version[:20]} is not v{FORMAT_VERSION}")
    body = text[header.end() :]  # led by the header line's own newline
    if body.endswith("\n"):
        body = body[:-1]  # the newline that ends the last line starts no line of its own
    pieces = body.split(f"\n@@{header.group('nonce')} ")[1:]
    return _read_pieces(pieces, int(version) == 1, kind)


def _read_pieces(pieces: List[str], v1: bool, kind: str) -> Transcript:
    """The sections of a body split at its marker lines. Each piece is one marker line's command,
    then (after its newline) the text up to the next marker. In v1 that text is whole lines; in v2
    the newline before the next marker is the script's own (consumed by the split) and the stream
    is taken as it is."""
    sections: List[Section] = []
    # The open section: its name (None: none open), attributes and streams as read so far (a
    # stream is one piece unless a marker repeats).
    name: Optional[str] = None
    attrs: Mapping[str, str] = NO_ATTRS
    out = err = ""
    into_err = False
    done = False
    for piece in pieces:
        command, newline, rest = piece.partition("\n")
        if command.startswith("begin "):
            if name is not None:
                sections.append(Section(name, attrs, _ended(out), _ended(err), None, 1))
            name, attrs = _begin(command)
            out = err = ""
            into_err = False
        elif command == "stderr" and name is not None:
            into_err = True
        elif command == "done":
            done = True
            break
        elif name is not None:
            ended = _end(command)
            if ended is not None:
                sections.append(Section(name, attrs, _ended(out), _ended(err), *ended))
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


def _begin(command: str) -> Tuple[str, Mapping[str, str]]:
    """(name, attributes) of a ``begin name key=value ...`` command; a bad name reads "invalid"."""
    name, *pairs = command[len("begin ") :].split(" ")
    attrs = dict(pair.partition("=")[::2] for pair in pairs if "=" in pair)
    return (name if _NAME_RE.match(name) else "invalid"), attrs


def _end(command: str) -> Optional[Tuple[int, int]]:
    """(rc, tries) of an ``end rc=N tries=M`` command; None for any other command."""
    match = _END_RE.match(command)
    if match is None:
        return None
    return int(match.group("rc")), int(match.group("tries"))
