"""The per-NPU queries of the gather script and the pings of verify run side by side on the node,
NPU by NPU and bounded, and read back exactly as when the NPUs run one after the other."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest
from nodescript import run_node_script

from ascendprep.base import limits
from ascendprep.base.yamlsource import InputError
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.ping import parse_ping_output, render_ping_script
from ascendprep.facts.sections import parse_transcript
from ascendprep.facts.shell import UnsafeValue, checked_output_cap_override
from ascendprep.facts.unit import PLAN

#: Seconds each hccn_tool call of the timed stand-in takes (a driver round trip).
CALL_S = 0.3

_TIMED_TOOL = """#!/bin/sh
# hccn_tool that takes CALL_S seconds and logs "start end" (ns) of every call, then answers as the
# fixtures' stand-in does.
start=$(date +%s%N)
sleep {call_s}
"$REAL_HCCN_TOOL" "$@"
rc=$?
echo "$start $(date +%s%N)" >>"$FAKE_STATE/calls"
exit $rc
"""


def _timed_host(tmp_path: Path, fixtures: Path) -> Tuple[Path, dict]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    real = bin_dir / "hccn_tool.real"
    shutil.copyfile(fixtures / "fake_tools" / "hccn_tool", real)
    tool = bin_dir / "hccn_tool"
    tool.write_text(_TIMED_TOOL.format(call_s=CALL_S))
    for path in (real, tool):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "REAL_HCCN_TOOL": str(real),
        "FAKE_FIXTURES": str(fixtures),
        "FAKE_STATE": str(state),
        "TMPDIR": str(tmp_path),
    }
    return state, env


def _most_at_once(calls: List[Tuple[int, int]]) -> int:
    """The largest number of calls whose [start, end] intervals overlap at one instant."""
    events = sorted([(start, 1) for start, _ in calls] + [(end, -1) for _, end in calls], key=lambda e: (e[0], e[1]))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def _gather(tmp_path: Path, fixtures: Path, parallel: int, shell: str = "sh"):
    state, env = _timed_host(tmp_path / f"p{parallel}", fixtures)
    script = render_gather_script(
        4, "python3", per_command_timeout=10, ascend_home=str(tmp_path / "none"), phase=PLAN, parallel=parallel
    )
    out = run_node_script([shell, "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    calls = [tuple(int(word) for word in line.split()) for line in (state / "calls").read_text().splitlines()]
    return out.stdout, calls


@pytest.mark.parametrize("shell", [shell for shell in ("dash", "bash") if shutil.which(shell)])
def test_npus_run_side_by_side_within_the_bound_and_read_back_as_in_turn(tmp_path, fixtures_dir, shell):
    serial_out, serial_calls = _gather(tmp_path, fixtures_dir, parallel=1, shell=shell)
    wide_out, wide_calls = _gather(tmp_path, fixtures_dir, parallel=2, shell=shell)

    # plan: 4 queries per NPU on 4 NPUs, and NPU 0's -tls answers "busy" once (one call more)
    assert len(serial_calls) == len(wide_calls) == 17
    assert _most_at_once(serial_calls) == 1
    assert _most_at_once(wide_calls) == 2  # side by side, never more than asked for

    # the same per-NPU sections in the same order, and the same facts
    def shape(text):
        sections = parse_transcript(text, "gather").sections
        return [(s.name, s.attrs.get("npu"), s.rc, s.tries, s.stdout) for s in sections if s.name.startswith("hccn.")]

    assert shape(wide_out) == shape(serial_out)
    assert [s[1] for s in shape(wide_out) if s[0] == "hccn.ip"] == ["0", "1", "2", "3"]
    serial, wide = parse_gather_output(serial_out), parse_gather_output(wide_out)
    assert wide.npus == serial.npus and wide.errors == serial.errors
    assert wide.npus[0].tls is not None and wide.npus[2].ip == "10.20.0.12"  # busy once, then answered


def test_the_default_bound_runs_every_npu_of_an_8_npu_server_at_once(tmp_path, fixtures_dir):
    """(How much wall time that saves is measured by bench/bench_node_parallel.py, not here.)"""
    state, env = _timed_host(tmp_path, fixtures_dir)
    script = render_gather_script(8, "python3", per_command_timeout=10, ascend_home=str(tmp_path / "none"), phase=PLAN)
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    calls = [tuple(int(word) for word in line.split()) for line in (state / "calls").read_text().splitlines()]
    assert _most_at_once(calls) == 8  # the default bound is one job per NPU of an 8-NPU server
    assert sorted(parse_gather_output(out.stdout).npus) == list(range(8))


@pytest.mark.parametrize("parallel", [0, 65, True, "4"])
def test_a_bad_bound_is_refused_with_its_name(parallel):
    with pytest.raises(UnsafeValue, match="parallel must be"):
        render_gather_script(8, "python3", parallel=parallel)


def test_a_job_that_could_not_write_its_sections_is_run_in_turn(tmp_path, fixtures_dir):
    """A job without scratch space (its directory is taken by a file) loses nothing: the main
    shell runs its NPUs after the others, in order."""
    state, env = _timed_host(tmp_path, fixtures_dir)
    script = render_gather_script(
        2, "python3", per_command_timeout=10, ascend_home=str(tmp_path / "none"), phase=PLAN, parallel=2
    )
    # job 1 cannot create its scratch directory: a file of that name is there first
    script = script.replace(
        "AP_ROOT=$AP_TMP\n", 'AP_ROOT=$AP_TMP\nmkdir "$AP_ROOT/each.1"; : >"$AP_ROOT/each.1/job.1"\n', 1
    )
    script = script.replace('\tif mkdir "$ap_dir"; then', '\tif mkdir -p "$ap_dir"; then', 1)
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    facts = parse_gather_output(out.stdout)
    names = [
        (s.name, s.attrs.get("npu"))
        for s in parse_transcript(out.stdout, "gather").sections
        if s.name.startswith("hccn.")
    ]
    assert names == [(name, npu) for npu in "01" for name in ("hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls")]
    assert facts.npus[1].ip is None and facts.npus[0].ip == "10.20.0.10" and not [e for e in facts.errors if e.npu == 1]


# -- the ping matrix of verify -------------------------------------------------------------------


def test_pings_run_side_by_side_per_npu_and_come_back_in_the_order_asked(tmp_path, fixtures_dir):
    state, env = _timed_host(tmp_path, fixtures_dir)
    # interleaved: NPU 0, 1, 0, 1, 2; the stand-in answers 10.0.0.2 fully, 10.0.0.3 with one loss
    pairs = [(0, "10.0.0.2"), (1, "10.0.0.3"), (0, "10.0.0.3"), (1, "10.0.0.2"), (2, "10.0.0.2")]
    script = render_ping_script(pairs, per_command_timeout=10, parallel=2)
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    calls = [tuple(int(word) for word in line.split()) for line in (state / "calls").read_text().splitlines()]

    assert len(calls) == 5 and _most_at_once(calls) == 2
    results = parse_ping_output(out.stdout)
    assert [(r.npu, r.target) for r in results] == pairs
    assert [r.ok for r in results] == [True, False, False, True, True]
    # one NPU's pings never overlap: its sections are in the order given, NPU by NPU
    printed = [(s.npu, s.attrs["target"]) for s in parse_transcript(out.stdout, "ping").sections if s.name == "ping"]
    assert printed == [(0, "10.0.0.2"), (0, "10.0.0.3"), (1, "10.0.0.3"), (1, "10.0.0.2"), (2, "10.0.0.2")]


def test_one_ping_at_a_time_when_the_environment_says_one_job(tmp_path, fixtures_dir, monkeypatch):
    """ASCENDPREP_NPU_PROBE_JOBS=1: for a driver that answers every second caller "busy"."""
    monkeypatch.setenv(limits.NPU_PROBE_JOBS_ENV, "1")
    state, env = _timed_host(tmp_path, fixtures_dir)
    script = render_ping_script([(0, "10.0.0.2"), (1, "10.0.0.2"), (2, "10.0.0.2")], per_command_timeout=10)
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    calls = [tuple(int(word) for word in line.split()) for line in (state / "calls").read_text().splitlines()]
    assert len(calls) == 3 and _most_at_once(calls) == 1
    assert all(result.ok for result in parse_ping_output(out.stdout))


def test_a_script_without_pairs_runs_and_reports_none(tmp_path):
    out = run_node_script(
        ["sh", "-s"],
        input=render_ping_script([], 5),
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert parse_ping_output(out.stdout) == [] and parse_transcript(out.stdout, "ping").complete


@pytest.mark.parametrize("value", ["0", "65", "many", "-1"])
def test_a_bad_jobs_override_stops_the_command_before_any_host(monkeypatch, value):
    monkeypatch.setenv(limits.NPU_PROBE_JOBS_ENV, value)
    with pytest.raises(InputError, match=limits.NPU_PROBE_JOBS_ENV):
        checked_output_cap_override()
    with pytest.raises(UnsafeValue, match="from 1 to 64"):
        render_gather_script(8, "python3")


@pytest.mark.parametrize("shell", [shell for shell in ("dash", "bash") if shutil.which(shell)])
def test_a_reader_that_goes_away_ends_the_script_and_its_jobs_without_leftovers(tmp_path, fixtures_dir, shell):
    """The SSH channel closes mid-run (Ctrl-C on the controller): the script ends at its next
    write, its exit trap stops any per-NPU job and removes the scratch files."""
    state, env = _timed_host(tmp_path, fixtures_dir)
    script = render_gather_script(8, "python3", per_command_timeout=10, ascend_home=str(tmp_path / "none"), phase=PLAN)
    child = subprocess.Popen(
        [shell, "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(script.encode())
    child.stdin.close()
    assert child.stdout.readline().startswith(b"@@ascendprep gather v2 ")
    child.stdout.close()  # the reader is gone
    assert child.wait(timeout=60) == 141  # ended by its PIPE trap, not run to the end
    assert not [path.name for path in tmp_path.iterdir() if path.name.startswith("ascendprep.")]
