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
from typing import Dict, List, Mapping, NamedTuple, Optional, Tuple

from ascendprep.base.limits import SECTION_ID_MAX_DIGITS, SHARED_BEGIN_LINE_MAX_CHARS, SHARED_BEGIN_LINES, SHARED_END_LINES

FORMAT_VERSION = 2
#: Formats :func:`parse_transcript` reads (v1: a stream's newline added only when missing).
READABLE_VERSIONS = (1, 2)

#: Values of section attributes are restricted to this set so that a plain split parses them.
ATTR_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:/+@-]*$")
_NAME_RE = re.compile(r"^[a-z0-9_.-]+$")
_HEADER_RE = re.compile(r"^@@ascendprep (?P<kind>[a-z]+) v(?P<version>\d+) (?P<nonce>[0-9a-f]{16})$")
#: The same header as a line anywhere in a text (the first one counts; text before it is a banner).
_HEADER_LINE_RE = re.compile(_HEADER_RE.pattern, re.MULTILINE)
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
    """One command's output. ``rc`` is None when the output stopped inside the section.

    A named tuple rather than a dataclass: ~150 are made per host of every gather, and a frozen
    dataclass's ``__init__`` costs several times a tuple's. ``attrs`` is read, never changed: the
    parser shares one map between the sections of every host whose begin line reads the same.
    """

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


#: ``_section((name, attrs, stdout, stderr, rc, tries))``: a Section from its six values, as the
#: splitter makes them. The named tuple's own ``__new__`` is a Python function (its defaults):
#: calling it cost ~0.4 µs more per section, ~60 µs per host of a gather (~150 sections).
_section = Section._make


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

    The format is defined line by line (see the module doc); without a carriage return in the
    text, the lines are never split apart: the header is found by one search and the body after
    it is split at the marker lines only (a gather prints ~2,000 lines and ~470 markers per host).
    """
    if "\r" in text:
        return _parse_normalised_lines(text, kind)
    header = _HEADER_LINE_RE.search(text)
    if header is None:
        return _no_header(kind)
    refused = _read_header(header, kind)
    if refused is not None:
        return refused
    # The body's pieces (see _parse_body), split from the text itself rather than from a copy of
    # its body (64 KB per host of a gather): the pieces up to the header's end (the banner's and
    # the header's own) are counted and dropped, and the newline that ends the text's last line is
    # taken off the last piece, as it would be off the body. (No marker can straddle the header's
    # end: a marker has one newline, its first character, and "@@ascendprep" is no nonce.)
    marker = f"\n@@{header.group('nonce')} "
    pieces = text.split(marker)[1 + text.count(marker, 0, header.end()):]
    if pieces and text.endswith("\n"):
        pieces[-1] = pieces[-1][:-1]
    return _read_sections(pieces, kind, int(header.group("version")))


def _parse_normalised_lines(text: str, kind: str) -> Transcript:
    """The reading of a text with carriage returns: CRLF read as LF, and every line's trailing
    CRs dropped (a terminal-minded tool or a Windows-edited file on the node)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another one
    lines = [line.rstrip("\r") for line in lines]
    for index, line in enumerate(lines):
        header = _HEADER_RE.match(line)
        if header:
            body = "\n" + "\n".join(lines[index + 1:])
            return _read_header(header, kind) or _parse_body(body, header.group("nonce"), kind, int(header.group("version")))
    return _no_header(kind)


def _no_header(kind: str) -> Transcript:
    return Transcript(None, problem=f"no ascendprep {kind} header in the output (did the script run?)")


def _read_header(header: "re.Match[str]", kind: str) -> Optional[Transcript]:
    """The transcript to give instead of reading the body (another script's, an unknown format);
    None: read on."""
    if header.group("kind") != kind:
        return Transcript(None, problem=f"expected a {kind} script's output, got a {header.group('kind')} script's")
    version = header.group("version")
    if len(version) > 4 or int(version) not in READABLE_VERSIONS:  # (int() refuses 5,000 digits)
        return Transcript(kind, problem=f"output format v{version[:20]} is not v{FORMAT_VERSION}")
    return None


def _parse_body(body: str, nonce: str, kind: str, version: int) -> Transcript:
    """The sections of a body: the text after the header line, led by the header's newline.

    Split at the marker lines rather than walking every line: a gather prints ~2,000 lines and
    ~470 markers per host, and this loop runs once per host of a 4,096-host verify. Each piece is
    one marker line's command, then (after its newline) the text up to the next marker. In v1 that
    text is whole lines; in v2 the newline before the next marker is the script's own (consumed by
    the split) and the stream is taken as it is.
    """
    return _read_sections(body.split(f"\n@@{nonce} ")[1:], kind, version)


def _read_sections(pieces: List[str], kind: str, version: int) -> Transcript:
    """The transcript of a body's pieces: three at a time when regular, else one marker at a time."""
    v1 = version == 1
    regular = _regular_sections(pieces, v1)
    if regular is not None:
        return Transcript(kind, regular, None)
    return _read_pieces(pieces, v1, kind)


