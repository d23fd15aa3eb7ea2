"""sudo through SSH with real sudo and real (temporary) users.

These tests add two users and a sudoers file to the machine and remove them afterwards, so they
only run where that is acceptable: as root, with sudo and useradd installed, and either in CI
(``CI=true``) or when asked for with ``ASCENDPREP_TEST_SUDO=1``.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List

import pytest
from sshd_server import Sshd, find_sshd, free_port, missing, start_sshd, wait_until_gone

from ascendprep.remote.errors import SudoError
from ascendprep.remote.ssh import SSHTransport
from ascendprep.remote.sudo import SudoPassword
from ascendprep.run.fanout import Session

PASSWORD = "Correct-Horse-" + secrets.token_hex(4)

_IN_CI = os.environ.get("CI", "").lower() == "true"
_CAN_RUN = bool(os.geteuid() == 0 and shutil.which("sudo") and shutil.which("useradd"))
if _IN_CI and not _CAN_RUN:  # CI installs sudo and runs as root: a skip there would hide that nothing ran
    pytest.fail("the sudo tests need root, sudo and useradd (CI=true: they must run in CI)", pytrace=False)
pytestmark = pytest.mark.skipif(
    not (_CAN_RUN and (_IN_CI or os.environ.get("ASCENDPREP_TEST_SUDO") == "1")),
    reason="needs root, sudo, useradd, and CI=true or ASCENDPREP_TEST_SUDO=1 (creates temporary users)",
)


def _make_user(name: str, sshd: Sshd) -> None:
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    subprocess.run(["chpasswd"], input=f"{name}:{PASSWORD}\n", text=True, check=True)
    home = Path(pwd.getpwnam(name).pw_dir)
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "authorized_keys").write_text(sshd.client_key.with_suffix(".pub").read_text())
    subprocess.run(["chown", "-R", f"{name}:{name}", str(home / ".ssh")], check=True)


@pytest.fixture(scope="module")
def sudo_users(sshd: Sshd) -> Iterator[dict]:
    suffix = secrets.token_hex(3)
    users = {"password": f"apsudopw{suffix}", "nopasswd": f"apsudonp{suffix}"}
    sudoers = Path(f"/etc/sudoers.d/ascendprep-test-{suffix}")
    try:
        for name in users.values():
            _make_user(name, sshd)
        sudoers.write_text(
            f"{users['password']} ALL=(ALL) ALL\n"
            f"{users['nopasswd']} ALL=(ALL) NOPASSWD: ALL\n"
            f"Defaults:{users['password']} !lecture\n"
        )
        sudoers.chmod(0o440)
        subprocess.run(["visudo", "-c", "-f", str(sudoers)], check=True, capture_output=True)
        yield users
    finally:
        sudoers.unlink(missing_ok=True)
        for name in users.values():
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", name], capture_output=True)


def test_nopasswd_sudo_runs_the_script_as_root_and_puts_root_files(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, tmp_path: Path
) -> None:
    target = tmp_path / "etc" / "env.sh"  # tmp_path is root-only: the login user cannot write here
    target.parent.mkdir()
    with SSHTransport(sshd.access(user=sudo_users["nopasswd"], known_hosts=[known_hosts], sudo=True)) as host:
        result = host.run_script("id -u; id -un >&2")
        host.put(b"export X=1\n", str(target), 0o644)
        execs = host.exec_count
    assert (result.rc, result.stdout, result.stderr) == (0, "0\n", "root\n")
    assert target.read_bytes() == b"export X=1\n"
    assert (target.stat().st_uid, target.stat().st_mode & 0o7777) == (0, 0o644)
    assert execs == 2  # the script, and the install step of put()
    assert not any(p.startswith(".ascendprep-upload-") for p in os.listdir("/tmp"))


def test_password_sudo_without_a_password_says_what_to_do(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASCENDPREP_SUDO_PASSWORD", raising=False)
    name = sudo_users["password"]
    with SSHTransport(sshd.access(name="node4", user=name, known_hosts=[known_hosts], sudo=True)) as host:
        with pytest.raises(SudoError) as caught:
            host.run_script("touch /tmp/should-not-exist-sudo")
    assert str(caught.value) == (
        "sudo on node4 requires a password: set ASCENDPREP_SUDO_PASSWORD, use --ask-sudo-password, or configure NOPASSWD"
    )
    assert caught.value.kind == "sudo"


def test_password_sudo_with_the_password_from_the_environment(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", PASSWORD)
    name = sudo_users["password"]
    with SSHTransport(sshd.access(user=name, known_hosts=[known_hosts], sudo=True)) as host:
        first = host.run_script("id -u")
        second = host.run_script("echo $((1 + 1)); id -u")
        execs = host.exec_count
        shown = repr(host) + repr(vars(host))
    assert (first.rc, first.stdout, first.stderr) == (0, "0\n", "")
    assert (second.rc, second.stdout) == (0, "2\n0\n")
    assert execs == 4  # sudo -n to learn a password is needed, the one check, then -S for each script
    for text in (first.stdout, first.stderr, second.stdout, second.stderr, shown, caplog.text):
        assert PASSWORD not in text


def test_a_prompted_password_given_to_the_session_is_used(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--ask-sudo-password hands the password to the Session, not to the environment."""
    monkeypatch.delenv("ASCENDPREP_SUDO_PASSWORD", raising=False)
    access = sshd.access(user=sudo_users["password"], known_hosts=[known_hosts], sudo=True)
    with Session([access], forks=1, sudo_password=SudoPassword(PASSWORD)) as session:
        outcome = session.run(lambda transport, _: transport.run_script("id -u"))[access.name]
    assert outcome.ok, outcome.error
    assert outcome.value is not None and outcome.value.stdout == "0\n"
    assert "ASCENDPREP_SUDO_PASSWORD" not in os.environ


