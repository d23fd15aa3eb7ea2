"""--hosts PATTERN: only the named nodes are read, planned and shown; naming none is exit 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ascendprep.commands.plan import plan_command

INVENTORY = (
    "name: x\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\n"
    "ssh: {port: 1, connect_timeout: 3, known_hosts: known_hosts}\n"
    "nodes: [{name: 'n[1-4]', host: '127.0.0.[1-4]'}]\n"
)


@pytest.fixture
def inventory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "inv.yaml"
    path.write_text(INVENTORY)
    return path


def test_plan_reads_only_the_hosts_named(inventory, tmp_path):
    outcome = CliRunner().invoke(
        plan_command, [str(inventory), "--hosts", "n[2-3]", "--format", "json", "-o", str(tmp_path / "p.json")]
    )
    document = json.loads(outcome.stdout)
    # Nothing listens on port 1: the two chosen hosts are reported unreachable; the others are not tried.
    assert [h["node"] for h in document["hosts"]] == ["n2", "n3"]
    assert all(not h["reachable"] for h in document["hosts"])
    assert outcome.exit_code == 1


def test_a_glob_works_too(inventory, tmp_path):
    outcome = CliRunner().invoke(
        plan_command, [str(inventory), "--hosts", "*4", "--format", "json", "-o", str(tmp_path / "p.json")]
    )
    assert [h["node"] for h in json.loads(outcome.stdout)["hosts"]] == ["n4"]


@pytest.mark.parametrize(
    "pattern, message",
    [("node[1-2]", "names no node of the inventory (its nodes: n[1-4])"), ("n[3-1]", "runs backwards")],
)
def test_a_pattern_naming_nothing_is_a_usage_error(inventory, pattern, message):
    outcome = CliRunner().invoke(plan_command, [str(inventory), "--hosts", pattern])
    assert outcome.exit_code == 2
    assert message in outcome.output and "Traceback" not in outcome.output


def test_verify_reports_only_the_hosts_named(inventory, tmp_path):
    from ascendprep.commands.verify import verify_command

    outcome = CliRunner().invoke(
        verify_command, [str(inventory), "--hosts", "n[3-4]", "--format", "json", "--skip", "cluster"]
    )
    assert outcome.exit_code == 1, outcome.output
    document = json.loads(outcome.stdout)
    assert list(document["hosts"]) == ["n3", "n4"]
    assert sorted({f["node"] for f in document["findings"]}) == ["n3", "n4"]
    text = CliRunner().invoke(verify_command, [str(inventory), "--hosts", "n[3-4]", "--skip", "cluster"]).output
    assert "n[3-4]" in text and "n1" not in text and "n2" not in text


def test_verify_pattern_naming_nothing_is_exit_2_before_any_host_is_read(inventory):
    from ascendprep.commands.verify import verify_command

    outcome = CliRunner().invoke(verify_command, [str(inventory), "--hosts", "gpu*"])
    assert outcome.exit_code == 2 and "names no node of the inventory" in outcome.output
    assert not (inventory.parent / ".ascendprep").exists()  # no run was started
