"""The private key and each known_hosts file are parsed once per run, not once per host, and a
file changed meanwhile (even rewritten to the same size at once) is read as it now is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest
from labsupport import skip_or_fail

from ascendprep.base.limits import PRIVATE_KEY_MAX_BYTES
from ascendprep.remote import hostkeys, ssh
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import AuthError
from ascendprep.remote.hostkeys import _name_matches, known_keys, revoked_keys

if subprocess.run(["sh", "-c", "command -v ssh-keygen"], capture_output=True).returncode != 0:
    skip_or_fail("ssh-keygen is not installed (apt-get install openssh-client)")


def _keygen(path: Path) -> paramiko.PKey:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return paramiko.Ed25519Key.from_private_key_file(str(path))


def _line(names: str, key: paramiko.PKey) -> str:
    return f"{names} {key.get_name()} {key.get_base64()}\n"


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list:
    parses: list = []
    real = hostkeys._KnownHostsFile.__init__

    def counted(self, text):  # type: ignore[no-untyped-def]
        parses.append(len(text))
        real(self, text)

    monkeypatch.setattr(hostkeys._KnownHostsFile, "__init__", counted)
    return parses


def test_a_known_hosts_file_is_parsed_once_for_many_hosts_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = _keygen(tmp_path / "k1"), _keygen(tmp_path / "k2")
    path = tmp_path / "known_hosts"
    path.write_text("".join(_line(f"node{i}", one) for i in range(1, 201)))
    parses = _count_parses(monkeypatch)
    for i in range(1, 201):
        [found] = known_keys(f"node{i}", [str(path)])
        assert found.key == one and found.source == f"{path}:{i}"
    assert len(parses) == 1
    # Rewritten at once to the same size with another key for node7: the new key is what counts.
    path.write_text("".join(_line(f"node{i}", two if i == 7 else one) for i in range(1, 201)))
    assert [k.key for k in known_keys("node7", [str(path)])] == [two]
    assert len(parses) == 2


def test_the_index_finds_what_reading_every_line_finds(tmp_path: Path) -> None:
    """Plain, multi-name, wildcard, negated, hashed, @revoked and unreadable lines, looked up by
    the index, give the keys (and their lines, in file order) a scan of every line gives."""
    keys = [_keygen(tmp_path / f"k{i}") for i in range(3)]
    hashed = tmp_path / "hashed"
    hashed.write_text(_line("node3", keys[2]))
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(hashed)], check=True, capture_output=True)
    lines = [
        _line("node1", keys[0]),
        _line("node2,node1", keys[1]),
        _line("node*,!node4", keys[2]),
        hashed.read_text(),
        "@revoked " + _line("node2", keys[0]),
        "node5 ssh-ed25519 !!!not-base64!!!\n",
        _line("[node1]:2222", keys[1]),
        _line("node4", keys[0]),
    ]
    path = tmp_path / "known_hosts"
    path.write_text("".join(lines))

    def scan(name: str, revoked: bool) -> list:
        expected = []
        for number, line in enumerate(lines, 1):
            fields = line.split()
            marked = fields[0] == "@revoked"
            fields = fields[1:] if marked else fields
            if marked == revoked and _name_matches(fields[0].split(","), name) and "!!!" not in line:
                expected.append(f"{path}:{number}")
        return expected

    for name in ("node1", "node2", "node3", "node4", "node5", "node9", "[node1]:2222", "other"):
        assert [k.source for k in known_keys(name, [str(path)])] == scan(name, False), name
        assert [k.source for k in revoked_keys(name, [str(path)])] == scan(name, True), name
    assert [k.key for k in known_keys("node3", [str(path)])] == [keys[2], keys[2]]  # the wildcard, then the hashed line


def _access(key_file: Path) -> HostAccess:
    return HostAccess(name="node1", address="127.0.0.1", key_file=str(key_file))


def test_a_private_key_file_is_parsed_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "id_ed25519"
    first = _keygen(path)
    parses: list = []
    real = ssh._parse_private_key
    monkeypatch.setattr(ssh, "_parse_private_key", lambda access, data: parses.append(1) or real(access, data))
    for _ in range(50):
        key, agent = ssh.load_private_key(_access(path))
        assert key == first and agent is False
    assert len(parses) == 1
    path.unlink()
    second = _keygen(path)
    assert ssh.load_private_key(_access(path))[0] == second and len(parses) == 2


def test_a_key_path_to_a_huge_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "huge"
    path.write_bytes(b"x" * (PRIVATE_KEY_MAX_BYTES + 1))
    with pytest.raises(AuthError, match="is not a private key paramiko can read .larger than 1024 KiB"):
        ssh.load_private_key(_access(path))
