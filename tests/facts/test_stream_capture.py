"""The per-call capture of the probe scripts (``ap_run``), run for real under dash and bash.

Each stream goes through one ``tee`` whose file ``ulimit -f`` bounds in the reader (format v2:
the script ends each stream with a newline of its own, the parser removes it). These tests pin
the edges that the cheaper capture must keep: exactly the cap is whole and one byte more is cut
(also at a cap that is no multiple of the 512-byte ``ulimit`` block), a cut stream keeps the
tool's own exit status and stderr, odd last bytes (none, a NUL, blank lines) come back as before,
and a host without ``tee`` (the unlike variant) gives the same sections through ``head`` and
``cat``.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.base import limits
from ascendprep.facts.sections import FORMAT_VERSION, Section, parse_transcript
from ascendprep.facts.shell import main_block, preamble

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]
NONCE = "0123456789abcdef"
CAP = 1000  # no multiple of 512: the ulimit file holds more than the cap, the measure decides


def _script(calls: list[str], cap: int = CAP) -> str:
    body = "".join(f"ap_run call{i} '' {call}\n" for i, call in enumerate(calls))
    return preamble("gather", NONCE, 20, 0, "/usr/local/Ascend", output_cap=cap, parallel=1) + main_block(body)


def _without_tee(tmp_path: Path) -> dict:
    """PATH with every tool the script uses except tee."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("sh", "timeout", "mktemp", "head", "wc", "cat", "rm", "printf", "yes", "sleep", "sha256sum"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    return {"PATH": str(tools)}


def _run(shell: str, script: str, env: dict | None = None) -> list[Section]:
    result = run_node_script(
        [shutil.which(shell), "-s"], input=script.encode(), capture_output=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("utf-8", "surrogateescape")
    assert text.startswith(f"@@ascendprep gather v{FORMAT_VERSION} {NONCE}\n")
    transcript = parse_transcript(text, "gather")
    assert transcript.complete, transcript.problem
    return list(transcript.sections)


# (shell command, stdout the parser gives, stderr, exit status)
EDGES = [
    ("printf ''", "", "", 0),
    ("printf 'abc'", "abc\n", "", 0),  # no last newline: one is added, as format v1 did
    ("printf 'abc\\n'", "abc\n", "", 0),
    ("printf 'abc\\n\\n\\n'", "abc\n\n\n", "", 0),  # blank lines at the end are kept
    ("printf '\\n'", "\n", "", 0),
    ("printf 'x\\000'", "x\0\n", "", 0),  # a NUL last does not swallow the next marker
    ("sh -c 'printf out; printf err >&2; exit 7'", "out\n", "err\n", 7),
    ("sh -c 'printf \"e\\n\\n\" >&2; exit 3'", "", "e\n\n", 3),
]


@pytest.mark.parametrize("tee", [True, False], ids=["tee", "no-tee"])
@pytest.mark.parametrize("shell", SHELLS)
def test_streams_come_back_exactly(tmp_path, shell, tee):
    sections = _run(shell, _script([command for command, *_ in EDGES]), None if tee else _without_tee(tmp_path))
    assert [(s.stdout, s.stderr, s.rc, s.tries) for s in sections] == [(out, err, rc, 1) for _, out, err, rc in EDGES]
    assert all("over" not in s.attrs for s in sections)


@pytest.mark.parametrize("tee", [True, False], ids=["tee", "no-tee"])
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("cap", [CAP, 1024])
def test_the_cap_is_exact_and_a_cut_keeps_the_tools_status(tmp_path, shell, tee, cap):
    calls = [
        f"head -c {cap} /dev/zero",  # exactly the cap: whole
        f"head -c {cap + 1} /dev/zero",  # one byte more: cut
        f"sh -c 'head -c {cap} /dev/zero >&2'",
        f"sh -c 'head -c {cap + 1} /dev/zero >&2'",
        # a flood on both streams, far past the ulimit file: drained, not killed, its status its own
        "sh -c 'yes flood | head -c 3000000; yes err | head -c 200000 >&2; exit 5'",
    ]
    exact, over, exact_err, over_err, flood = _run(shell, _script(calls, cap), None if tee else _without_tee(tmp_path))
    excerpt = min(cap, limits.REMOTE_CUT_EXCERPT)
    assert "over" not in exact.attrs and exact.stdout == "\0" * cap + "\n" and exact.rc == 0
    assert (over.attrs["over"], over.attrs["cap"]) == ("stdout", str(cap))
    assert over.stdout == "\0" * excerpt + "\n" and over.rc == 0
    assert "over" not in exact_err.attrs and exact_err.stderr == "\0" * cap + "\n"
    assert over_err.attrs["over"] == "stderr" and over_err.stderr == "\0" * excerpt + "\n"
    assert (flood.attrs["over"], flood.rc) == ("stdout+stderr", 5)
    assert flood.stdout == _ended(("flood\n" * excerpt)[:excerpt]) and flood.stderr == _ended(
        ("err\n" * excerpt)[:excerpt]
    )


def test_a_shell_that_cannot_set_the_limit_falls_back_to_head_and_cat(tmp_path):
    """A hard file-size limit under the reader's: ``ulimit -S -f`` fails, head cuts and cat
    drains, so the script still ends and the other calls are read as usual. (Under such a limit
    a file holds less than the cap, as with the head-only capture before: a stream cut there
    is not told apart from a short one.)"""
    script = _script(["sh -c 'yes flood | head -c 3000000; exit 5'", "printf 'abc\\n'"], cap=4096)
    hard = "ulimit -f 4; exec dash -s"  # 2 KB: below the reader's 4 KB and more
    result = subprocess.run(["dash", "-c", hard], input=script.encode(), capture_output=True, timeout=60)
    transcript = parse_transcript(result.stdout.decode(), "gather")
    assert transcript.complete, (transcript.problem, result.stderr)
    flood, fine = transcript.sections
    assert flood.rc == 5 and len(flood.stdout) <= 2048 + 1
    assert (fine.stdout, fine.rc) == ("abc\n", 0) and "over" not in fine.attrs


def _v2(sections: list[tuple[str, str, str]], nonce: str = NONCE) -> str:
    """A v2 transcript written out in Python: each stream, then the script's own newline."""
    m = f"@@{nonce} "
    out = [f"@@ascendprep gather v2 {nonce}\n"]
    for name, stdout, stderr in sections:
        out.append(f"{m}begin {name}\n{stdout}\n{m}stderr\n{stderr}\n{m}end rc=0 tries=1\n")
    out.append(f"{m}done\n")
    return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def test_v2_streams_read_back_as_written_with_a_newline_at_most_added():
    rng = random.Random(7)
    alphabet = ["a", "\n", "\0", " ", "@@", "\x1b[2J", "ü"]
    for _ in range(2000):
        sections = [
            (
                f"s{i}",
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))),
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))),
            )
            for i in range(rng.randint(0, 4))
        ]
        transcript = parse_transcript(_v2(sections), "gather")
        assert transcript.complete
        assert [(s.name, s.stdout, s.stderr) for s in transcript.sections] == [
            (n, _ended(o), _ended(e)) for n, o, e in sections
        ], sections


