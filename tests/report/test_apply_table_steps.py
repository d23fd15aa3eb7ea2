"""apply's text at scale: results read like plan's changes, NPU-stepped addresses included."""

from __future__ import annotations

from rich.console import Console

from ascendprep.base.hostrange import expand
from ascendprep.plan.changes import SetNpuAddress
from ascendprep.report.changes import apply_table

OK = "Cmd executed successfully!"


def _text(renderable) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(renderable)
    return console.export_text()


def _rows(hosts: int) -> list:
    rows = []
    for i in range(hosts):
        node = f"node{i + 1:02d}"
        rows += [
            (
                node,
                SetNpuAddress(node, {"device": None, "file": None}, npu, f"10.20.0.{8 * i + npu + 1}", "255.255.0.0"),
                0,
                OK,
            )
            for npu in range(8)
        ]
    return rows


def test_addresses_in_step_across_npus_and_hosts_are_one_row_that_expands_back_to_every_value() -> None:
    lines = [line for line in _text(apply_table(_rows(16))).splitlines() if "node" in line]
    assert len(lines) == 1, lines
    [row] = lines
    assert (
        "node[01-16]" in row and "npu[0-7]: ip none → 10.20.0.[1-128]/255.255.0.0" in row and "ok" in row and OK in row
    )
    values = expand("10.20.0.[1-128]")
    assert values[0] == "10.20.0.1" and values[-1] == "10.20.0.128" and len(values) == 128


def test_a_failed_npu_keeps_its_own_row_with_its_value_and_message() -> None:
    """The unlike case: a different result breaks the step; nothing of it hides behind a range."""
    rows = _rows(4)
    host, change, _, _ = rows[8 * 2 + 5]  # node03, NPU 5: 10.20.0.22
    rows[8 * 2 + 5] = (host, change, 1, "hccn_tool is busy")
    lines = [line for line in _text(apply_table(rows)).splitlines() if "node" in line]
    failed = [line for line in lines if "failed (rc 1)" in line]
    assert len(failed) == 1 and "node03" in failed[0] and "npu 5: ip none → 10.20.0.22/255.255.0.0" in failed[0]
    assert "hccn_tool is busy" in failed[0]
    assert not any("10.20.0.22" in line for line in lines if line not in failed)
