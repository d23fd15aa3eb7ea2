"""The gather reads -stat -g near its start and again at its end, sleeping only for what is left
of the sample interval (run locally against the fake tools, like tests/facts/test_probes_gather.py)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.shell import UnsafeValue
from ascendprep.verify.checks.counters import rates, sample_pair

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"


def _fake_host(tmp_path: Path) -> tuple[Path, dict]:
    bin_dir = tmp_path / "bin"
    home = tmp_path / "Ascend"
    (home / "driver" / "tools").mkdir(parents=True)
    bin_dir.mkdir()
    for tool in ("npu-smi", "ufw", "firewall-cmd", "nft"):
        shutil.copy(FIXTURES / "fake_tools" / tool, bin_dir / tool)
    shutil.copy(FIXTURES / "fake_tools" / "hccn_tool", home / "driver" / "tools" / "hccn_tool")
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_FIXTURES": str(FIXTURES),
        "FAKE_STATE": str(state),
        "TMPDIR": str(tmp_path),
    }
    return home, env


def _gather(tmp_path: Path, interval: int, shell: str = "sh"):
    home, env = _fake_host(tmp_path)
    script = render_gather_script(
        2, sys.executable, per_command_timeout=5, ascend_home=str(home), sample_interval=interval
    )
    started = time.monotonic()
    result = run_node_script([shell, "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return parse_gather_output(result.stdout), time.monotonic() - started


@pytest.mark.parametrize("shell", [s for s in ("dash", "bash") if shutil.which(s)])
def test_two_reads_an_interval_apart_and_verify_grows_by_at_most_that(tmp_path, shell):
    baseline_facts, baseline = _gather(tmp_path / "once", 0, shell)
    facts, sampled = _gather(tmp_path / "twice", 2, shell)
    assert [len(baseline_facts.npus[n].stat_samples) for n in (0, 1)] == [1, 1]
    for npu in (0, 1):
        first, second = sample_pair(facts.npus[npu].stat_samples)
        assert first is not None and second is not None
        assert second.at_s - first.at_s >= 1.95  # type: ignore[operator]  # longer when the other probes took longer
        assert all(rate.rate_per_s == 0 for rate in rates(first, second).values())
    assert set(facts.npus[1].stat_samples[0].counters) == {"roce_rx_err_pkt_num", "roce_tx_err_pkt_num"}
    assert facts.npus[0].stat_samples[0].counters["mac_rx_pfc_pkt_num"] == 1312
    assert sampled - baseline < 2 + 1.5, f"sampling added {sampled - baseline:.1f}s for a 2 s interval"
    assert not facts.errors_for("hccn.stat")


def test_the_interval_is_validated():
    with pytest.raises(UnsafeValue, match="sample_interval"):
        render_gather_script(2, "python3", sample_interval=-1)
    with pytest.raises(UnsafeValue, match="sample_interval"):
        render_gather_script(2, "python3", sample_interval=100000)


def test_sample_interval_option_is_checked_before_any_host_is_contacted(tmp_path):
    from click.testing import CliRunner

    from ascendprep.cli import main

    bundle = tmp_path / "run"
    bundle.mkdir()
    refused = CliRunner().invoke(main, ["verify", "--from-bundle", str(bundle), "--sample-interval", "3"])
    assert refused.exit_code == 2 and "--sample-interval does not apply" in refused.output
    negative = CliRunner().invoke(main, ["verify", "inventory.yaml", "--sample-interval", "-1"])
    assert negative.exit_code == 2 and "--sample-interval" in negative.output
    assert "--sample-interval SECONDS" in CliRunner().invoke(main, ["verify", "--help"]).output


def _transcript(sections) -> str:
    nonce = "0123456789abcdef"
    lines = [f"@@ascendprep gather v1 {nonce}"]
    for name, attrs, rc, stdout, stderr in sections:
        lines += [
            f"@@{nonce} begin {name}{attrs}",
            *stdout.splitlines(),
            f"@@{nonce} stderr",
            *stderr.splitlines(),
            f"@@{nonce} end rc={rc} tries=1",
        ]
    return "\n".join(lines + [f"@@{nonce} done"]) + "\n"


def test_both_reads_land_on_their_npu_and_a_failed_second_read_is_that_npus_error():
    text = _transcript(
        [
            ("hccn.stat", " npu=3 pass=1 t=100000", 0, "packet statistics:\nmac_rx_fcs_err_pkt_num:10\n", ""),
            ("hccn.stat", " npu=4 pass=1 t=100010", 0, "packet statistics:\nmac_rx_fcs_err_pkt_num:7\n", ""),
            ("hccn.stat2", " npu=3 pass=2 t=100500", 0, "packet statistics:\nmac_rx_fcs_err_pkt_num:260\n", ""),
            (
                "hccn.stat2",
                " npu=4 pass=2 t=100510",
                124,
                "",
                "not run: hccn_tool hung earlier in this run (hccn_tool -i 4 -lldp -g)\n",
            ),
        ]
    )
    facts = parse_gather_output(text)
    first, second = sample_pair(facts.npus[3].stat_samples)
    assert (first.at_s, second.at_s) == (1000.0, 1005.0)  # type: ignore[union-attr]
    assert rates(first, second)["mac_rx_fcs_err_pkt_num"].rate_per_s == 50.0  # type: ignore[arg-type]
    (error,) = facts.errors
    assert (error.probe, error.npu, error.kind) == ("hccn.stat", 4, "timeout")
    assert error.message.startswith("hccn_tool -i 4 -stat -g: not run")
