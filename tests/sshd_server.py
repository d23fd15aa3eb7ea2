"""A real OpenSSH sshd on 127.0.0.1 for the transport tests.

It runs from a temp dir with its own host key and an authorized client key, as the current user
(root in CI), and logs to a file so tests can count logins. Without an sshd binary the tests
are skipped on a developer machine and FAIL in CI (``CI=true``), where a silent skip would hide
that the transport was never exercised.

Helpers import by name (``from sshd_server import Sshd, free_port``); the ``sshd`` and
``known_hosts`` fixtures reach every test through tests/conftest.py.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Sequence

import pytest

from ascendprep.remote.access import HostAccess

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


def find_sshd() -> str:
    for candidate in SSHD_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("sshd")
    return found or ""


def missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the SSH transport tests must run in CI)")
    pytest.skip(reason)


def process_alive(pid: int) -> bool:
    """Is ``pid`` a running process? Zombies (dead, not yet reaped) count as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_until_gone(pids: List[int], seconds: float = 5.0) -> List[int]:
    """Wait up to ``seconds`` for ``pids`` to end; return those still running."""
    deadline = time.monotonic() + seconds
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if process_alive(p)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def keygen(path: Path) -> str:
    """Make an ed25519 key pair at ``path``; return the public key line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class Sshd:
    port: int
    directory: Path
    host_key_line: str  # "ssh-ed25519 AAAA..." of the server
    client_key: Path
    log: Path
    user: str
    process: "subprocess.Popen[bytes]"

    def logins(self) -> int:
        """Successful logins so far (each is one SSH connection)."""
        return self.log.read_text(errors="replace").count("Accepted publickey")

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key_line}\n"

    def access(self, name: str = "node1", known_hosts: Sequence[Path] = (), **overrides: object) -> HostAccess:
        fields = dict(
            name=name,
            address="127.0.0.1",
            port=self.port,
            user=self.user,
            key_file=str(self.client_key),
            known_hosts=[str(p) for p in known_hosts],
            connect_timeout=5,
            command_timeout=30,
        )
        fields.update(overrides)
        return HostAccess(**fields)  # type: ignore[arg-type]


def _wait_for_port(port: int, process: "subprocess.Popen[bytes]", log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"sshd exited with {process.returncode}: {log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not listen on port {port}: {log.read_text(errors='replace')}")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    binary = find_sshd()
    if not binary:
        missing("OpenSSH sshd is not installed")
    if shutil.which("ssh-keygen") is None:
        missing("ssh-keygen is not installed")
    directory = tmp_path_factory.mktemp("sshd")
    host_line = keygen(directory / "host_ed25519")
    client_line = keygen(directory / "client_ed25519")
    (directory / "authorized_keys").write_text(client_line + "\n")
    if os.geteuid() == 0:
        # sshd refuses to start without its privilege separation directory (made by the service).
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    port = free_port()
    process, log = start_sshd(binary, directory, port)
    try:
        yield Sshd(port, directory, host_line, directory / "client_ed25519", log, getpass.getuser(), process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def start_sshd(
    binary: str, directory: Path, port: int, wrapper: Sequence[str] = (), name: str = "sshd", extra: str = ""
) -> "tuple[subprocess.Popen[bytes], Path]":
    """Start sshd on ``port`` with the keys in ``directory`` (``wrapper``: a command to exec it
    through; ``extra``: more sshd_config lines)."""
    config = directory / f"{name}_config"
    config.write_text(
        f"""Port {port}
ListenAddress 127.0.0.1
HostKey {directory}/host_ed25519
PidFile {directory}/{name}.pid
AuthorizedKeysFile {directory}/authorized_keys .ssh/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
MaxStartups 100:30:200
LogLevel INFO
Subsystem sftp internal-sftp
{extra}"""
    )
    log = directory / f"{name}.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen([*wrapper, binary, "-D", "-e", "-f", str(config)], stdout=log_file, stderr=log_file)
    _wait_for_port(port, process, log)
    return process, log


@pytest.fixture
def known_hosts(tmp_path: Path, sshd: Sshd) -> Path:
    """A known_hosts file that trusts the test sshd."""
    path = tmp_path / "known_hosts"
    path.write_text(sshd.known_hosts_line())
    return path
