"""The npu-busy fault: simulated npu-smi lists a process on the faulted chip, as the real table
does, and ascendprep's parser reads it back; the other NPUs stay "No running processes"."""

from __future__ import annotations

import pytest

from ascendprep.facts.npu_procs import parse_process_table
from ascendprep.lab.sim import state
from ascendprep.lab.sim.npu_procs import busy_pid
from ascendprep.lab.sim.npu_smi import info_table


def test_a_busy_chip_gets_a_process_row_the_parser_reads(lab):
    state.set_fault(lab.state_dir, "node1", "npu-busy", npu=3)
    table = lab.npu_smi("node1", "info").stdout
    lines = table.splitlines()
    assert all(len(line) == 98 for line in lines)  # the row keeps the box's columns
    assert (
        f"| 3       0                 | {busy_pid(3)}       | python3                  | 37709                   |"
        in lines
    )
    parsed = parse_process_table(table)
    assert [(p.npu_id, p.chip, p.pid, p.name) for p in parsed.processes] == [(3, 0, busy_pid(3), "python3")]
    assert parsed.idle_npus == (0, 1, 2, 4, 5, 6, 7) and parsed.odd_rows == ()
    # Unlike: the other node, and the same node once healed, hold nothing.
    assert parse_process_table(lab.npu_smi("node2", "info").stdout).processes == ()
    state.clear_faults(lab.state_dir, "node1", "npu-busy")
    assert parse_process_table(lab.npu_smi("node1", "info").stdout).idle_npus == tuple(range(8))


@pytest.mark.parametrize("driver, width", [("24.1.rc2", 98), ("26.0.rc1", 116)])
def test_an_a3_die_is_busy_in_both_table_generations(driver, width):
    doc = state.new_node_document("atlas-a3", {"name": "n1", "npus": 16}, 0.0)
    doc["faults"] = [{"kind": "npu-busy", "npu": 5}]  # devid 5 = NPU 2, chip 1
    table = info_table(doc, driver)
    assert {len(line) for line in table.splitlines()} == {width}
    parsed = parse_process_table(table)
    assert [(p.npu_id, p.chip, p.pid) for p in parsed.processes] == [(2, 1, busy_pid(5))]
    assert 2 not in parsed.idle_npus and len(parsed.idle_npus) == 7
