"""verify --from-bundle RUN --html FILE: the option's wiring (the file, its mode, its errors)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, healthy_facts, with_npu  # noqa: E402

from ascendprep.commands.verify import verify_command  # noqa: E402
from ascendprep.run import verify as verify_flow
from ascendprep.run.bundle import Bundle  # noqa: E402
from ascendprep.verify.checks.registry import Selection  # noqa: E402


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A saved run where node2's NPU 3 link is down, handed back by a stand-in for the bundle reader."""
    desired = desired_state()
    hosts, pings = cluster_evidence(desired, {"node2": with_npu(healthy_facts(desired, "node2"), 3, link="DOWN")})
    folder = tmp_path / "runs" / "20250601T000000Z"
    folder.mkdir(parents=True)
    bundle = Bundle("/x/inventory.yaml", INVENTORY, hosts, pings, "ring", Selection().to_dict(), TODAY, path=folder)
    monkeypatch.setattr(
        verify_flow,
        "read_bundle",
        lambda path, *budget: bundle if Path(path) == folder else pytest.fail(f"read {path}"),
    )
    return folder


def test_from_bundle_writes_the_page_0600(saved: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    old = os.umask(0)
    try:
        outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--html", str(target)])
    finally:
        os.umask(old)
    assert outcome.exit_code == 1, outcome.output  # the link is down: the verdict, unchanged by --html
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'data-node="node2" data-npu="3"' in page
    assert str(saved) in page  # where the evidence came from


def test_a_page_that_cannot_be_written_is_said_and_fails(saved: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.html"
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--html", str(target), "--only", "node"])
    assert outcome.exit_code == 1
    assert "--html" in outcome.stderr and str(target) in outcome.stderr


def test_a_folder_is_refused(saved: Path, tmp_path: Path) -> None:
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--html", str(tmp_path)])
    assert outcome.exit_code == 2 and "--html" in outcome.output


def test_from_bundle_with_a_plan_lists_its_changes(saved: Path, tmp_path: Path) -> None:
    from html_evidence import saved_plan

    from ascendprep.plan.planfile import write_plan

    plan, target = tmp_path / "plan.json", tmp_path / "report.html"
    write_plan(saved_plan(), plan)
    outcome = CliRunner().invoke(
        verify_command, ["--from-bundle", str(saved), "--html", str(target), "--plan", str(plan)]
    )
    assert outcome.exit_code == 1, outcome.output  # the verdict's code, unchanged by --plan
    page = target.read_text()
    assert '<div class="plan-host" data-node="node2">' in page and "net.core.somaxconn" in page


def test_a_bad_plan_is_a_located_error_before_anything_runs(saved: Path, tmp_path: Path) -> None:
    plan, target = tmp_path / "plan.json", tmp_path / "report.html"
    plan.write_text('{"kind": "ascendprep-plan", "schema_version": 2, "hosts": [{"node": 1}], "inventory": {}}')
    plan.chmod(0o600)
    outcome = CliRunner().invoke(
        verify_command, ["--from-bundle", str(saved), "--html", str(target), "--plan", str(plan)]
    )
    assert outcome.exit_code == 2, outcome.output
    assert f"error: {plan}: " in outcome.stderr and "hosts[0]" in outcome.stderr
    assert "Traceback" not in outcome.output and not target.exists()
    missing = CliRunner().invoke(
        verify_command, ["--from-bundle", str(saved), "--html", str(target), "--plan", str(tmp_path / "none.json")]
    )
    assert missing.exit_code == 2 and "no such plan file" in missing.stderr


def test_plan_without_html_is_a_usage_error(saved: Path, tmp_path: Path) -> None:
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved), "--plan", str(tmp_path / "p.json")])
    assert outcome.exit_code == 2 and "--plan only applies with --html" in outcome.output
