"""The process table of the simulated ``npu-smi info``: a process per NPU under ``npu-busy``.

Real npu-smi lists, per NPU, a row per process that holds one of its chips, or ``No running
processes found in NPU N`` (docs/ascend-reference.md §4.1). The ``npu-busy`` lab fault stands for a training
process that did not exit: its devids get a ``python3`` row with a pid and HBM memory, laid out in
the columns of the node's npu-smi generation (four columns, or five with ``Process id in
container`` from npu-smi 26.x). Devids without the fault keep "No running processes".

Only stdlib imports: this module is on the start-up path of every simulated npu-smi call.
"""

from __future__ import annotations

from .state import faults_for

FAULT = "npu-busy"
#: The simulated process: pid = base + devid, so each busy chip names its own process.
BUSY_PID_BASE = 1333900
BUSY_NAME = "python3"
BUSY_MEMORY_MB = 37709


def _widths(header: str) -> list[int]:
    """Cell widths of a ``| a | b |`` header (between the bars)."""
    return [len(cell) for cell in header.strip()[1:-1].split("|")]


def busy_pid(devid: int) -> int:
    return BUSY_PID_BASE + devid


def process_rows(doc: dict, npu: int, devids: list[int], header: str, width: int) -> list[str]:
    """The rows of NPU ``npu`` (its chips are ``devids``): a process per busy chip, or the
    "No running processes" line."""
    widths = _widths(header)
    rows = []
    for chip, devid in enumerate(devids):
        if FAULT not in faults_for(doc, devid):
            continue
        values = [f"{npu:<8}{chip}", str(busy_pid(devid)), BUSY_NAME, str(BUSY_MEMORY_MB)]
        if len(widths) > 4:
            values.append(str(1000 + devid))  # pid inside its container
        rows.append("|" + "|".join((" " + value).ljust(w) for value, w in zip(values, widths)) + "|")
    return rows or ["|" + f" No running processes found in NPU {npu}".ljust(width) + "|"]
