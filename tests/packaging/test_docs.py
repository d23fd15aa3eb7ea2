"""The documentation stays true to the code and to itself.

- the generated reference pages (docs/commands.md, inventory.md, checks.md, limits.md) are what
  ``python scripts/gendocs.py`` makes from the code now;
- README.md quotes the captured output in docs/output/ exactly, and (lab) that output is what the
  commands print now;
- every relative link of README.md, docs/*.md and bench/README.md reaches a file, and a heading
  where it names one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "docs" / "output"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]


def _gendocs():
    spec = importlib.util.spec_from_file_location("gendocs", REPO / "scripts" / "gendocs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_pages_are_up_to_date() -> None:
    gendocs = _gendocs()
    stale = [
        path
        for path, text in gendocs.generate().items()
        if not (REPO / path).exists() or (REPO / path).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"{', '.join(stale)} out of date: run `{gendocs.COMMAND}` and commit the result"


def _fenced_blocks(text: str) -> list[str]:
    return [match.group(1) for match in re.finditer(r"^```[a-z]*\n(.*?)\n```$", text, re.MULTILINE | re.DOTALL)]


def test_the_readme_quotes_the_captured_output() -> None:
    blocks = _fenced_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    captured = sorted(OUTPUT.iterdir())
    assert {path.name for path in captured} >= {"inventory.yaml", "plan.txt", "apply.txt", "verify.txt"}
    for path in captured:
        assert path.read_text(encoding="utf-8").rstrip("\n") in blocks, (
            f"README.md does not quote {path.relative_to(REPO)} as one fenced block: run "
            "python scripts/quote_output_in_readme.py"
        )


# --- links ------------------------------------------------------------------------------------


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = _anchor(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m.group(1))]


def test_every_relative_link_reaches_a_file_and_heading() -> None:
    broken = []
    for page in PAGES:
        for link in _links(page):
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {link}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {link}: no such heading")
    assert not broken, "\n".join(broken)


def test_the_link_check_sees_links_and_anchors() -> None:
    assert _anchor("The all-reduce: `--allreduce`") == "the-all-reduce---allreduce"
    assert _anchor("Exit codes (every command)") == "exit-codes-every-command"
    assert _links(REPO / "README.md"), "README.md has no relative link the check can see"


# --- the captured output against the lab --------------------------------------------------------


def _normalised(text: str) -> str:
    """What may differ between two captures: times in names, the lab's addresses, the interpreter."""
    text = re.sub(r"\d{8}T\d{6,12}Z", "<time>", text)
    text = re.sub(r"python_path: \S+", "python_path: <python>", text)
    return re.sub(r"\b10\.\d+\.\d+\.(\[\d+-\d+\]|\d+)\b", "<address>", text)


@pytest.mark.lab
def test_the_captured_output_is_what_the_commands_print_now(tmp_path: Path) -> None:
    from labsupport import require_lab_host

    require_lab_host()
    env = {**os.environ, "OUT": str(tmp_path), "LAB": "readmetest", "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "capture-readme-output.sh")],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for path in sorted(OUTPUT.iterdir()):
        fresh = (tmp_path / path.name).read_text(encoding="utf-8")
        assert _normalised(fresh) == _normalised(path.read_text(encoding="utf-8")), (
            f"{path.relative_to(REPO)} is out of date: run scripts/capture-readme-output.sh as root "
            "(it also puts the new blocks into README.md)"
        )
