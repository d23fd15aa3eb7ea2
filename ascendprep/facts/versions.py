"""Driver, firmware and CANN version/install files (docs/ascend-reference.md §4.6).

``driver/version.info`` and ``firmware/version.info`` use ``Version=``; the toolkit and nnae
``*_install.info`` files use lower-case ``version=``; the newer ``cann[-<ver>]`` layouts carry
``share/info/runtime/version.info`` with ``Version=``. All are plain ``key=value`` lines.
"""

from __future__ import annotations

from ascendprep.facts.model import VersionFile
from ascendprep.facts.text import UnexpectedOutput, first_line, key_value_file


def parse_version_file(path: str, text: str) -> VersionFile:
    """Every ``key=value`` of the file; a file without any is not a version file."""
    values = key_value_file(text)
    if not values:
        raise UnexpectedOutput(f"{path} holds no key=value lines (starts {first_line(text)!r})")
    return VersionFile(path=path, values=values)