def _read_pieces(pieces: List[str], v1: bool, kind: str) -> Transcript:
    """The sections of any body's pieces (see :func:`_parse_body`), one marker at a time."""
    sections: List[Section] = []
    # The open section: its name (None: none open), attributes and streams as read so far (a
    # stream is one piece unless a marker repeats). Plain locals rather than an object: this runs
    # per host.
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
            if ended is not None:  # the usual close of a section: _ended inlined (~150 per host)
                if out and not out.endswith("\n"):
                    out += "\n"
                if err and not err.endswith("\n"):
                    err += "\n"
                sections.append(_section((name, attrs, out, err, *ended)))
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


def _regular_sections(pieces: List[str], v1: bool) -> Optional[Tuple[Section, ...]]:
    """The sections of a body whose every section is ``begin``, ``stderr``, ``end`` in turn and
    that ends with ``done``, read three pieces at a time; None for any other body (a section cut
    short, a marker repeated or missing, no ``done``), which :func:`_parse_body` then reads piece
    by piece. Both readings give the same sections for such a body (tests/probes/test_sections_split.py);
    this one costs about half as much, and it is what every host that ran its script prints."""
    if len(pieces) % 3 != 1 or pieces[-1].partition("\n")[0] != "done":
        return None
    sections: List[Section] = []
    triples = iter(pieces[:-1])
    for begin, stderr, end in zip(triples, triples, triples):
        command, newline, out = begin.partition("\n")
        read = _BEGIN_LINES.get(command)  # (a kept line is a begin line)
        if read is None:
            if not command.startswith("begin "):
                return None
            read = _begin(command)
        # A kept end line has no newline, so a piece equal to one is that line and nothing else.
        ended = _END_LINES.get(end) or _end(end.partition("\n")[0])
        if ended is None:
            return None
        if v1:  # whole lines: the split took the newline that ended the last one
            if not (stderr == "stderr" or stderr.startswith("stderr\n")):
                return None
            out = out + "\n" if newline else ""
            err = stderr[len("stderr\n"):] + "\n" if stderr != "stderr" else ""
        else:  # the split took the script's own newline; a stream's last line keeps (or gets) one
            if out and out[-1] != "\n":
                out += "\n"
            if stderr == "stderr\n":  # nothing on stderr: most sections
                err = ""
            elif stderr == "stderr" or stderr.startswith("stderr\n"):
                err = stderr[len("stderr\n"):]
                if err and err[-1] != "\n":
                    err += "\n"
            else:
                return None
        sections.append(_section((*read, out, err, *ended)))
    return tuple(sections)


def _ended(text: str) -> str:
    """A stream as v1 gave it: empty, or ending with a newline (a v1 stream already is)."""
    return text if not text or text[-1] == "\n" else text + "\n"


#: Begin lines read so far → (name, read-only attributes). A begin line is what the rendered
#: script printed (the nonce keeps tool output from forging one), so every host of a fleet that
#: ran the same script prints the same ~150 of them; each is split once, not once per host.
#: At most :data:`~ascendprep.base.limits.SHARED_BEGIN_LINES` are kept, each of at most
#: :data:`~ascendprep.base.limits.SHARED_BEGIN_LINE_MAX_CHARS`; any other line is read anew.
_BEGIN_LINES: Dict[str, Tuple[str, Mapping[str, str]]] = {}
#: The attribute maps of the kept begin lines, one per distinct set of attributes (no more than
#: there are kept lines).
_ATTR_MAPS: Dict[Tuple[Tuple[str, str], ...], Mapping[str, str]] = {}


def _begin(command: str) -> Tuple[str, Mapping[str, str]]:
    """(name, attributes) of a ``begin name key=value ...`` command; a bad name reads "invalid"."""
    known = _BEGIN_LINES.get(command)
    if known is not None:
        return known
    name, *pairs = command[len("begin "):].split(" ")
    attrs = dict(pair.partition("=")[::2] for pair in pairs if "=" in pair)
    name = name if _NAME_RE.match(name) else "invalid"
    if len(_BEGIN_LINES) >= SHARED_BEGIN_LINES or len(command) > SHARED_BEGIN_LINE_MAX_CHARS:
        return name, MappingProxyType(attrs) if attrs else NO_ATTRS
    # Kept: with the one map of every kept line that has these attributes (an NPU's dozen
    # sections all say ``npu=3``), so that the gather's loop reads them once per NPU.
    items = tuple(attrs.items())
    shared_attrs = _ATTR_MAPS.get(items)
    if shared_attrs is None:
        shared_attrs = _ATTR_MAPS[items] = MappingProxyType(attrs) if attrs else NO_ATTRS
    read = _BEGIN_LINES[command] = (name, shared_attrs)
    return read


#: End lines read so far → (rc, tries), shared like :data:`_BEGIN_LINES`: a fleet's sections end
#: with a handful of them (``end rc=0 tries=1`` most), each read by a regex and two int() once.
#: At most :data:`~ascendprep.base.limits.SHARED_END_LINES` kept (each under 40 characters: see _END_RE).
_END_LINES: Dict[str, Tuple[int, int]] = {}


def _end(command: str) -> Optional[Tuple[int, int]]:
    """(rc, tries) of an ``end rc=N tries=M`` command; None for any other command."""
    known = _END_LINES.get(command)
    if known is not None:
        return known
    match = _END_RE.match(command)
    if match is None:
        return None
    read = (int(match.group("rc")), int(match.group("tries")))
    if len(_END_LINES) < SHARED_END_LINES:
        _END_LINES[command] = read
    return read
