"""What every compatibility check works from: the issue type, the parsed stack, shared look-ups.

``StackContext`` is built once per ``check_stack`` call; the checks in ``torch_checks`` and
``hdk_checks`` are plain functions ``StackContext -> list[CompatIssue]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ascendprep.compat.data import CannHdkRow, CompatData, DriverFirmware, TorchNpuRelease, TorchvisionLine
from ascendprep.compat.versions import Version, base_release, parse_version

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class CompatIssue:
    """One verdict about the stack: what, how bad, how to fix it, and which sources say so.

    ``sources`` are ids from compat.yaml's ``sources``; empty when no source covers the
    combination at all (the issue is then about missing data).
    """

    id: str
    severity: str
    message: str
    fix: str
    sources: Tuple[str, ...]

    def to_dict(self) -> Dict[str, object]:
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "sources": list(self.sources),
        }


def listing(values: Iterable[object]) -> str:
    """``a, b, c`` without repeats, in the data's order; ``none`` when empty."""
    seen: List[str] = []
    for value in values:
        if str(value) not in seen:
            seen.append(str(value))
    return ", ".join(seen) if seen else "none"


def python_listing(minors: Sequence[str]) -> str:
    """``3.8-3.11`` for a run of Python minors (the data lists them contiguously)."""
    if len(minors) > 2:
        return f"{minors[0]}-{minors[-1]}"
    return listing(minors)


def older_than(version: Version, entry: Version) -> bool:
    """``version`` predates ``entry``; a wildcard entry starts at the beginning of its line."""
    if entry.is_wildcard:
        return version.line < entry.line
    return version < entry


def _rank(row: TorchNpuRelease) -> Tuple[int, Version]:
    """Sort key for suggesting a release: supported before EOL, then the newest wheel."""
    return ({"release": 2, "eol": 1}.get(row.status, 0), row.torch_npu)


class StackContext:
    """The parsed stack, its torch_npu row (if documented) and the data, with shared look-ups."""

    def __init__(
        self,
        data: CompatData,
        stack: Mapping[str, Version],
        release: Optional[TorchNpuRelease],
        chip: Optional[str],
        today: date,
    ) -> None:
        self.data = data
        self.stack = stack
        self.release = release
        self.chip = chip.lower() if chip else None
        self.today = today

    def suggest(self, **wanted: Version) -> Optional[TorchNpuRelease]:
        """The best non-prerelease torch_npu row matching every given torch/cann/python."""
        candidates = []
        for row in self.data.torch_npu_releases:
            if row.status == "prerelease":
                continue
            if "torch" in wanted and row.torch != wanted["torch"]:
                continue
            if "cann" in wanted and not any(v.covers(wanted["cann"]) for v in row.all_cann):
                continue
            if "python" in wanted and wanted["python"].minor not in row.python:
                continue
            candidates.append(row)
        return max(candidates, key=_rank) if candidates else None

    def torch_for_lines(self) -> Optional[Version]:
        """The torch whose line matters: the installed one, else the one torch_npu needs."""
        if "torch" in self.stack:
            return self.stack["torch"]
        if self.release is not None:
            return self.release.torch
        if "torch_npu" in self.stack:
            return parse_version("torch", base_release(self.stack["torch_npu"]))
        return None

    def python_for_torch_line(self, torch: Version) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        """Python minors COMPATIBILITY.md lists for torch's X.Y.Z line, with that table's sources."""
        for line_torch, minors in self.data.python_by_torch:
            if line_torch == parse_version("torch", base_release(torch)):
                return minors, self.data.python_by_torch_sources
        return (), ()

    def torchvision_line(self, torch: Version) -> Optional[TorchvisionLine]:
        """The torchvision table row for torch's MAJOR.MINOR line."""
        for line in self.data.torchvision_by_torch:
            if line.torch_minor == torch.minor:
                return line
        return None

    def maintained_line_fix(self) -> str:
        """Point at the newest maintained long-term-support line, else the newest maintained one."""
        maintained = [
            p
            for p in self.data.pytorch_line_policy
            if p.status != "eol" and (p.no_maintenance_from is None or self.today < p.no_maintenance_from)
        ]
        if not maintained:
            return "move to a PyTorch line that Ascend still maintains"
        best = max(maintained, key=lambda p: (p.policy == "long_term_support", p.torch))
        kind = "long-term support" if best.policy == "long_term_support" else "maintained"
        return f"move to a maintained PyTorch line, e.g. torch {best.torch} ({kind})"

    def hdk_row(self, cann: Version) -> Optional[CannHdkRow]:
        """The cann_hdk row of this CANN, else of the release it is a hotfix or community edition of."""
        exact = [row for row in self.data.cann_hdk if row.cann == cann]
        if exact:
            return exact[0]
        covering = [row for row in self.data.cann_hdk if row.cann.covers(cann)]
        return covering[0] if covering else None

    def pages(self, row: CannHdkRow) -> List[Tuple[str, DriverFirmware]]:
        """The row's docs-install-page entries, narrowed to the chip when one was given."""
        return [(chip, page) for chip, page in row.docs_install_page if self.chip is None or chip == self.chip]
