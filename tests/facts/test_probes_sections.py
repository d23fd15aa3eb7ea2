"""The section framing, written by the real sh helpers and read back by parse_transcript."""

from __future__ import annotations

import shlex
import shutil

import pytest
from nodescript import run_node_script

from ascendprep.facts.sections import parse_transcript
from ascendprep.facts.shell import main_block, preamble

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]

TRICKY_OUTPUTS = [
    "",
    "\n",
    "no newline at the end",
    "two\nlines\n",
    "@@ascendprep gather v1 ffffffffffffffff\n@@ffffffffffffffff done\n",  # a forged header/marker
    "  leading spaces and a tab\t\n\n\nblank lines kept\n",
]


def _run(shell: str, body: str, kind: str = "gather") -> str:
    script = preamble(kind, "00112233445566ff", 5, 0, "/usr/local/Ascend") + "\n" + main_block(body)
    return run_node_script([shell, "-s"], input=script, capture_output=True, text=True, timeout=30, check=True).stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_sections_carry_output_exactly(shell):
    body = "".join(
        f"ap_run case{index} ' n={index}' sh -c {shlex.quote('printf %s ' + shlex.quote(text) + '; printf err >&2; exit ' + str(index))}\n"
        for index, text in enumerate(TRICKY_OUTPUTS)
    )
    transcript = parse_transcript(_run(shell, body), "gather")
    assert transcript.complete, transcript.problem
    assert len(transcript.sections) == len(TRICKY_OUTPUTS)
    for index, (section, text) in enumerate(zip(transcript.sections, TRICKY_OUTPUTS)):
        assert section.name == f"case{index}"
        assert section.attrs == {"n": str(index)}
        assert section.stdout == (text if not text or text.endswith("\n") else text + "\n")
        assert section.stderr == "err\n"
        assert (section.rc, section.tries) == (index, 1)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_tool_reading_stdin_cannot_eat_the_script(shell):
    body = "ap_run first '' cat\nap_run second '' echo still here\n"
    transcript = parse_transcript(_run(shell, body), "gather")
    assert [section.name for section in transcript.sections] == ["first", "second"]
    assert transcript.sections[1].stdout == "still here\n"
    assert transcript.complete


def test_banner_before_header_is_ignored_and_truncation_is_reported():
    text = (
        "Welcome to node-01\n"
        "@@ascendprep gather v1 0123456789abcdef\n"
        "@@0123456789abcdef begin hostname\nnode-01\n@@0123456789abcdef stderr\n@@0123456789abcdef end rc=0 tries=1\n"
        "@@0123456789abcdef begin hccn.ip npu=0\nipaddr:10.0.0.1\n"
    )
    transcript = parse_transcript(text, "gather")
    assert [(s.name, s.rc) for s in transcript.sections] == [("hostname", 0), ("hccn.ip", None)]
    assert transcript.sections[1].stdout == "ipaddr:10.0.0.1\n"
    assert "stopped inside section 'hccn.ip'" in transcript.problem


@pytest.mark.parametrize(
    "text, problem",
    [
        ("bash: sh: command not found\n", "no ascendprep gather header"),
        ("@@ascendprep ping v1 0123456789abcdef\n@@0123456789abcdef done\n", "got a ping script's"),
        ("@@ascendprep gather v3 0123456789abcdef\n", "format v3"),
        ("@@ascendprep gather v1 0123456789abcdef\n", "before the script finished"),
    ],
)
def test_damaged_output_is_described(text, problem):
    assert problem in parse_transcript(text, "gather").problem


def test_crlf_from_a_pty_is_tolerated():
    text = "@@ascendprep gather v1 0123456789abcdef\r\n@@0123456789abcdef begin arch\r\nx86_64\r\n@@0123456789abcdef stderr\r\n@@0123456789abcdef end rc=0 tries=1\r\n@@0123456789abcdef done\r\n"
    transcript = parse_transcript(text, "gather")
    assert transcript.complete
    assert transcript.sections[0].stdout == "x86_64\n"
