"""The process table at the end of ``npu-smi info``: which process holds which NPU.

Why: a training process that did not exit (or one of another user) keeps its NPU, and the next
job dies in HCCL start-up with ``EJ0001: Failed to initialize the HCCP process. Reason: Maybe
the last training process is running`` (Ascend's own words; LLaMA-Factory issue 3839). The table
(docs/ascend-reference.md §4.1) follows the NPU rows::

    | NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
    +===========================+===============+====================================================+
    | No running processes found in NPU 0                                                            |
    | 2       0                 | 1333928       |                          | 37709                   |
    | 0       0                 | 784778        | VLLMWorker_DP            | 30112                   |

npu-smi 26.x adds a fifth column, ``Process id in container``. The Ascend 950 tool's table is card
level: its first column is ``NPU ID`` alone (hicann/driver ``docs/en/Ascend_950_npu-smi``,
querying-basic-information.md), read as chip 0 of that NPU; that page shows only the idle line, so
a 950 process row is read in the 910 row's layout less the chip. The name is empty for a process
npu-smi cannot name (another PID namespace: a container). A row that is neither a process nor
"No running processes" is kept as an odd row, never guessed at; a name holding ``|`` spans
several cells and is put back together from the header's column count.
"""

from __future__ import annotations

import re
from typing import List, Optional

from ascendprep.base.limits import MAX_NPU_PROCESS_ROWS
from ascendprep.facts.blocker_model import NpuProcess, NpuProcessTable
from ascendprep.facts.text import UnexpectedOutput, not_as_expected

_IDLE_RE = re.compile(r"^No running processes found in NPU\s+(\d{1,4})$")
_NPU_CHIP_RE = re.compile(r"^(\d{1,4})\s+(\d{1,4})$")
_NPU_ONLY_RE = re.compile(r"^(\d{1,4})()$")


def _cells(line: str) -> List[str]:
    """``| a | b |`` → ``["a", "b"]`` (the outer bars dropped, every cell stripped)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [cell.strip() for cell in inner.split("|")]


def _memory(text: str) -> Optional[int]:
    return int(text) if text.isdigit() and len(text) <= 9 else None


def parse_process_table(stdout: str) -> NpuProcessTable:
    """The process table of ``npu-smi info``; UnexpectedOutput when the output has none."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if "Process id" in line and "Process name" in line), None)
    if start is None:
        raise not_as_expected(
            "the process table of 'npu-smi info' ('| NPU  Chip | Process id | Process name | ...')", stdout
        )
    header = _cells(lines[start])
    columns = len(header)
    # a first column of "NPU ID" without "Chip": the card-level table of Ascend 950
    where_re = _NPU_ONLY_RE if header[0] == "NPU ID" else _NPU_CHIP_RE
    processes: List[NpuProcess] = []
    idle: List[int] = []
    odd: List[str] = []
    for raw in lines[start + 1 :]:
        line = raw.strip()
        if not line or line.startswith("+"):
            continue
        if len(processes) + len(idle) + len(odd) >= MAX_NPU_PROCESS_ROWS:
            raise UnexpectedOutput(f"more than {MAX_NPU_PROCESS_ROWS} rows in the process table")
        if not line.startswith("|"):
            odd.append(raw.rstrip())
            continue
        cells = _cells(line)
        idle_match = _IDLE_RE.match(" ".join(cells[0].split())) if len(cells) == 1 else None
        if idle_match:
            idle.append(int(idle_match.group(1)))
            continue
        process = _process_row(cells, columns, where_re)
        if process is None:
            odd.append(raw.rstrip())
        else:
            processes.append(process)
    return NpuProcessTable(tuple(processes), tuple(dict.fromkeys(idle)), tuple(odd))


def _process_row(cells: List[str], columns: int, where_re: "re.Pattern[str]") -> Optional[NpuProcess]:
    """A process row, or None when the row is not one. Extra cells belong to the name."""
    if columns < 4 or len(cells) < columns:
        return None
    extra = len(cells) - columns
    where = where_re.match(cells[0])
    pid = cells[1]
    if where is None or not pid.isdigit() or len(pid) > 10:
        return None
    name = "|".join(cells[2 : 3 + extra]).strip()
    memory = cells[3 + extra]
    if not (memory.isdigit() or memory.upper() in ("NA", "N/A", "-")):
        return None
    return NpuProcess(
        npu_id=int(where.group(1)), chip=int(where.group(2) or 0), pid=int(pid), name=name, memory_mb=_memory(memory)
    )
