"""apply --local: only this machine's changes of the plan, with the same stale checks and journal,
and never an SSH session. The hosts are recorded facts (tests/commands/test_apply_command's FakeHosts);
the real scripts on real nodes run in tests/e2e/test_local_lab.py."""

from __future__ import annotations

import json

import click
import pytest

from ascendprep.base import exitcodes
from ascendprep.commands.apply import apply_command as apply_cli
from ascendprep.run import apply as apply_command
from ascendprep.run.node_local import MachineIdentity
from tests.commands.test_apply_command import FakeHosts, all_ok, journals, planned  # noqa: F401  (planned: a fixture)


@pytest.fixture
def no_ssh(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("apply --local opened an SSH session")

    monkeypatch.setattr(apply_command, "open_session", refuse)


def test_local_apply_reads_and_changes_only_this_node(planned, monkeypatch, no_ssh, capsys):  # noqa: F811
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None, local=True, node="n1") == exitcodes.OK
    assert hosts.gathered == ["n1"] and set(hosts.applied) == {"n1"}
    journal = journals(plan_path)[-1]
    assert journal["local_node"] == "n1" and journal["status"] == "finished"
    assert [h["node"] for h in journal["hosts"]] == ["n1"]
    assert "--local: only n1 (this machine)" in capsys.readouterr().err


def test_local_apply_on_a_node_without_changes_touches_nothing(planned, monkeypatch, no_ssh, capsys):  # noqa: F811
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None, local=True, node="n2") == exitcodes.OK
    assert hosts.gathered == [] and hosts.applied == {}
    assert "No changes in this plan" in capsys.readouterr().out


def test_local_apply_refuses_a_stale_plan_like_apply(planned, monkeypatch, no_ssh, capsys):  # noqa: F811
    plan_path, _, facts = planned
    facts["n1"].sysctl["net.core.somaxconn"] = "1024"  # moved since planning
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None, local=True, node="n1") == exitcodes.FAILED
    assert hosts.applied == {}
    assert "The plan is stale" in capsys.readouterr().err
    assert journals(plan_path)[-1]["status"] == "refused"


def test_local_apply_finds_its_node_by_host_name_and_refuses_to_guess(planned, monkeypatch, no_ssh):  # noqa: F811
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    monkeypatch.setattr(apply_command, "machine_identity", lambda: MachineIdentity(frozenset({"n1"}), frozenset()))
    assert apply_command.run_apply(plan_path, False, None, local=True) == exitcodes.OK
    assert set(hosts.applied) == {"n1"}

    monkeypatch.setattr(
        apply_command, "machine_identity", lambda: MachineIdentity(frozenset({"gpu7"}), frozenset({"192.0.2.50"}))
    )
    with pytest.raises(click.BadParameter, match="no node of .* is this machine .*gpu7.*192.0.2.50"):
        apply_command.run_apply(plan_path, False, None, local=True)
    assert journals(plan_path)[-1]["status"] == "refused"


def test_local_apply_usage(planned):  # noqa: F811
    from click.testing import CliRunner

    plan_path, _, _ = planned
    for args, message in (
        (["--node", "n1"], "--node only applies with --local"),
        (["--local", "--hosts", "n1"], "--hosts do not apply"),
    ):
        outcome = CliRunner().invoke(apply_cli, [str(plan_path), *args])
        assert outcome.exit_code == 2 and message in outcome.output, outcome.output
    assert json.loads(plan_path.read_text())  # the plan is untouched