def test_wrong_password_is_reported_and_the_script_never_runs(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "not-the-password")
    marker = tmp_path / "ran"
    name = sudo_users["password"]
    with SSHTransport(sshd.access(user=name, known_hosts=[known_hosts], sudo=True)) as host:
        with pytest.raises(SudoError, match="rejected the sudo password") as caught:
            host.run_script(f"touch {marker}\n" * 5)
    assert "not-the-password" not in str(caught.value)
    assert not marker.exists()


def test_timeout_under_sudo_kills_the_root_processes(
    sshd: Sshd, known_hosts: Path, sudo_users: dict, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    with SSHTransport(sshd.access(user=sudo_users["nopasswd"], known_hosts=[known_hosts], sudo=True)) as host:
        result = host.run_script(f"sleep 300 & echo $! > {pidfile}; sleep 300", timeout=1)
    assert result.timed_out
    assert wait_until_gone([int(pidfile.read_text())]) == []


# --- one wrong password costs one failed attempt per host -----------------------------------
#
# sudo's PAM stack is replaced, inside a private mount namespace of a second sshd only, by one
# that records every failed attempt with pam_faillock (no delay, so no timing helps us), as
# hardened hosts do with ``deny=3``. faillock then says how many attempts sudo made.

PAM_SUDO = """auth required pam_faillock.so preauth dir={tally} deny=50
auth [success=1 default=bad] pam_unix.so nodelay
auth [default=die] pam_faillock.so authfail dir={tally} deny=50
auth sufficient pam_faillock.so authsucc dir={tally} deny=50
account required pam_unix.so
session required pam_permit.so
"""


@dataclass
class FaillockSshd:
    sshd: Sshd
    port: int
    tally: Path

    def access(self, name: str, user: str, known_hosts: Path):  # type: ignore[no-untyped-def]
        return self.sshd.access(name=name, user=user, known_hosts=[known_hosts], port=self.port, sudo=True)

    def failures(self, user: str) -> int:
        listed = subprocess.run(["faillock", "--dir", str(self.tally), "--user", user], capture_output=True, text=True)
        return len(re.findall(r"^\d{4}-\d\d-\d\d ", listed.stdout, re.MULTILINE))

    def reset(self, user: str) -> None:
        subprocess.run(["faillock", "--dir", str(self.tally), "--user", user, "--reset"], check=True)


@pytest.fixture(scope="module")
def faillock_sshd(sshd: Sshd, sudo_users: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaillockSshd]:
    if not (shutil.which("unshare") and shutil.which("faillock") and Path("/etc/pam.d/sudo").exists()):
        missing("counting sudo attempts needs unshare, faillock and /etc/pam.d/sudo")
    folder = tmp_path_factory.mktemp("faillock")
    tally = folder / "tally"
    tally.mkdir(mode=0o700)
    pam = folder / "sudo.pam"
    pam.write_text(PAM_SUDO.format(tally=tally))
    port = free_port()
    wrapper = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'mount --bind "{pam}" /etc/pam.d/sudo && exec "$@"',
        "sh",
    ]
    process, _ = start_sshd(find_sshd(), sshd.directory, port, wrapper, name="faillock-sshd")
    try:
        yield FaillockSshd(sshd, port, tally)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _known(tmp_path: Path, sshd: Sshd, port: int) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text(f"[127.0.0.1]:{port} {sshd.host_key_line}\n")
    return path


