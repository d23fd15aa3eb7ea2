"""Plan files and apply journals are written compact by json's C encoder and read back whole.

``indent`` runs the pure-Python encoder (~5x the CPU): ~1 ms per host for a plan, and a journal
is rewritten three times per apply. ``jq .`` shows either indented.
"""

from __future__ import annotations

import json
from pathlib import Path

from ascendprep.apply.journal import ApplyJournal
from ascendprep.plan.changes import SetNpuAddress, SetSysctl
from ascendprep.plan.planfile import PlanFile, SavedHost, read_plan, write_plan


def _plan(tmp_path: Path) -> PlanFile:
    hosts = []
    for i in range(1, 5):
        node = f"node{i}"
        changes = [
            SetNpuAddress(node, {"device": None, "file": None}, npu, f"10.20.0.{8 * i + npu}", "255.255.255.0")
            for npu in range(8)
        ]
        changes.append(SetSysctl(node, "4096", "net.core.somaxconn", "65535"))
        hosts.append(SavedHost(node, f"10.0.0.{i}", True, changes))
    hosts.append(SavedHost("node5", "10.0.0.5", False, [], error="node5: connection refused"))
    return PlanFile(str(tmp_path / "inventory.yaml"), "0" * 64, "t", "2026-11-25T00:00:00+00:00", hosts)


def test_a_plan_file_is_one_line_of_json_that_reads_back_to_the_same_plan(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    path = tmp_path / "plan.json"
    write_plan(plan, path)
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == 1 and ", " not in text and '": ' not in text
    assert json.loads(text) == plan.to_dict()
    assert read_plan(path) == plan
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_apply_journal_is_one_line_of_json_at_every_stage(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    journal = ApplyJournal(tmp_path / "plan.json", "t")
    journal.intend({h.node: h.changes for h in plan.hosts}, {})
    for stage in ("applying", "finished"):
        if stage == "finished":
            journal.finish("finished")
        text = journal.path.read_text()
        assert text.count("\n") == 1 and '": ' not in text
        record = json.loads(text)
        assert record["status"] == stage and [h["node"] for h in record["hosts"]] == [
            "node1",
            "node2",
            "node3",
            "node4",
        ]
