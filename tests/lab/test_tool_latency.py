"""``lab up --tool-latency-ms``: every simulated tool call sleeps that long first (a real
driver's round trip); 0, the default, answers at once. Both variants, timed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascendprep.lab.sim import tools
from ascendprep.lab.spec import LabSpec, LabSpecError

REPO = Path(__file__).resolve().parents[2]


def _timed_wrapper(tmp_path: Path, latency_ms: int) -> float:
    (tmp_path / "demo_tool.py").write_text("import sys\ndef main():\n    print('ran', *sys.argv[1:])\n    return 0\n")
    script = tmp_path / f"tool-{latency_ms}"
    script.write_text(tools.wrapper_script(sys.executable, str(tmp_path), "demo_tool", "demo", latency_ms))
    script.chmod(0o755)
    started = time.monotonic()
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr  # the module still ran
    return time.monotonic() - started


def test_a_latency_makes_every_call_sleep_first(tmp_path):
    assert "sleep 0.400\n" in tools.wrapper_script("/usr/bin/python3", "/src", "m", "hccn_tool", 400)
    assert "sleep 1.250\n" in tools.wrapper_script("/usr/bin/python3", "/src", "m", "hccn_tool", 1250)
    assert _timed_wrapper(tmp_path, 400) >= 0.4


def test_no_latency_answers_at_once(tmp_path):
    assert "sleep" not in tools.wrapper_script("/usr/bin/python3", "/src", "m", "hccn_tool")
    assert _timed_wrapper(tmp_path, 0) < 0.4 + 0.5  # no sleep (interpreter start-up only, on a busy machine)
    with pytest.raises(ValueError, match="non-negative"):
        tools.wrapper_script("/usr/bin/python3", "/src", "m", "hccn_tool", -1)


def test_install_writes_the_latency_into_both_tools(tmp_path):
    tools.install_node_tools(tmp_path, sys.executable, str(REPO), 200)
    for path in (tools.HCCN_TOOL_PATH, tools.NPU_SMI_PATH):
        assert "sleep 0.200\n" in (tmp_path / path).read_text()


@pytest.mark.parametrize("value", [-1, 5001, True, "200"])
def test_the_lab_spec_refuses_a_bad_latency(value):
    with pytest.raises(LabSpecError, match="--tool-latency-ms"):
        LabSpec(tool_latency_ms=value).validated()


def test_the_lab_spec_keeps_the_latency_and_reads_an_older_spec_without_it():
    spec = LabSpec(tool_latency_ms=200).validated()
    assert LabSpec.from_dict(spec.to_dict()).tool_latency_ms == 200
    older = {k: v for k, v in spec.to_dict().items() if k != "tool_latency_ms"}
    assert LabSpec.from_dict(older).tool_latency_ms == 0
