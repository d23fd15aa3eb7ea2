"""Shared helpers for the probe tests: fixture files and hand-built script transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterable, Optional

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"
NONCE = "0123456789abcdef"


def build_transcript(kind: str, sections: Iterable[Dict], done: bool = True, nonce: str = NONCE) -> str:
    """The text a probe script prints, written out in Python (the real script is tested separately).

    Each section is a dict with ``name`` and optional ``attrs``, ``stdout``, ``stderr``, ``rc``, ``tries``.
    """
    out = [f"@@ascendprep {kind} v1 {nonce}\n"]
    for section in sections:
        attrs = "".join(f" {key}={value}" for key, value in section.get("attrs", {}).items())
        out.append(f"@@{nonce} begin {section['name']}{attrs}\n")
        out.append(_ended(section.get("stdout", "")))
        out.append(f"@@{nonce} stderr\n")
        out.append(_ended(section.get("stderr", "")))
        out.append(f"@@{nonce} end rc={section.get('rc', 0)} tries={section.get('tries', 1)}\n")
    if done:
        out.append(f"@@{nonce} done\n")
    return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


@pytest.fixture
def fixture_text() -> Callable[[Optional[str]], str]:
    """fixture_text("hccn/ip_get.out") → its text; None → ""."""

    def read(name: Optional[str]) -> str:
        return (FIXTURES / name).read_text() if name else ""

    return read


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def transcript() -> Callable[..., str]:
    return build_transcript
