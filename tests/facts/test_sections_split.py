"""parse_transcript splits at the marker lines (one pass of str.split, not a Python step per line):
it must read every transcript exactly as the line-by-line reading below, the format's definition."""

from __future__ import annotations

import random
import re
from typing import List, Optional

from ascendprep.facts.sections import Section, Transcript, parse_transcript

NONCE = "0123456789abcdef"
_HEADER = re.compile(r"^@@ascendprep (?P<kind>[a-z]+) v(?P<version>\d+) (?P<nonce>[0-9a-f]{16})$")
#: (An exit status or try count of 10 digits or more is no end line: int() refuses 4,300 digits.)
_END = re.compile(r"^end rc=(?P<rc>\d{1,9}) tries=(?P<tries>\d{1,9})$")


def line_by_line(text: str, kind: str) -> Transcript:
    """The reference: every line looked at in turn (the reading before the split)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    nonce, start = None, 0
    for index, line in enumerate(lines):
        match = _HEADER.match(line.rstrip("\r"))
        if match:
            nonce, start = match.group("nonce"), index + 1
            break
    if nonce is None:
        return Transcript(None, problem=f"no ascendprep {kind} header in the output (did the script run?)")
    marker = f"@@{nonce} "
    sections: List[Section] = []
    current: Optional[dict] = None

    def close(rc, tries):
        return Section(
            current["name"],
            current["attrs"],
            "".join(l + "\n" for l in current["out"]),
            "".join(l + "\n" for l in current["err"]),
            rc,
            tries,
        )

    done = False
    for line in lines[start:]:
        line = line.rstrip("\r")
        if not line.startswith(marker):
            if current is not None:
                current["err" if current["in_err"] else "out"].append(line)
            continue
        command = line[len(marker) :]
        end = _END.match(command)
        if command.startswith("begin "):
            if current is not None:
                sections.append(close(None, 1))
            name, *pairs = command[len("begin ") :].split(" ")
            attrs = dict(pair.partition("=")[::2] for pair in pairs if "=" in pair)
            current = {
                "name": name if re.match(r"^[a-z0-9_.-]+$", name) else "invalid",
                "attrs": attrs,
                "out": [],
                "err": [],
                "in_err": False,
            }
        elif command == "stderr" and current is not None:
            current["in_err"] = True
        elif end and current is not None:
            sections.append(close(int(end.group("rc")), int(end.group("tries"))))
            current = None
        elif command == "done":
            done = True
            break
    problem = None
    if current is not None:
        sections.append(close(None, 1))
        problem = f"output stopped inside section {current['name']!r}"
    elif not done:
        problem = "output stopped before the script finished (no end marker)"
    return Transcript(kind, tuple(sections), problem)


def _random_transcript(rng: random.Random) -> str:
    m = f"@@{NONCE} "
    out = []
    if rng.random() < 0.3:  # a banner, perhaps with marker lines of its own (read as nothing)
        out += [
            rng.choice(["Welcome! login banner", f"{m}begin banner npu=1", f"{m}stderr", f"{m}done", ""])
            for _ in range(rng.randint(1, 3))
        ]
    out.append(f"@@ascendprep gather v1 {NONCE}")
    for _ in range(rng.randint(0, 6)):
        choice = rng.random()
        if choice < 0.6:
            out.append(f"{m}begin {rng.choice(['hccn.ip', 'sysctl', 'BAD!name', 'x'])} npu={rng.randint(0, 7)} key=a=b")
            out += [
                rng.choice(["ipaddr:1.2.3.4", "", " ", "@@ffffffffffffffff begin fake", "x\r", m.strip()])
                for _ in range(rng.randint(0, 3))
            ]
            if rng.random() < 0.8:
                out.append(f"{m}stderr")
                out += ["err line" for _ in range(rng.randint(0, 2))]
            if rng.random() < 0.8:
                out.append(f"{m}end rc={rng.randint(0, 200)} tries={rng.randint(1, 4)}")
        elif choice < 0.7:
            out.append(f"{m}stderr")
        elif choice < 0.8:
            out.append(f"{m}end rc=x tries=1")
        elif choice < 0.9:
            out.append(f"{m}unknown command")
        else:
            out.append("stray line between sections")
    if rng.random() < 0.7:
        out.append(f"{m}done")
        out += ["after done", f"{m}begin late"] if rng.random() < 0.3 else []
    newline = "\r\n" if rng.random() < 0.2 else "\n"
    text = newline.join(out)
    return text + (newline if rng.random() < 0.8 else "")


def test_the_split_reads_every_transcript_as_the_line_by_line_reading() -> None:
    rng = random.Random(12)
    for _ in range(3000):
        text = _random_transcript(rng)
        assert parse_transcript(text, "gather") == line_by_line(text, "gather"), text


def test_a_whole_section_round_trips() -> None:
    m = f"@@{NONCE} "
    text = f"@@ascendprep gather v1 {NONCE}\n{m}begin hccn.ip npu=3\nipaddr:10.0.0.1\n\n{m}stderr\nwarn\n{m}end rc=0 tries=2\n{m}done\n"
    transcript = parse_transcript(text, "gather")
    assert transcript.complete
    assert transcript.sections == (Section("hccn.ip", {"npu": "3"}, "ipaddr:10.0.0.1\n\n", "warn\n", 0, 2),)


def test_a_host_printing_thousands_of_begin_lines_has_each_read() -> None:
    m = f"@@{NONCE} "
    flood = (
        f"@@ascendprep gather v2 {NONCE}\n"
        + "".join(f"{m}begin sysctl key=k{i}\n\n{m}stderr\n\n{m}end rc=0 tries=1\n" for i in range(5000))
        + f"{m}done\n"
    )
    read = parse_transcript(flood, "gather")
    assert read.complete
    assert [s.attrs["key"] for s in read.sections] == [f"k{i}" for i in range(5000)]


def test_a_long_begin_line_is_read() -> None:
    """A host knows its script's nonce, so it can print begin lines of any length: they are read
    as any other."""
    m = f"@@{NONCE} "
    long_value = "v" * 1_000_000
    text = (
        f"@@ascendprep gather v2 {NONCE}\n{m}begin sysctl key={long_value}\n\n{m}end rc=0 tries=1\n"
        f"{m}begin sysctl key=short\n\n{m}end rc=0 tries=1\n{m}done\n"
    )
    read = parse_transcript(text, "gather")
    assert [len(s.attrs["key"]) for s in read.sections] == [1_000_000, 5]


def test_a_header_on_the_last_line_and_banners_before_it() -> None:
    for text in (
        f"banner\n@@ascendprep gather v2 {NONCE}",
        f"banner\n@@ascendprep gather v2 {NONCE}\n",
        f"@@ascendprep gather v2 {NONCE}\n\n",
    ):
        transcript = parse_transcript(text, "gather")
        assert transcript.kind == "gather" and transcript.sections == ()
        assert transcript.problem == "output stopped before the script finished (no end marker)"
    assert parse_transcript(f"x @@ascendprep gather v2 {NONCE}\n", "gather").problem.startswith(
        "no ascendprep gather header"
    )


def test_a_header_with_a_huge_version_number_is_a_problem_not_an_exception() -> None:
    for newline in ("\n", "\r\n"):
        transcript = parse_transcript(f"@@ascendprep gather v{'9' * 5000} {NONCE}{newline}", "gather")
        assert transcript.problem == f"output format v{'9' * 20} is not v2"
    assert parse_transcript(f"@@ascendprep gather v3 {NONCE}\n", "gather").problem == "output format v3 is not v2"


def _regular_transcript(rng: random.Random, version: int) -> str:
    """A transcript as a script prints it (every section begin, stderr, end; then done), damaged
    now and then: a marker left out, repeated, misspelt, text between sections, no done."""
    m = f"@@{NONCE} "
    lines = [f"@@ascendprep gather v{version} {NONCE}"]
    streams = [
        "",
        "ipaddr:1.2.3.4",
        "a\nb",
        "no newline at the end",
        "\n",
        "x\r",
        "@@ffffffffffffffff begin fake",
        "tab\there",
    ]
    for _ in range(rng.randint(0, 5)):
        lines.append(
            f"{m}begin {rng.choice(['hccn.ip', 'sysctl', 'BAD!name'])}{rng.choice(['', ' npu=3', ' key=a=b'])}"
        )
        stdout, stderr = rng.choice(streams), rng.choice(streams)
        if version == 2:  # the script's own newline after each stream
            lines += [
                stdout,
                f"{m}stderr",
                stderr,
                f"{m}end rc={rng.choice([0, 1, 124, 255])} tries={rng.randint(1, 4)}",
            ]
        else:
            lines += (
                ([stdout] if stdout else []) + [f"{m}stderr"] + ([stderr] if stderr else []) + [f"{m}end rc=0 tries=1"]
            )
        damage = rng.random()
        if damage < 0.04:
            lines.pop(rng.randrange(1, len(lines)))
        elif damage < 0.08:
            lines.insert(
                rng.randrange(1, len(lines) + 1),
                rng.choice(
                    [
                        f"{m}stderr",
                        f"{m}end rc=0 tries=1",
                        f"{m}begin x",
                        f"{m}end rc=1x tries=1",
                        f"{m}end rc={'9' * 12} tries=1",
                        "stray",
                    ]
                ),
            )
    if rng.random() < 0.95:
        lines.append(f"{m}done")
        if rng.random() < 0.1:
            lines += ["after done", f"{m}begin late"]
    return "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")


def test_transcripts_as_scripts_print_them_read_as_the_line_by_line_reading() -> None:
    """v1 transcripts as a script prints them (begin, stderr, end; then done), damaged now and then."""
    rng = random.Random(23)
    for _ in range(2000):
        text = _regular_transcript(rng, 1)
        assert parse_transcript(text, "gather") == line_by_line(text, "gather"), text


def test_v2_streams_are_read_without_the_scripts_own_newline() -> None:
    """In v2 the script ends every stream with a newline of its own: the section holds the stream
    as the tool printed it, a last line without a newline given one (as v1 gives it)."""
    rng = random.Random(31)
    m = f"@@{NONCE} "
    streams = [
        "",
        "ipaddr:1.2.3.4",
        "a\nb",
        "ends\n",
        "\n",
        "two\n\n",
        "tab\there",
        "x\r",
        "@@ffffffffffffffff begin fake",
    ]
    for _ in range(500):
        text, want = f"@@ascendprep gather v2 {NONCE}\n", []
        for _ in range(rng.randint(0, 5)):
            out, err, rc = rng.choice(streams), rng.choice(streams), rng.choice([0, 1, 124, 255])
            text += f"{m}begin sysctl key=k\n{out}\n{m}stderr\n{err}\n{m}end rc={rc} tries=2\n"
            want.append(Section("sysctl", {"key": "k"}, _ended(out.rstrip("\r")), _ended(err.rstrip("\r")), rc, 2))
        text += f"{m}done\n"
        assert parse_transcript(text, "gather") == Transcript("gather", tuple(want), None), text


def _ended(stream: str) -> str:
    return stream if not stream or stream.endswith("\n") else stream + "\n"


def test_an_end_line_with_a_huge_exit_status_leaves_the_section_open_rather_than_raising() -> None:
    m = f"@@{NONCE} "
    text = f"@@ascendprep gather v2 {NONCE}\n{m}begin hccn.ip npu=0\n\n{m}stderr\n\n{m}end rc={'9' * 5000} tries=1\n{m}done\n"
    transcript = parse_transcript(text, "gather")
    assert transcript.problem == "output stopped inside section 'hccn.ip'"
    assert transcript.sections[0].rc is None
    assert parse_transcript(text.replace("9" * 5000, "255"), "gather").sections[0].rc == 255
