"""Put the output captured in docs/output/ into README.md's walkthrough, in place.

Each file there replaces the fenced block of README.md that starts with the same first line
(``$ ascendprep plan cluster.yaml``, ``name: a2-lab``, ...), so the README quotes what the
commands print now; tests/packaging/test_docs.py holds the two equal. Run by
scripts/capture-readme-output.sh after a capture into docs/output/.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```[a-z]*\n)(.*?)(\n```)$", re.MULTILINE | re.DOTALL)


def quote(readme: str, captured: dict[str, str]) -> str:
    """``readme`` with every block whose first line a captured file shares replaced by that file."""
    by_first_line = {text.splitlines()[0]: text.rstrip("\n") for text in captured.values() if text.strip()}
    missing = set(by_first_line)

    def replace(match: re.Match[str]) -> str:
        first = match.group(2).splitlines()[0] if match.group(2) else ""
        if first not in by_first_line:
            return match.group(0)
        missing.discard(first)
        return match.group(1) + by_first_line[first] + match.group(3)

    updated = FENCE.sub(replace, readme)
    if missing:
        raise SystemExit(f"README.md has no block starting with: {', '.join(sorted(missing))}")
    return updated


def main() -> None:
    output = REPO / "docs" / "output"
    captured = {path.name: path.read_text(encoding="utf-8") for path in sorted(output.iterdir())}
    readme = REPO / "README.md"
    updated = quote(readme.read_text(encoding="utf-8"), captured)
    readme.write_text(updated, encoding="utf-8")
    print(f"README.md quotes {len(captured)} captured files", file=sys.stderr)


if __name__ == "__main__":
    main()
