"""The ``ascendprep lab`` commands' answers to bad input and unready machines (no lab needed)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ascendprep.cli import main
from ascendprep.lab import lifecycle


def test_up_on_an_unready_machine_lists_what_is_missing(monkeypatch):
    monkeypatch.setattr(
        lifecycle,
        "missing_requirements",
        lambda: ["sshd: needed for each node runs a real sshd (apt-get install openssh-server)"],
    )
    result = CliRunner().invoke(main, ["lab", "up", "--name", "unready"])
    assert result.exit_code == 1
    assert "apt-get install openssh-server" in result.output
    assert "Traceback" not in result.output


def test_up_rejects_bad_arguments_with_usage_exit_code():
    for args, message in (
        (["--nodes", "0"], "--nodes"),
        (["--nodes", "65"], "--nodes"),
        (["--product", "atlas-9000"], "--product"),
        (["--npus", "3", "--product", "atlas-800"], "--npus 3"),
        (["--subnet", "10.0.0.0/28"], "--subnet"),
        (["--cann", "8.0 RC3"], "--cann"),
    ):
        result = CliRunner().invoke(main, ["lab", "up", "--name", "bad", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output


def test_status_of_a_lab_that_is_not_up():
    result = CliRunner().invoke(main, ["lab", "status", "--name", "no-such-lab", "--format", "json"])
    assert result.exit_code == 1
    assert json.loads(result.output) == {
        "schema_version": 1,
        "name": "no-such-lab",
        "up": False,
        "nodes": [],
        "faults": [],
    }


def test_fault_on_a_lab_that_is_not_up_says_how_to_start_it():
    result = CliRunner().invoke(main, ["lab", "fault", "node1", "link-down", "--name", "no-such-lab"])
    assert result.exit_code == 1
    assert "lab 'no-such-lab' is not up" in result.output
    assert "lab up --name no-such-lab" in result.output


def test_unknown_fault_kind_is_a_usage_error():
    result = CliRunner().invoke(main, ["lab", "fault", "node1", "meltdown", "--name", "no-such-lab"])
    assert result.exit_code == 2
    assert "link-down" in result.output
