"""The rendered apply script, run by a real sh: backups, fsync'd atomic writes, temp files cleaned
on any exit, a root-only lock folder, and hccn_tool busy answers retried (issues 9 and 14)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from nodescript import run_node_script

from ascendprep.apply.script import LOCKED_RC, parse_apply_output, render_apply_script
from ascendprep.desired.envfiles import MANAGED_HEADER
from ascendprep.plan.changes import Change, SetNpuAddress, WriteFile
from ascendprep.plan.drift import sha256_text


def _write(target: Path, content: str) -> Change:
    return WriteFile("n1", None, str(target), sha256_text(content), content, 0o644)


def _run(script: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_node_script(
        [shutil.which("sh") or "/bin/sh", "-s"], input=script, capture_output=True, text=True, env=env, timeout=timeout
    )


def test_the_original_of_a_foreign_file_is_kept_for_good(tmp_path: Path):
    target = tmp_path / "sysctl.d" / "90-x.conf"
    target.parent.mkdir()
    target.write_text("vm.swappiness = 5\n")
    lock = str(tmp_path / "lock")
    first = _run(render_apply_script([_write(target, f"{MANAGED_HEADER}\na = 1\n")], None, lock_dir=lock))
    assert parse_apply_output(first.stdout)[f"file:{target}"].ok, first.stdout + first.stderr
    assert "kept the original as" in first.stdout
    orig = Path(f"{target}.ascendprep.orig")
    assert orig.read_text() == "vm.swappiness = 5\n"
    second = _run(render_apply_script([_write(target, f"{MANAGED_HEADER}\na = 2\n")], None, lock_dir=lock))
    assert parse_apply_output(second.stdout)[f"file:{target}"].ok
    assert orig.read_text() == "vm.swappiness = 5\n"  # not overwritten by the next apply
    assert Path(f"{target}.ascendprep.bak").read_text() == f"{MANAGED_HEADER}\na = 1\n"
    assert target.read_text() == f"{MANAGED_HEADER}\na = 2\n"
    assert sorted(p.name for p in target.parent.iterdir()) == [
        "90-x.conf",
        "90-x.conf.ascendprep.bak",
        "90-x.conf.ascendprep.orig",
    ]


def test_a_file_ascendprep_wrote_gets_no_orig(tmp_path: Path):
    target = tmp_path / "env.sh"
    target.write_text(f"{MANAGED_HEADER}\nexport A=1\n")
    done = _run(
        render_apply_script([_write(target, f"{MANAGED_HEADER}\nexport A=2\n")], None, lock_dir=str(tmp_path / "lock"))
    )
    assert parse_apply_output(done.stdout)[f"file:{target}"].ok
    assert not Path(f"{target}.ascendprep.orig").exists()
    assert Path(f"{target}.ascendprep.bak").read_text() == f"{MANAGED_HEADER}\nexport A=1\n"


def test_a_link_planted_at_the_backup_name_is_replaced_not_written_through(tmp_path: Path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "conf"
    target.write_text("old\n")
    Path(f"{target}.ascendprep.bak").symlink_to(victim)
    Path(f"{target}.ascendprep.orig").unlink(missing_ok=True)
    done = _run(render_apply_script([_write(target, "new\n")], None, lock_dir=str(tmp_path / "lock")))
    assert parse_apply_output(done.stdout)[f"file:{target}"].ok, done.stdout
    assert victim.read_text() == "precious\n"
    backup = Path(f"{target}.ascendprep.bak")
    assert not backup.is_symlink() and backup.read_text() == "old\n"


def test_writes_are_fsynced_before_the_rename_and_temp_files_go_on_sigterm(tmp_path: Path):
    """A ``sync`` that hangs stands for a slow disk: the file is not renamed before it returns,
    and a SIGTERM meanwhile leaves neither a temp file nor a half-written target."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sync").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "synced"}\nexec sleep 30\n')
    (fake / "sync").chmod(0o755)
    target = tmp_path / "etc" / "conf"
    target.parent.mkdir()
    target.write_text("old\n")
    script = render_apply_script([_write(target, "new\n")], None, lock_dir=str(tmp_path / "lock"))
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    proc = subprocess.Popen(
        ["sh", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 20
    while not (tmp_path / "synced").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    synced = (tmp_path / "synced").read_text()
    assert ".ascendprep." in synced  # the temp file is synced, before any rename
    assert target.read_text() == "old\n"
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)
    assert proc.returncode == 143
    # The step's subshell got the SIGTERM too and removes its temp file on its way out, which
    # may finish just after the script's own exit.
    deadline = time.monotonic() + 10
    while len(list(target.parent.iterdir())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(p.name for p in target.parent.iterdir()) == ["conf"]
    assert target.read_text() == "old\n"


def _busy_tool(tmp_path: Path, busy_times: int) -> Path:
    tool = tmp_path / "hccn_tool"
    count = tmp_path / "count"
    tool.write_text(f"""#!/bin/sh
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
if [ "$n" -le {busy_times} ]; then echo "hccn_tool is busy, please try again."; exit 11; fi
echo "Cmd executed successfully!"
""")
    tool.chmod(0o755)
    return tool


def _ip_change(npu: int = 0) -> Change:
    return SetNpuAddress("n1", None, npu, "10.20.0.1", "255.255.255.0")


def test_a_busy_hccn_tool_is_tried_again_and_the_tries_reported(tmp_path: Path):
    tool = _busy_tool(tmp_path, busy_times=1)
    done = _run(render_apply_script([_ip_change()], str(tool), lock_dir=str(tmp_path / "lock"), busy_retries=2))
    step = parse_apply_output(done.stdout)["hccn.ip:0"]
    assert (step.rc, step.tries) == (0, 2)
    assert step.message == "Cmd executed successfully!\n(after 2 tries: hccn_tool was busy)"


def test_a_tool_still_busy_after_the_retries_fails_with_the_count(tmp_path: Path):
    tool = _busy_tool(tmp_path, busy_times=99)
    done = _run(render_apply_script([_ip_change()], str(tool), lock_dir=str(tmp_path / "lock"), busy_retries=1))
    step = parse_apply_output(done.stdout)["hccn.ip:0"]
    assert (step.rc, step.tries) == (11, 2)
    assert step.message.endswith("(hccn_tool was still busy after 2 tries)")
    assert (tmp_path / "count").read_text().strip() == "2"


def test_other_failures_are_not_retried(tmp_path: Path):
    tool = tmp_path / "hccn_tool"
    tool.write_text(
        f"#!/bin/sh\necho x >> {tmp_path / 'calls'}\necho 'The ip address configured is conflicted!' >&2; exit 7\n"
    )
    tool.chmod(0o755)
    done = _run(render_apply_script([_ip_change()], str(tool), lock_dir=str(tmp_path / "lock")))
    step = parse_apply_output(done.stdout)["hccn.ip:0"]
    assert (step.rc, step.tries, step.message) == (7, 1, "The ip address configured is conflicted!")
    assert (tmp_path / "calls").read_text() == "x\n"


# ------------------------------------------------------------------ the lock


def test_the_lock_folder_is_made_root_only(tmp_path: Path):
    lock = tmp_path / "lock"
    done = _run(render_apply_script([], None, lock_dir=str(lock)))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(lock.stat().st_mode) == 0o700 and (lock / "apply.lock").is_file()
    lock.chmod(0o777)  # loosened by someone: put right on the next apply
    assert _run(render_apply_script([], None, lock_dir=str(lock))).returncode == 0
    assert stat.S_IMODE(lock.stat().st_mode) == 0o700


def test_a_held_lock_stops_a_second_apply(tmp_path: Path):
    lock = tmp_path / "lock"
    assert _run(render_apply_script([], None, lock_dir=str(lock))).returncode == 0
    with open(lock / "apply.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = _run(render_apply_script([], None, lock_dir=str(lock)))
    assert done.returncode == LOCKED_RC and "another ascendprep apply is running" in done.stderr


def test_links_in_the_lock_path_are_not_followed(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "lock"
    linked.symlink_to(elsewhere)
    done = _run(render_apply_script([], None, lock_dir=str(linked)))
    assert done.returncode == 1 and "is not a plain directory (a link?)" in done.stderr
    real = tmp_path / "lock2"
    real.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (real / "apply.lock").symlink_to(victim)
    done = _run(render_apply_script([], None, lock_dir=str(real)))
    assert done.returncode == 1 and "is a link: refusing to follow it" in done.stderr
    assert victim.read_text() == "precious\n"


def test_no_flock_is_an_error_not_an_unlocked_apply(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in (
        "mkdir",
        "chmod",
        "rm",
        "head",
        "mktemp",
        "cp",
        "mv",
        "sync",
        "dirname",
        "tr",
        "timeout",
        "sleep",
        "cat",
    ):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    target = tmp_path / "conf"
    done = _run(
        render_apply_script([_write(target, "x\n")], None, lock_dir=str(tmp_path / "lock")), env={"PATH": str(bin_dir)}
    )
    assert done.returncode == 1
    assert "flock is not installed on this host" in done.stderr
    assert not target.exists() and parse_apply_output(done.stdout) == {}
