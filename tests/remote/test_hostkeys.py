"""known_hosts reading and recording, checked against OpenSSH's own tools."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest
from labsupport import skip_or_fail

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import HostKeyError
from ascendprep.remote.hostkeys import fingerprint, known_keys, record_host_key

if subprocess.run(["sh", "-c", "command -v ssh-keygen"], capture_output=True).returncode != 0:
    skip_or_fail("ssh-keygen is not installed (apt-get install openssh-client)")


@pytest.fixture
def key_pair(tmp_path: Path) -> tuple[Path, paramiko.PKey]:
    path = tmp_path / "hostkey"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path, paramiko.Ed25519Key.from_private_key_file(str(path))


def _line(name: str, key: paramiko.PKey) -> str:
    return f"{name} {key.get_name()} {key.get_base64()}\n"


def test_fingerprint_is_the_one_ssh_keygen_prints(key_pair: tuple[Path, paramiko.PKey]) -> None:
    path, key = key_pair
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{path}.pub"], capture_output=True, text=True, check=True
    ).stdout
    assert listed.split()[1] == fingerprint(key)


def test_plain_hashed_and_port_entries_are_found(tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]) -> None:
    _, key = key_pair
    plain = tmp_path / "plain"
    plain.write_text(_line("10.0.0.1", key) + _line("[10.0.0.2]:2222", key))
    hashed = tmp_path / "hashed"
    hashed.write_text(_line("node9", key))
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(hashed)], check=True, capture_output=True)
    assert hashed.read_text().startswith("|1|")  # really hashed: the name is no longer readable
    files = [str(plain), str(hashed)]
    assert [k.source for k in known_keys("10.0.0.1", files)] == [f"{plain}:1"]
    assert [k.source for k in known_keys("[10.0.0.2]:2222", files)] == [f"{plain}:2"]
    assert known_keys("10.0.0.2", files) == []  # port 22 is a different name
    assert [k.key for k in known_keys("node9", files)] == [key]
    assert known_keys("node10", files) == []


def test_wildcards_negation_and_odd_lines(tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]) -> None:
    _, key = key_pair
    path = tmp_path / "known_hosts"
    path.write_text(
        "# comment\n\n"
        "@cert-authority *.lab ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA\n"
        "node1 ssh-ed25519 !!!not-base64!!!\n"
        "short line\n" + _line("node*,!node7", key)
    )
    assert [k.source for k in known_keys("node1", [str(path)])] == [f"{path}:6"]
    assert known_keys("node7", [str(path)]) == []


def test_first_file_comes_first_and_missing_files_are_skipped(
    tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]
) -> None:
    _, key = key_pair
    second_key = paramiko.ECDSAKey.generate()
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text(_line("h", key))
    second.write_text(_line("h", second_key))
    found = known_keys("h", [str(tmp_path / "absent"), str(first), str(second)])
    assert [k.key for k in found] == [key, second_key]


def test_unreadable_known_hosts_is_an_error_not_an_unknown_host(tmp_path: Path) -> None:
    folder = tmp_path / "a_directory"
    folder.mkdir()
    with pytest.raises(HostKeyError, match="cannot read known_hosts file"):
        known_keys("h", [str(folder)])


def test_recording_appends_to_the_first_file_and_repairs_a_missing_newline(
    tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]
) -> None:
    _, key = key_pair
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text("other ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLE")  # no final newline
    access = HostAccess(
        name="n1", address="10.0.0.1", port=2222, known_hosts=[first, second], accept_new_host_keys=True
    )
    record_host_key(access, "[10.0.0.1]:2222", key)
    assert first.read_text().splitlines()[1] == _line("[10.0.0.1]:2222", key).strip()
    assert not second.exists()
    assert [k.key for k in known_keys("[10.0.0.1]:2222", [str(first)])] == [key]


def test_recording_into_a_missing_folder_says_where(tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]) -> None:
    _, key = key_pair
    access = HostAccess(name="n1", address="10.0.0.1", known_hosts=[tmp_path / "nope" / "known_hosts"])
    with pytest.raises(HostKeyError, match="cannot record the host key of n1 in .*nope/known_hosts"):
        record_host_key(access, "10.0.0.1", key)


def test_revoked_lines_are_read_apart_from_trusted_ones(tmp_path: Path, key_pair: tuple[Path, paramiko.PKey]) -> None:
    _, key = key_pair
    path = tmp_path / "known_hosts"
    path.write_text(_line("node1", key) + "@revoked * " + _line("", key).strip() + "\n")
    from ascendprep.remote.hostkeys import revoked_keys

    assert [k.source for k in known_keys("node1", [str(path)])] == [f"{path}:1"]
    assert [(k.source, k.key) for k in revoked_keys("node1", [str(path)])] == [(f"{path}:2", key)]
    assert [k.source for k in revoked_keys("elsewhere", [str(path)])] == [f"{path}:2"]  # '*' covers every host
