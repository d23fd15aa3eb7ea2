"""``lab up --no-sftp``: nodes whose sshd has no sftp subsystem, as on hardened servers.

The lab tests that use both variants are in tests/e2e/test_allreduce_no_sftp.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.lab import cli as lab_cli
from ascendprep.lab import sshd
from ascendprep.lab.spec import LabSpec


def _config(tmp_path: Path, sftp: bool) -> str:
    return sshd.render_sshd_config(
        listen_ip="127.0.0.1",
        host_key=tmp_path / "hk",
        authorized_keys=tmp_path / "ak",
        pid_file=tmp_path / "pid",
        sftp=sftp,
    )


@pytest.mark.parametrize("sftp", [True, False])
def test_the_sftp_subsystem_line_follows_the_option(tmp_path: Path, sftp: bool) -> None:
    lines = _config(tmp_path, sftp).splitlines()
    assert ("Subsystem sftp internal-sftp" in lines) is sftp
    assert not any(line.startswith("Subsystem") for line in lines) or sftp


@pytest.mark.parametrize("sftp", [True, False])
def test_sshd_accepts_both_configs(tmp_path: Path, sftp: bool) -> None:
    if not Path(sshd.SSHD).exists():
        pytest.skip("no sshd on this machine")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hk")], check=True)
    config = tmp_path / "sshd_config"
    config.write_text(_config(tmp_path, sftp))
    result = subprocess.run([sshd.SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_specs_default_to_sftp_and_old_records_still_load() -> None:
    assert LabSpec().sftp is True
    record = LabSpec(sftp=False).to_dict()
    assert LabSpec.from_dict(record).sftp is False
    del record["sftp"]  # a lab brought up before the option existed
    assert LabSpec.from_dict(record).sftp is True
    assert LabSpec(sftp=True).differences(LabSpec(sftp=False)) == ["sftp: True → False"]


def test_lab_up_no_sftp_reaches_the_spec(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen = []

    class Stop(Exception):
        pass

    def fake_up(spec: LabSpec, progress: object = None) -> None:
        seen.append(spec)
        raise Stop()

    monkeypatch.setattr(lab_cli.Lab, "up", staticmethod(fake_up))
    runner = CliRunner()
    runner.invoke(lab_cli.lab_group, ["up", "--nodes", "1", "--no-sftp"])
    runner.invoke(lab_cli.lab_group, ["up", "--nodes", "1"])
    assert [spec.sftp for spec in seen] == [False, True]
    assert "--no-sftp" in runner.invoke(lab_cli.lab_group, ["up", "--help"]).output
