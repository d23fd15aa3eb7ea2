"""The cipher a connection asks for first: AES-GCM (one C call per packet, no MAC compared in
Python), and any other cipher paramiko knows where the server offers no GCM."""

from __future__ import annotations

from pathlib import Path

from sshd_server import Sshd, find_sshd, free_port, start_sshd

from ascendprep.remote.ssh import SSHTransport


def _ciphers(host: SSHTransport) -> tuple:
    transport = host._connection.transport  # type: ignore[union-attr]
    return transport.local_cipher, transport.remote_cipher


def test_aes_gcm_is_used_where_the_server_offers_it(sshd: Sshd, known_hosts: Path) -> None:
    with SSHTransport(sshd.access(known_hosts=[known_hosts])) as host:
        assert host.run_script("echo hi\n").stdout == "hi\n"
        assert _ciphers(host) == ("aes128-gcm@openssh.com", "aes128-gcm@openssh.com")


def test_a_server_without_gcm_is_reached_with_the_cipher_it_allows(sshd: Sshd, tmp_path: Path) -> None:
    """The unlike case: the preference reorders, it never narrows what we accept."""
    port = free_port()
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {sshd.host_key_line}\n")
    process, _ = start_sshd(find_sshd(), sshd.directory, port, name="ctr_only", extra="Ciphers aes256-ctr\n")
    try:
        with SSHTransport(sshd.access(known_hosts=[known_hosts], port=port)) as host:
            assert host.run_script("echo hi\n").stdout == "hi\n"
            assert _ciphers(host) == ("aes256-ctr", "aes256-ctr")
    finally:
        process.terminate()
        process.wait(timeout=10)
