"""NPU pings from one node: rendering, parsing the device's summary, and a local run that retries
a busy hccn_tool and cuts off a hung one."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time

import pytest
from labsupport import skip_or_fail
from nodescript import run_node_script

from ascendprep.facts.model import PingResult
from ascendprep.facts.ping import parse_ping_output, parse_ping_summary, parse_ping_times, render_ping_script
from ascendprep.facts.shell import UnsafeValue


@pytest.mark.parametrize(
    "name, summary",
    [
        ("ping/ping_ok.out", (3, 3, 0.0)),
        ("ping/ping_partial_loss.out", (3, 2, 33.33)),
        ("ping/ping_all_lost.out", (3, 0, 100.0)),
    ],
)
def test_summary_line(fixture_text, name, summary):
    assert parse_ping_summary(fixture_text(name)) == summary


@pytest.mark.parametrize(
    "name, times",
    [
        # docs/ascend-reference.md, -ping: the real output (3 replies: 1.418, 0.034, 0.040 ms)
        ("ping/ping_ok.out", (pytest.approx((1.418 + 0.034 + 0.040) / 3), 1.418)),
        ("ping/ping_partial_loss.out", (pytest.approx((0.512 + 0.047) / 2), 0.512)),  # the lost one has no time
        ("ping/ping_all_lost.out", None),
    ],
)
def test_reply_times(fixture_text, name, times):
    assert parse_ping_times(fixture_text(name)) == times


def test_reply_times_of_hostile_output_are_bounded():
    line = "recv seq=1,time=0.5ms\n"
    assert parse_ping_times(line * 5000 + "recv seq=2,time=900.0ms\n") == (0.5, 0.5)  # the first 1,000 only
    assert parse_ping_times("recv seq=1,time=" + "9" * 5000 + "ms\n") is None  # not a time the tool prints
    assert parse_ping_times("recv seq=1,time=1.2.3ms\n") is None


def test_results_from_output(fixture_text, transcript):
    text = transcript(
        "ping",
        [
            {"name": "settings", "stdout": "timeout=10\n"},
            {"name": "pairs", "stdout": "3 29.1.137.205\n0 192.168.100.111\n1 192.168.101.111\n2 192.168.102.111\n"},
            {"name": "ping", "attrs": {"npu": 3, "target": "29.1.137.205"}, "stdout": fixture_text("ping/ping_ok.out")},
            {
                "name": "ping",
                "attrs": {"npu": 0, "target": "192.168.100.111"},
                "rc": 1,
                "stdout": fixture_text("ping/ping_partial_loss.out"),
                "stderr": fixture_text("ping/ping_failed.err"),
            },
            {"name": "ping", "attrs": {"npu": 1, "target": "192.168.101.111"}, "rc": 124},
        ],
        done=False,
    )
    results = parse_ping_output(text)
    assert results[0] == PingResult(
        3, "29.1.137.205", True, 3, 3, 0.0, None, average_ms=pytest.approx(1.492 / 3), max_ms=1.418
    )
    assert results[1] == PingResult(
        0, "192.168.100.111", False, 3, 2, 33.33, "1 of 3 packets lost (33.33% loss)", pytest.approx(0.2795), 0.512
    )
    assert results[2].ok is False
    assert results[2].average_ms is None and results[2].max_ms is None
    assert results[2].error == "hccn_tool -i 1 -ping -g address 192.168.101.111 timed out after 10s and was killed"
    assert results[3].npu == 2 and not results[3].ok
    assert results[3].error.startswith("not run: output stopped before the script finished")


@pytest.mark.parametrize(
    "pairs, message",
    [
        ([(100, "10.0.0.1")], "NPU device id must be between 0 and 99"),
        ([("0", "10.0.0.1")], "NPU device id must be an integer"),
        ([(0, "10.0.0.1; reboot")], "is not an IPv4 address"),
        ([(0, "10.0.0.256")], "is not an IPv4 address"),
        ([(0, "::1")], "is not an IPv4 address"),
        ([(0, 167772161)], "must be an IPv4 address string"),
    ],
)
def test_bad_pairs_are_refused(pairs, message):
    with pytest.raises(UnsafeValue, match=message):
        render_ping_script(pairs, 10)


def test_script_parses_in_dash(tmp_path):
    if not shutil.which("dash"):
        skip_or_fail("dash is not installed (apt-get install dash)")
    script = tmp_path / "ping.sh"
    script.write_text(render_ping_script([(0, "10.0.0.2"), (7, "10.0.0.9")], 10))
    assert subprocess.run(["dash", "-n", str(script)]).returncode == 0


def test_local_run_pings_in_order_with_retries_and_timeouts(tmp_path, fixtures_dir):
    tool = tmp_path / "bin" / "hccn_tool"
    tool.parent.mkdir()
    shutil.copyfile(fixtures_dir / "fake_tools" / "hccn_tool", tool)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "PATH": f"{tool.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_FIXTURES": str(fixtures_dir),
        "FAKE_STATE": str(state),
        "TMPDIR": str(tmp_path),
    }
    pairs = [(0, "10.0.0.2"), (1, "10.0.0.3"), (2, "10.0.0.4"), (3, "10.0.0.5"), (4, "10.0.0.6"), (5, "10.0.0.7")]
    script = render_ping_script(pairs, per_command_timeout=1, busy_retries=1)

    started = time.monotonic()
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=60).stdout
    assert time.monotonic() - started < 20
    results = {result.target: result for result in parse_ping_output(out)}

    assert [r.target for r in parse_ping_output(out)] == [target for _, target in pairs]
    assert results["10.0.0.2"].ok and results["10.0.0.2"].loss_percent == 0.0
    assert results["10.0.0.3"].error == "1 of 3 packets lost (33.33% loss)"
    assert results["10.0.0.4"].ok  # busy once, then answered
    assert "timed out after 1s" in results["10.0.0.5"].error
    assert results["10.0.0.6"].error == "3 of 3 packets lost (100% loss)"
    assert results["10.0.0.7"].error.endswith("hccn_tool was still busy after 2 tries")


def test_missing_hccn_tool_fails_every_pair(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    script = render_ping_script([(0, "10.0.0.2"), (1, "10.0.0.3")], 5, ascend_home=str(tmp_path / "none"))
    out = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=30).stdout
    results = parse_ping_output(out)
    assert [(r.npu, r.ok, r.error) for r in results] == [
        (0, False, "hccn_tool: not installed"),
        (1, False, "hccn_tool: not installed"),
    ]
