"""--timeout on plan, apply and verify: offered, bounded below, refused where no host is contacted."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ascendprep.cli import main


@pytest.mark.parametrize("command", ["plan", "apply", "verify"])
def test_every_remote_command_takes_a_deadline(command):
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0 and "--timeout SECONDS" in result.output
    assert "whole command" in " ".join(result.output.split())


@pytest.mark.parametrize("command", ["plan", "verify"])
def test_a_deadline_below_the_minimum_is_a_usage_error(command, tmp_path):
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("name: x\n")
    result = CliRunner().invoke(main, [command, str(inventory), "--timeout", "1"])
    assert result.exit_code == 2 and "--timeout" in result.output and "x>=5" in result.output


def test_from_bundle_contacts_no_host_so_takes_no_deadline(tmp_path):
    result = CliRunner().invoke(main, ["verify", "--from-bundle", str(tmp_path), "--timeout", "30"])
    assert result.exit_code == 2 and "--timeout" in result.output


@pytest.mark.parametrize("command", ["plan", "verify"])
def test_a_bad_output_cap_override_is_a_located_input_error(command, tmp_path, monkeypatch):
    monkeypatch.setenv("ASCENDPREP_REMOTE_CALL_OUTPUT_CAP", "a lot")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("name: x\n")
    result = CliRunner().invoke(main, [command, str(inventory)])
    assert result.exit_code == 2, result.output
    assert "ASCENDPREP_REMOTE_CALL_OUTPUT_CAP" in result.output and "Traceback" not in result.output