def test_v1_and_v2_give_the_same_sections_for_what_v1_could_tell_apart():
    v1 = "@@ascendprep gather v1 {n}\n@@{n} begin a\nx\n@@{n} stderr\n@@{n} end rc=0 tries=1\n@@{n} begin b\n@@{n} stderr\ne\n@@{n} end rc=0 tries=1\n@@{n} done\n".format(
        n=NONCE
    )
    v2 = _v2([("a", "x", ""), ("b", "", "e\n")])
    assert parse_transcript(v1, "gather") == parse_transcript(v2, "gather")


def test_v2_output_cut_inside_a_stream_keeps_what_came():
    text = _v2([("a", "x\n", "")]).split(f"@@{NONCE} stderr")[0][:-1]  # stopped before the stream's newline
    transcript = parse_transcript(text, "gather")
    assert transcript.problem == "output stopped inside section 'a'"
    assert transcript.sections[0].stdout == "x\n"


@pytest.mark.parametrize("tee", [True, False], ids=["tee", "no-tee"])
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("cap", [CAP, 1024])
def test_file_reads_are_cut_at_the_cap_and_end_there(tmp_path, shell, tee, cap):
    """cat and sha256sum of a file (the host sections): where the limit can be set they write
    straight into the capture files; a file past the cap, even an endless one, is cut there."""
    (tmp_path / "exact").write_bytes(b"x" * cap)
    (tmp_path / "over").write_bytes(b"y" * (cap + 1))
    calls = [
        f"cat {tmp_path}/exact",
        f"cat {tmp_path}/over",
        f"cat {tmp_path}/missing",
        "cat /dev/zero",
        f"sha256sum {tmp_path}/over",
    ]
    exact, over, missing, endless, digest = _run(shell, _script(calls, cap), None if tee else _without_tee(tmp_path))
    excerpt = min(cap, limits.REMOTE_CUT_EXCERPT)
    assert (exact.stdout, exact.rc, exact.attrs) == ("x" * cap + "\n", 0, {})
    assert over.attrs["over"] == "stdout" and over.stdout == "y" * excerpt + "\n"
    assert missing.rc == 1 and "over" not in missing.attrs and missing.stdout == ""
    assert missing.stderr.startswith("cat: ") and "No such file or directory" in missing.stderr
    assert endless.attrs["over"] == "stdout" and endless.stdout == "\0" * excerpt + "\n"
    assert digest.rc == 0 and digest.stdout.split()[0] == __import__("hashlib").sha256(b"y" * (cap + 1)).hexdigest()
