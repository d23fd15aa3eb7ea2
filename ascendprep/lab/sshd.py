"""Real OpenSSH for every node: its config, the keys, known_hosts, and the client command.

Each node runs ``/usr/sbin/sshd -D -e -f <config>`` inside its namespaces, listening on its
management address only. Tools under test open dozens of sessions at once (one per probe, per
rank), hence the generous ``MaxStartups`` and ``MaxSessions``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence, Union

from ascendprep.lab.system import LabError, run, tool

SSHD = "/usr/sbin/sshd"
#: Directory sshd insists on for privilege separation (shared by all nodes: /run is not overlaid).
PRIVSEP_DIR = Path("/run/sshd")


def render_sshd_config(
    *, listen_ip: str, host_key: Path, authorized_keys: Path, pid_file: Path, sftp: bool = True
) -> str:
    """The sshd_config of one node: key-only root login, many concurrent sessions.

    ``sftp=False`` leaves out the sftp subsystem, as hardened servers do (``lab up --no-sftp``).
    """
    return "\n".join(
        [
            "# managed by ascendprep lab: one simulated node's sshd",
            f"ListenAddress {listen_ip}:22",
            f"HostKey {host_key}",
            f"PidFile {pid_file}",
            f"AuthorizedKeysFile {authorized_keys}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "AuthenticationMethods publickey",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "MaxStartups 100:30:200",
            "MaxSessions 50",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            *(["Subsystem sftp internal-sftp"] if sftp else []),
            "LogLevel INFO",
            "",
        ]
    )


def sshd_argv(config: Path) -> list[str]:
    return [SSHD, "-D", "-e", "-f", str(config)]


def generate_key(path: Path, comment: str) -> None:
    """A new ed25519 key pair at ``path`` (+ ``.pub``), no passphrase, private part 0600.

    ssh-keygen is cheap next to starting a node, so every node gets its own host key.
    """
    run([tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def public_key(path: Path) -> str:
    """``ssh-ed25519 AAAA...`` (type and key, without the comment) of a ``.pub`` file."""
    fields = Path(f"{path}.pub").read_text().split()
    if len(fields) < 2:
        raise LabError(f"{path}.pub is not an OpenSSH public key")
    return f"{fields[0]} {fields[1]}"


def render_known_hosts(host_keys: Sequence[tuple[str, str]]) -> str:
    """One ``<ip> <type> <key>`` line per node."""
    return "".join(f"{host} {key}\n" for host, key in host_keys)


def ssh_argv(
    host: str,
    *,
    key: Path,
    known_hosts: Path,
    command: Union[str, Sequence[str], None] = None,
    connect_timeout: int = 10,
) -> list[str]:
    """The ``ssh`` command line that reaches a lab node the way ascendprep itself must.

    Host keys are checked strictly against the lab's known_hosts; the user's own ssh config,
    agent and known_hosts are ignored, so results do not depend on who runs them. A command
    given as a list is quoted for the remote shell.
    """
    argv = [
        "ssh",
        "-F", "/dev/null",
        "-i", str(key),
        "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes",
        "-o", f"ConnectTimeout={connect_timeout}",
        "-o", "LogLevel=ERROR",
        f"root@{host}",
    ]  # fmt: skip
    if command is None:
        return argv
    remote = command if isinstance(command, str) else shlex.join(command)
    return [*argv, "--", remote]
