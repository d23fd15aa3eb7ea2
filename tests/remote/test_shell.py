"""The fixed command lines and helper scripts, run by real shells (dash and bash)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from sshd_server import wait_until_gone

from ascendprep.remote import shell

SHELLS = [s for s in ("dash", "bash", "sh") if shutil.which(s)]


def test_launch_command_carries_no_script_and_quotes_the_launcher() -> None:
    plain = shell.launch_command(shell.NO_SUDO)
    assert plain.startswith("sh -c '") and plain.endswith("exec sh -s'")
    assert shell.launch_command(shell.SUDO_NOPASSWD).startswith("LC_ALL=C sudo -n sh -c ")
    password = shell.launch_command(shell.SUDO_PASSWORD)
    assert password.startswith("sh -c 'echo \"@ascendprep-sudo $$\" >&2; LC_ALL=C; export LC_ALL; exec sudo -k -S -p '")
    with pytest.raises(ValueError):
        shell.launch_command("sometimes")


@pytest.mark.parametrize("login_shell", SHELLS)
def test_launcher_reports_its_process_group_then_runs_stdin(login_shell: str) -> None:
    script = b"echo out; echo err >&2; exit 7\n"
    done = subprocess.run(
        [login_shell, "-c", shell.launch_command(shell.NO_SUDO)],
        input=script,
        capture_output=True,
        start_new_session=True,
    )
    pgid, stderr = shell.split_started_marker(done.stderr)
    assert done.returncode == 7
    assert done.stdout == b"out\n"
    assert stderr == b"err\n"
    assert pgid is not None and pgid > 1


def test_marker_is_found_after_a_sudo_lecture_and_only_the_first_is_removed() -> None:
    stderr = b"We trust you have received the usual lecture\n@ascendprep-started 4242\nreal\n@ascendprep-started 1\n"
    pgid, rest = shell.split_started_marker(stderr)
    assert pgid == 4242
    assert rest == b"We trust you have received the usual lecture\nreal\n@ascendprep-started 1\n"
    assert shell.split_started_marker(b"sudo: a password is required\n") == (None, b"sudo: a password is required\n")


@pytest.mark.parametrize("killer_shell", SHELLS)
def test_kill_group_script_kills_a_group_even_when_it_ignores_sigterm(killer_shell: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    victim = subprocess.Popen(
        ["sh", "-c", f"(trap '' TERM; exec sleep 300) & echo $! > {pidfile}; sleep 300"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stubborn = int(pidfile.read_text())
    done = subprocess.run(
        [killer_shell, "-s"],
        input=shell.kill_group_script(victim.pid, grace_seconds=0.5).encode(),
        capture_output=True,
        timeout=20,
    )
    victim.wait(timeout=5)
    assert done.returncode == 0, done.stderr
    assert wait_until_gone([stubborn]) == []


def test_kill_group_script_is_quiet_for_a_group_that_is_gone() -> None:
    done = subprocess.run(["sh", "-s"], input=shell.kill_group_script(2**22 + 12345).encode(), capture_output=True)
    assert (done.returncode, done.stderr) == (0, b"")


@pytest.mark.parametrize("bad", [0, 1, -5, True, "12"])
def test_kill_group_script_refuses_nonsense_groups(bad: object) -> None:
    with pytest.raises(ValueError):
        shell.kill_group_script(bad)  # type: ignore[arg-type]


def test_install_script_moves_an_awkwardly_named_file_into_place(tmp_path: Path) -> None:
    folder = tmp_path / "it's a dir; rm -rf x"
    folder.mkdir()
    source = tmp_path / "upload $(touch pwned)"
    source.write_bytes(b"payload\n")
    destination = folder / "env.sh"
    destination.write_text("old\n")
    done = subprocess.run(
        ["sh", "-s"],
        input=shell.install_file_script(str(source), str(destination), 0o640).encode(),
        capture_output=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert destination.read_bytes() == b"payload\n"
    assert oct(destination.stat().st_mode & 0o7777) == oct(0o640)
    assert not source.exists()
    assert not (tmp_path / "pwned").exists()
    assert sorted(os.listdir(folder)) == ["env.sh"]  # no temp file left behind


def test_install_script_fails_cleanly_when_the_folder_is_missing(tmp_path: Path) -> None:
    source = tmp_path / "upload"
    source.write_bytes(b"x")
    script = shell.install_file_script(str(source), str(tmp_path / "missing" / "f"), 0o644)
    done = subprocess.run(["sh", "-s"], input=script.encode(), capture_output=True)
    assert done.returncode != 0
    assert not source.exists()  # the upload is not left lying around in /tmp


@pytest.mark.parametrize("path", ["relative/file", "/dir/", "/a\nb", ""])
def test_put_arguments_reject_paths_that_are_not_absolute_files(path: str) -> None:
    with pytest.raises(ValueError):
        shell.check_put_arguments(path, 0o644)


@pytest.mark.parametrize("mode", [-1, 0o10000, 1.5, True])
def test_put_arguments_reject_impossible_modes(mode: object) -> None:
    with pytest.raises(ValueError):
        shell.check_put_arguments("/tmp/x", mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("login_shell", SHELLS)
def test_write_file_script_writes_every_byte_atomically(login_shell: str, tmp_path: Path) -> None:
    data = b"-n %s %% \\ ' \" $HOME `id`\n" + bytes(range(256)) * 20  # more than one printf chunk
    target = tmp_path / "f"
    done = subprocess.run(
        [login_shell, "-s"], input=shell.write_file_script(data, str(target), 0o640).encode(), capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == data and target.stat().st_mode & 0o7777 == 0o640
    assert os.listdir(tmp_path) == ["f"]


@pytest.mark.parametrize("login_shell", SHELLS)
def test_write_file_script_refuses_a_directory_and_leaves_nothing(login_shell: str, tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    script = shell.write_file_script(b"data", str(folder), 0o600)
    done = subprocess.run([login_shell, "-s"], input=script.encode(), capture_output=True)
    assert done.returncode == 1 and done.stderr.decode().strip() == f"{folder} is a directory"
    assert os.listdir(tmp_path) == ["dir"] and os.listdir(folder) == []


@pytest.mark.parametrize("login_shell", SHELLS)
def test_write_file_script_removes_its_temp_file_when_a_step_fails(login_shell: str, tmp_path: Path) -> None:
    """The EXIT trap removes the temp file on a failure after it was written (a `false` put in)."""
    script = shell.write_file_script(b"data", str(tmp_path / "f"), 0o600).replace('chmod 600 "$t"', "false")
    script = script.replace('} >"$t"\n', '} >"$t"\nfalse\n')
    done = subprocess.run([login_shell, "-s"], input=script.encode(), capture_output=True)
    assert done.returncode != 0
    assert os.listdir(tmp_path) == []


def test_sudo_pid_marker_and_rejection_are_recognised() -> None:
    pid, rest = shell.split_sudo_pid(b"@ascendprep-sudo 4242\nSorry, try again.\n")
    assert (pid, rest) == (4242, b"Sorry, try again.\n")
    assert shell.sudo_rejected(rest) and not shell.sudo_rejected(b"@ascendprep-started 9\n")
    assert shell.kill_pid_command(4242) == "kill -s KILL 4242"
    with pytest.raises(ValueError):
        shell.kill_pid_command(1)
