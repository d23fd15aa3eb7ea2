"""The diff as data: every ``tests/fixtures/diff/<case>.json`` runs through ``plan.diff_host``.

A case is ``{"desired": <inventory>, "facts": <one host's facts>, "changes": [...]}`` (the way
pyinfra keeps its operation tests), plus what the plan must say besides its changes:
``incomplete`` (the reasons an unjudgeable host's plan is incomplete) and ``findings`` (ids).
``facts`` is what ``HostFacts.to_dict`` writes, without ``schema_version``; fields left out are
"not there". Two shortcuts keep the cases readable and independent of the file templates:
``"files_as_planned": true`` gives the host the managed files exactly as planned (a case's own
``managed_files`` win), and a file change's ``"after": "planned"`` stands for the sha256 of the
content plan writes (``content_has`` then lists lines that content must hold). A new case is a
new JSON file: see tests/fixtures/diff/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendprep.desired.state import build_desired
from ascendprep.facts.model import FACTS_SCHEMA_VERSION, HostFacts, ManagedFile
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.changes import WriteFile
from ascendprep.plan.diff import diff_host
from ascendprep.plan.drift import sha256_text

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "diff"
CASE_KEYS = {"description", "desired", "node", "facts", "files_as_planned", "changes", "incomplete", "findings"}


def _cases() -> list[Path]:
    return sorted(CASES.glob("*.json"))


@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.stem)
def test_diff_case(path: Path) -> None:
    case: dict[str, Any] = json.loads(path.read_text())
    assert set(case) <= CASE_KEYS, f"{path.name}: unknown keys {sorted(set(case) - CASE_KEYS)}"
    desired = build_desired(inventory_from_text(yaml.safe_dump(case["desired"])))
    node = case.get("node") or next(iter(desired.nodes))
    facts = HostFacts.from_dict({"schema_version": FACTS_SCHEMA_VERSION, **case["facts"]})
    planned_files = {f.path: f for f in desired.nodes[node].files}
    if case.get("files_as_planned"):
        as_planned = {p: ManagedFile(p, True, sha256_text(f.content)) for p, f in planned_files.items()}
        facts = HostFacts(**{**facts.__dict__, "managed_files": {**as_planned, **facts.managed_files}})

    plan = diff_host(desired, node, facts)

    expected = [dict(c) for c in case["changes"]]
    got = [c.entry() for c in plan.changes]
    for want, change, entry in zip(expected, plan.changes, got):
        lines = want.pop("content_has", [])
        if want.get("after") == "planned" and isinstance(change, WriteFile):
            planned = planned_files.get(change.path)
            if planned is not None:
                assert change.sha256 == sha256_text(planned.content), (
                    f"{path.name}: {change.path} is not written as planned"
                )
            entry["after"] = "planned"
        for line in lines:
            assert isinstance(change, WriteFile) and change.content and f"{line}\n" in change.content, (
                f"{path.name}: {change.key} lacks {line!r}"
            )
    assert got == expected, path.name
    assert plan.incomplete == case.get("incomplete", []), path.name
    assert [f.id for f in plan.findings] == case.get("findings", []), path.name


def test_there_are_cases_for_every_kind_of_change_and_for_unknown_facts() -> None:
    cases = [json.loads(p.read_text()) for p in _cases()]
    kinds = {c["kind"] for case in cases for c in case["changes"]}
    assert kinds == {"hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls", "sysctl", "file", "firewall"}
    assert any(case.get("incomplete") for case in cases) and any(
        not case["changes"] and not case.get("incomplete") for case in cases
    )