def test_a_wrong_password_costs_one_attempt_and_the_script_never_runs(
    faillock_sshd: FaillockSshd, sudo_users: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = sudo_users["password"]
    faillock_sshd.reset(user)
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "not-the-password")
    marker = tmp_path / "ran"
    known = _known(tmp_path, faillock_sshd.sshd, faillock_sshd.port)
    with SSHTransport(faillock_sshd.access("node1", user, known)) as host:
        with pytest.raises(SudoError, match="rejected the sudo password"):
            host.run_script(f"touch {marker}\n" * 5)
    assert faillock_sshd.failures(user) == 1
    assert not marker.exists()
    assert wait_until_gone([int(line.split()[0]) for line in sudo_processes_of(user)]) == []  # killed, not left waiting


def _three_hosts(faillock_sshd: FaillockSshd, user: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list:
    """One sshd under three names (so one faillock tally counts them all), the tally reset."""
    faillock_sshd.reset(user)
    monkeypatch.delenv("ASCENDPREP_SUDO_PASSWORD", raising=False)
    known = _known(tmp_path, faillock_sshd.sshd, faillock_sshd.port)
    return [faillock_sshd.access(f"node{i}", user, known) for i in (1, 2, 3)]


def test_the_password_is_checked_on_one_host_before_the_others_get_it(
    faillock_sshd: FaillockSshd, sudo_users: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Three hosts (one sshd under three names, so one faillock tally counts them all)."""
    user = sudo_users["password"]
    hosts = _three_hosts(faillock_sshd, user, monkeypatch, tmp_path)
    with Session(hosts, forks=3, sudo_password=SudoPassword("not-the-password")) as session:
        outcomes = session.run(lambda transport, _: transport.run_script("id -u"))
    assert faillock_sshd.failures(user) == 1  # not 3 per host, not 1 per host: once in all
    assert {o.kind for o in outcomes.values()} == {"sudo"}
    rejected = [name for name, o in outcomes.items() if "rejected the sudo password" in (o.error or "")]
    assert len(rejected) == 1
    for name, outcome in outcomes.items():
        if name not in rejected:
            assert outcome.error and outcome.error.startswith(
                f"sudo password not tried on {name}: it was rejected on {rejected[0]}"
            )


def test_the_right_password_is_checked_once_then_used_everywhere(
    faillock_sshd: FaillockSshd, sudo_users: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = sudo_users["password"]
    hosts = _three_hosts(faillock_sshd, user, monkeypatch, tmp_path)
    with Session(hosts, forks=3, sudo_password=SudoPassword(PASSWORD)) as session:
        outcomes = session.run(lambda transport, _: transport.run_script("id -u").stdout)
        execs = session.exec_counts()
    assert {name: o.value for name, o in outcomes.items()} == {f"node{i}": "0\n" for i in (1, 2, 3)}
    assert faillock_sshd.failures(user) == 0
    # sudo -n and the script on every host, and the one password check on one of them.
    assert sorted(execs.values()) == [2, 2, 3]


def sudo_processes_of(user: str) -> List[str]:
    """``sudo`` processes started by ``user`` (real uid: sudo itself runs with euid 0)."""
    listed = subprocess.run(["pgrep", "-a", "-x", "-U", user, "sudo"], capture_output=True, text=True)
    return listed.stdout.splitlines()
