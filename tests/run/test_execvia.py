"""``--exec-via``: the prefix is checked word by word, and the wrapped gather runs through it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.run.execvia import ExecViaError, explain_failure, parse_exec_via, wrap_script


@pytest.mark.parametrize(
    "value",
    [
        "docker exec trainer",
        "kubectl exec -n ml trainer-0 --",
        "enroot exec 4242",
        "/opt/bin/wrap --user=1000:1000 ns/pod",
    ],
)
def test_plain_prefixes_are_accepted(value):
    assert parse_exec_via(value).text == value


@pytest.mark.parametrize(
    "value, says",
    [
        ("docker exec trainer; rm -rf /", "word 3"),
        ("docker exec $(id)", "word 3"),
        ("docker exec 'a b'", "word 3"),
        ("docker exec trainer > /tmp/x", "word 4"),
        ("-v docker", "not a command name"),
        ("./wrap", "not a command name"),
        ("docker exec 'unterminated", "No closing quotation"),
        ("", "give a command prefix"),
        ("x " * 40, "more than 16 words"),
        ("docker\nexec", "one line"),
    ],
)
def test_shell_syntax_and_odd_words_are_refused_with_the_word(value, says):
    with pytest.raises(ExecViaError) as info:
        parse_exec_via(value)
    assert says in str(info.value)


def _wrapper(tmp_path: Path, body: str) -> str:
    path = tmp_path / "wrap"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _run(tmp_path: Path, via: str):
    script = wrap_script(render_gather_script(0, sys.executable, per_command_timeout=5), parse_exec_via(via))
    result = run_node_script(
        ["sh", "-s"],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    return explain_failure(parse_gather_output(result.stdout), parse_exec_via(via), result.returncode, result.stderr)


def test_the_gather_runs_through_the_wrapper_and_carries_the_hosts_view(tmp_path):
    marker = tmp_path / "ran"
    facts = _run(tmp_path, _wrapper(tmp_path, f'touch {marker}\nexec "$@"\n'))
    assert marker.exists()
    assert facts.hostname == os.uname().nodename
    assert facts.job.host_visible is not None and facts.job.host_visible.via == str(tmp_path / "wrap")
    assert facts.job.visible is not None and not facts.errors_for("gather")


def test_a_wrapper_that_does_not_start_is_one_named_error(tmp_path):
    facts = _run(
        tmp_path, _wrapper(tmp_path, "echo 'Error response from daemon: No such container: trainer' >&2\nexit 1\n")
    )
    (error,) = facts.errors_for("gather")
    assert "did not start the checks (exit 1)" in error.message and "No such container: trainer" in error.message
    assert facts.job is None


def test_the_cli_refuses_a_bad_prefix_before_anything_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascendprep",
            "verify",
            str(tmp_path / "missing.yaml"),
            "--exec-via",
            "docker exec t;reboot",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert result.returncode == 2 and "--exec-via: word 3" in result.stderr and "Traceback" not in result.stderr


def test_a_step_runs_through_the_wrapper_under_its_name_and_without_one_as_it_is(tmp_path):
    from ascendprep.run.execvia import wrap_step

    marker = tmp_path / "entered"
    via = parse_exec_via(_wrapper(tmp_path, f'touch {marker}\nexec "$@"\n'))
    script = 'echo "it\'s $0"; printf \'%s\\n\' "$(cat)"\n'
    assert wrap_step(script, None, "n1", "ping") is script
    done = run_node_script(
        ["sh", "-s"], input=wrap_step(script, via, "n1", "HCCS ping"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "it's ascendprep-hccs-ping\n\n"  # its stdin is /dev/null, not the rest of ours
    assert marker.exists()


def test_a_step_too_long_for_one_argument_is_refused_naming_the_limit():
    from ascendprep.base import limits
    from ascendprep.remote.errors import RemoteError
    from ascendprep.run.execvia import wrap_step

    via = parse_exec_via("env")
    fits = "#" * (limits.EXEC_VIA_SCRIPT_MAX_BYTES - 8) + "\necho ok"
    done = run_node_script(
        ["sh", "-s"], input=wrap_step(fits, via, "n1", "ping"), capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr  # the longest script still runs
    with pytest.raises(RemoteError) as info:
        wrap_step(fits + "é", via, "n1", "ping")
    assert info.value.host == "n1"
    assert f"n1: the ping script is {limits.EXEC_VIA_SCRIPT_MAX_BYTES + 2} bytes" in str(info.value)
    assert f"at most {limits.EXEC_VIA_SCRIPT_MAX_BYTES} bytes" in str(info.value)
