"""Citations in the package resolve in the repository: ``docs/<file>.md §N`` names a file in
docs/ and a section it has, and nothing points at a path outside the checkout (a user's
installation, and a reader on GitHub, have only the repository and the public sources)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "ascendprep"
DOCS = REPO / "docs"
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".sh", ".md", ".txt", ".json", ".toml"}

#: ``docs/name.md`` (a folder between would be another repository's docs, as compat.yaml cites).
DOC_REFERENCE = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)\b")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
#: A citation without its file: "reference §3", "ascend-reference §1.4", "compat-notes.md §2".
BARE_CITATION = re.compile(r"(?<![\w/-])(?:(?:ascend-)?reference|compat-notes)(?:\.md)?\s*§")
#: How far before a § its document may be named: a docstring paragraph ("docs/x.md §4 (...),
#: §1.3 (...), §8"); the nearest file named before the § is the one it cites.
CITATION_REACH = 800


def package_texts():
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            yield path, path.read_text(encoding="utf-8")


def doc_sections(name: str) -> set:
    """Section numbers of a docs file: the ``1.4`` of ``### 1.4 Per-command syntax``."""
    text = (DOCS / name).read_text(encoding="utf-8")
    return set(re.findall(r"^#+\s+(\d+(?:\.\d+)*)\.?\s", text, re.MULTILINE))


def where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(REPO)}:{text.count(chr(10), 0, offset) + 1}"


def shipped_texts():
    """The package, plus what a reader of the repository meets first: README, docs/, inventories/."""
    yield from package_texts()
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md")), *sorted((REPO / "inventories").glob("*"))]:
        if path.is_file():
            yield path, path.read_text(encoding="utf-8")


def test_nothing_points_outside_the_repository():
    found = [
        where(path, text, m.start()) + ": " + m.group(0)
        for path, text in shipped_texts()
        for m in re.finditer(r"/work/shared\S*|\bseeds/\d+\S*", text)
    ]
    assert found == []


def test_cited_docs_exist():
    missing = [
        where(path, text, m.start()) + f": docs/{m.group(1)}"
        for path, text in package_texts()
        for m in DOC_REFERENCE.finditer(text)
        if not (DOCS / m.group(1)).is_file()
    ]
    assert missing == []


def test_every_section_cited_names_its_file_and_exists_there():
    problems = []
    sections = {}
    for path, text in package_texts():
        for m in BARE_CITATION.finditer(text):
            problems.append(f"{where(path, text, m.start())}: '{m.group(0)}' does not say which docs/ file")
        for m in SECTION.finditer(text):
            named = list(DOC_REFERENCE.finditer(text, max(0, m.start() - CITATION_REACH), m.start()))
            if not named:
                problems.append(f"{where(path, text, m.start())}: §{m.group(1)} cites no docs/ file before it")
                continue
            name = named[-1].group(1)
            if (DOCS / name).is_file():
                sections.setdefault(name, doc_sections(name))
                if m.group(1) not in sections[name]:
                    problems.append(f"{where(path, text, m.start())}: docs/{name} has no §{m.group(1)}")
    assert problems == []


def test_the_checker_sees_a_bad_citation(tmp_path):
    """The patterns above catch what they are for (a test that cannot fail proves nothing)."""
    assert BARE_CITATION.search("(ascend-reference §1.4)") and BARE_CITATION.search("(reference §2)")
    assert not BARE_CITATION.search("(docs/ascend-reference.md §2)")
    assert DOC_REFERENCE.search("see docs/ascend-reference.md §6").group(1) == "ascend-reference.md"
    assert not DOC_REFERENCE.search("path: docs/zh/release_notes.md")
    assert "1.4" in doc_sections("ascend-reference.md") and "2" in doc_sections("compat-notes.md")
    assert "12" not in doc_sections("ascend-reference.md")
