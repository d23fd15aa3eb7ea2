"""The HCCS ping script and its parser (probes/hccs.py), run under sh against the lab's simulated
hccn_tool of an A3 super-pod, plus hostile and broken answers."""

from __future__ import annotations

import os
import sys

import pytest
from a3sim import A3Lab
from nodescript import run_node_script

from ascendprep.facts.hccs import parse_hccs_output, parse_hccs_times, render_hccs_script
from ascendprep.facts.shell import UnsafeValue
from ascendprep.lab.sim import state


@pytest.fixture
def lab(tmp_path):
    lab = A3Lab(tmp_path, nodes=2, pod_servers=2)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "hccn_tool"
    tool.write_text(f'#!/bin/sh\nexec {sys.executable} -S -m ascendprep.lab.sim.hccn_tool "$@"\n')
    tool.chmod(0o755)
    lab.bin_dir = bin_dir
    return lab


def _run(lab, node, pairs):
    env = {**lab.env(node), "PATH": f"{lab.bin_dir}:{os.environ['PATH']}"}
    script = render_hccs_script(pairs, per_command_timeout=20, busy_retries=1, ascend_home=str(lab.base / "none"))
    done = run_node_script(["sh", "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return parse_hccs_output(done.stdout)


def test_script_pings_each_pair_and_reads_loss_and_latency(lab):
    state.set_fault(lab.state_dir, "node2", "hccs-link-down", 1)
    ok, lost = _run(lab, "node1", [(0, "192.1.2.199"), (1, "192.1.3.198")])
    assert (ok.npu, ok.target, ok.ok, ok.sent, ok.received, ok.loss_percent) == (0, "192.1.2.199", True, 3, 3, 0.0)
    assert ok.average_us is not None and 0 < ok.average_us <= ok.max_us
    assert (lost.ok, lost.received, lost.loss_percent, lost.average_us) == (False, 0, 100.0, None)
    assert lost.error == "3 of 3 packets lost (100% loss)"


def test_targets_are_validated_before_any_script_runs():
    with pytest.raises(UnsafeValue, match="is not an IPv4 address"):
        render_hccs_script([(0, "192.1.2.199; reboot")], per_command_timeout=5)
    with pytest.raises(UnsafeValue, match="192.0.0.0/8"):
        render_hccs_script([(0, "10.20.0.1")], per_command_timeout=5)


def _transcript(kind, sections, nonce="0123456789abcdef"):
    """The text a probe script prints (framing as in tests/facts/conftest.py), ending cleanly."""
    out = [f"@@ascendprep {kind} v1 {nonce}\n"]
    for section in sections:
        attrs = "".join(f" {key}={value}" for key, value in section.get("attrs", {}).items())
        out += [
            f"@@{nonce} begin {section['name']}{attrs}\n",
            section.get("stdout", ""),
            f"@@{nonce} stderr\n",
            f"@@{nonce} end rc={section.get('rc', 0)} tries=1\n",
        ]
    return "".join(out) + f"@@{nonce} done\n"


def test_pairs_the_script_never_reached_are_named():
    text = _transcript(
        "hccs",
        [
            {"name": "pairs", "stdout": "0 192.1.2.199\n2 192.1.2.197\n"},
            {"name": "hccs", "attrs": {"npu": 0, "target": "192.1.2.199"}, "rc": 124},
        ],
    )
    first, second = parse_hccs_output(text)
    assert not first.ok and "timed out" in first.error
    assert (second.npu, second.ok) == (2, False) and second.error.startswith("not run:")


def test_time_lines_are_read_in_either_spelling_and_hostile_digits_are_not():
    assert parse_hccs_times("max time = 11.480us\naverage time: 9.3 us\n") == {"max": 11.48, "average": 9.3}
    assert parse_hccs_times("max time = " + "9" * 5000 + "us\n") == {}
