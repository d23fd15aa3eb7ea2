"""The apply script keeps a step's output bounded on the node: its end, the exit status intact."""

from __future__ import annotations

from nodescript import run_node_script

from ascendprep.apply.script import parse_apply_output, render_apply_script
from ascendprep.base import limits


def _steps(tmp_path, *lines: str):
    prelude = render_apply_script([], None, lock_dir=str(tmp_path / "lock")).removesuffix("\nexit 0\n")
    script = prelude + "\n".join(lines) + "\nexit 0\n"
    result = run_node_script(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout, parse_apply_output(result.stdout)


def test_a_flooding_step_keeps_its_end_and_its_status(tmp_path):
    flood = "yes 1234567890 | head -c 3000000; echo 'Command execute failed!' >&2; exit 3"
    stdout, steps = _steps(tmp_path, f"_ap_step flood sh -c {flood!r}", "_ap_step after sh -c 'echo done'")
    assert len(stdout) < limits.REMOTE_CALL_OUTPUT_CAP + 4096
    assert steps["flood"].rc == 3
    assert steps["flood"].output.startswith(
        f"[output over {limits.REMOTE_CALL_OUTPUT_CAP // 1024} KB: only its end is kept]\n"
    )
    assert steps["flood"].output.endswith("Command execute failed!")
    assert (steps["after"].rc, steps["after"].output) == (0, "done")


def test_a_short_step_is_kept_whole_and_unmarked(tmp_path):
    _, steps = _steps(tmp_path, "_ap_step short sh -c 'echo hello; echo oops >&2; exit 2'", "_ap_step quiet true")
    assert (steps["short"].rc, steps["short"].output) == (2, "hello\noops")
    assert (steps["quiet"].rc, steps["quiet"].output) == (0, "")


def test_trailing_newlines_are_dropped_in_linear_time_however_many(tmp_path):
    """A step's trailing newlines go (as $(...) drops them); a tool printing the whole cap in
    newlines must not make the shell strip them one at a time (quadratic: minutes)."""
    lines = (
        "_ap_step blank_lines sh -c 'printf \"x\\n\\n\\n\\n\"'",
        "_ap_step no_newline sh -c 'printf y'",
        f'_ap_step only_newlines sh -c \'head -c {limits.REMOTE_CALL_OUTPUT_CAP} /dev/zero | tr "\\\\0" "\\\\n"; echo z; head -c 200000 /dev/zero | tr "\\\\0" "\\\\n"\'',
    )
    import time

    started = time.monotonic()
    _, steps = _steps(tmp_path, *lines)
    assert time.monotonic() - started < 30
    assert steps["blank_lines"].output == "x" and steps["no_newline"].output == "y"
    assert steps["only_newlines"].output.endswith("\nz") and steps["only_newlines"].rc == 0


def test_a_sysctl_step_reports_its_line_or_the_shells_error(tmp_path):
    """_ap_sysctl runs without the output pipeline (its output is the shell's own): the step still
    says what it wrote, and a value that cannot be written is a failed step with the reason."""
    target = tmp_path / "somaxconn"
    missing = tmp_path / "no" / "such_key"
    _, steps = _steps(
        tmp_path,
        f"_ap_step sysctl:ok _ap_sysctl net.core.somaxconn 4096 {target}",
        f"_ap_step sysctl:bad _ap_sysctl net.core.no_such_key 1 {missing}",
    )
    assert (steps["sysctl:ok"].rc, steps["sysctl:ok"].output) == (0, "net.core.somaxconn = 4096")
    assert target.read_text() == "4096\n"
    assert steps["sysctl:bad"].rc != 0 and str(missing) in steps["sysctl:bad"].output


def test_a_file_step_runs_without_the_output_pipeline(tmp_path):
    """_ap_write's output is the shell's own and coreutils' one-line errors, so its step runs
    without the tail pipeline (two processes fewer per file): with a ``tail`` that only fails on
    PATH, a file is still written and reported, and a failed write still says why."""
    import os

    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "tail").write_text("#!/bin/sh\necho 'tail must not run' >&2\nexit 99\n")
    (stubs / "tail").chmod(0o755)
    target = tmp_path / "etc" / "f.conf"
    blocked = tmp_path / "plain"
    blocked.write_text("a file, not a folder\n")
    prelude = render_apply_script([], None, lock_dir=str(tmp_path / "lock")).removesuffix("\nexit 0\n")
    script = (
        prelude
        + "\n".join(
            [
                f"_ap_step file:ok _ap_write {target} 644 'hello\n' 1",
                f"_ap_step file:bad _ap_write {blocked}/x.conf 644 'x' 1",
            ]
        )
        + "\nexit 0\n"
    )
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    result = run_node_script(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60, env=env)
    steps = parse_apply_output(result.stdout)
    assert (steps["file:ok"].rc, steps["file:ok"].output) == (0, f"wrote {target}")
    assert target.read_text() == "hello\n" and oct(target.stat().st_mode & 0o777) == "0o644"
    assert steps["file:bad"].rc != 0 and str(blocked) in steps["file:bad"].output
    assert "tail must not run" not in result.stdout + result.stderr
