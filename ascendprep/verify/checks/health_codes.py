"""What an NPU health event code means and what to do about it (``data/health_codes.yaml``).

``npu-smi info -t health`` lists the codes of the events it holds against a chip (``Error Code :
A4025021 8C03A000``: bare upper-case hex; a code the driver cannot describe is printed in
decimal, docs/ascend-reference.md §4.7). Each is looked up in the vendor's fault levels (MindCluster device
plugin ``faultCode.json``: not handled, restart the request, restart the job, reset the NPU,
isolate it, sub-health, ...). A code the table does not list, or a word that is no code at all, is
shown as unknown, never dropped, and counts as an error: nothing says it is harmless.

Pure: the table is read once from the package; decoding is text in, meanings out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from ascendprep.base.findings import Severity

DATA_PACKAGE = "ascendprep"
DATA_PATH = "data/health_codes.yaml"

#: The vendor's levels from the least to the most severe; the worst code of a chip decides.
LEVEL_ORDER = (
    "NotHandle",
    "SubHealth",
    "RestartRequest",
    "RestartBusiness",
    "FreeRestartNPU",
    "RestartNPU",
    "PreSeparateNPU",
    "SeparateNPU",
)
UNKNOWN = "unknown"
#: Codes one health answer may carry that are decoded (the rest are named as not decoded).
MAX_CODES = 32

_HEX_RE = re.compile(r"^(?:0[xX])?([0-9A-Fa-f]{1,16})$")


class HealthCodesError(ValueError):
    """health_codes.yaml is malformed (a packaging bug)."""


@dataclass(frozen=True)
class Level:
    name: str
    severity: Severity
    action: str


@dataclass(frozen=True)
class CodeMeaning:
    """One code as printed, its hex form, and the vendor's level for it (``unknown`` when none)."""

    printed: str
    code: Optional[str]
    level: str
    severity: Severity
    action: str
    cause: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"code": self.code or self.printed, "level": self.level, "action": self.action}
        if self.printed != self.code:
            data["printed"] = self.printed
        if self.cause:
            data["cause"] = self.cause
        return data


@dataclass(frozen=True)
class CodeTable:
    levels: Dict[str, Level]
    codes: Dict[str, Tuple[str, Optional[str]]]  # hex code -> (level, cause)


def parse_table(text: str, origin: str = DATA_PATH) -> CodeTable:
    """Validate the data file's text; HealthCodesError names the entry that is wrong."""
    raw = yaml.safe_load(text)
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        raise HealthCodesError(f"{origin}: expected a mapping with schema_version: 1")
    levels: Dict[str, Level] = {}
    for name in LEVEL_ORDER:
        entry = (raw.get("levels") or {}).get(name)
        if (
            not isinstance(entry, dict)
            or entry.get("severity") not in ("error", "warning", "info")
            or not isinstance(entry.get("action"), str)
        ):
            raise HealthCodesError(f"{origin}: levels.{name}: needs severity (error|warning|info) and action")
        levels[name] = Level(name, Severity(entry["severity"]), entry["action"])
    codes: Dict[str, Tuple[str, Optional[str]]] = {}
    for code, entry in (raw.get("codes") or {}).items():
        if not isinstance(code, str) or not re.fullmatch(r"[0-9A-F]{1,16}", code):
            raise HealthCodesError(f"{origin}: codes: {code!r} is not upper-case hex without 0x")
        if not isinstance(entry, dict) or entry.get("level") not in levels:
            raise HealthCodesError(f"{origin}: codes.{code}: level must be one of {', '.join(LEVEL_ORDER)}")
        cause = entry.get("cause")
        codes[code] = (entry["level"], cause if isinstance(cause, str) else None)
    if not codes:
        raise HealthCodesError(f"{origin}: codes: empty")
    return CodeTable(levels, codes)


@functools.lru_cache(maxsize=1)
def table() -> CodeTable:
    text = resources.files(DATA_PACKAGE).joinpath(DATA_PATH).read_text(encoding="utf-8")
    return parse_table(text, f"{DATA_PACKAGE}/{DATA_PATH}")


def hex_form(word: str) -> Optional[str]:
    """The table key of a printed code: hex as printed (``8C03A000``), or a decimal code (the
    driver's form for codes it cannot describe: 10 digits for the 0x4... to 0xF... codes) in hex."""
    codes = table().codes
    upper = word.upper().removeprefix("0X")
    if upper in codes:
        return upper
    if word.isdigit() and len(word) != 8 and len(word) <= 20:
        return format(int(word), "X")
    match = _HEX_RE.match(word)
    return match.group(1).upper() if match else None


def decode(error_code: Optional[str], npu: object = "<npu>", chip: object = "<chip>") -> List[CodeMeaning]:
    """Every word of an ``Error Code`` field, in order, with its level and action (or unknown)."""
    if not error_code:
        return []
    known = table()
    meanings: List[CodeMeaning] = []
    words = error_code.split()
    for word in words[:MAX_CODES]:
        code = hex_form(word)
        entry = known.codes.get(code) if code else None
        if entry is None:
            what = "a code" if code else "not a hex or decimal code"
            meanings.append(
                CodeMeaning(
                    word,
                    code,
                    UNKNOWN,
                    Severity.ERROR,
                    f"unknown: {what} that the vendor's fault table (faultCode.json) does not list; read the device log (msnpureport) or ask the vendor",
                )
            )
            continue
        level = known.levels[entry[0]]
        meanings.append(
            CodeMeaning(word, code, level.name, level.severity, level.action.format(npu=npu, chip=chip), entry[1])
        )
    if len(words) > MAX_CODES:
        meanings.append(
            CodeMeaning(
                f"(+{len(words) - MAX_CODES} more)",
                None,
                UNKNOWN,
                Severity.ERROR,
                "not decoded: more codes than ascendprep reads",
            )
        )
    return meanings


_RANK = {name: index for index, name in enumerate(LEVEL_ORDER)}


def worst(meanings: Sequence[CodeMeaning]) -> Optional[CodeMeaning]:
    """The code that decides: an unknown one first, else the most severe level."""
    if not meanings:
        return None
    return max(meanings, key=lambda m: len(LEVEL_ORDER) if m.level == UNKNOWN else _RANK[m.level])


def severity_of(health: str, meanings: Sequence[CodeMeaning]) -> Severity:
    """How bad a not-OK health is: ``Critical``, no code, or an unknown code is an error; else the
    worst level's severity (a warning for the levels that leave the NPU in service)."""
    decider = worst(meanings)
    if health.strip().lower() == "critical" or decider is None:
        return Severity.ERROR
    return decider.severity


def summary(meanings: Sequence[CodeMeaning]) -> str:
    """``80E18402 SeparateNPU (The total number ...), 12345678 unknown`` for a message."""
    parts = []
    for meaning in meanings:
        cause = f" ({meaning.cause})" if meaning.cause else ""
        parts.append(f"{meaning.code or meaning.printed} {meaning.level}{cause}")
    return ", ".join(parts)
