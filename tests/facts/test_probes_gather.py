"""The gather script: valid POSIX sh, hostile values refused or escaped, and a real local run
against fake hccn_tool / npu-smi / firewall tools that prints facts the parser reads back."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labsupport import skip_or_fail
from nodescript import run_node_script

from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import TlsState
from ascendprep.facts.sections import parse_transcript
from ascendprep.facts.shell import UnsafeValue

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]


def _installed(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("npus", [None, 0, 8, 16])
@pytest.mark.parametrize("checker", [["sh", "-n"], ["dash", "-n"], ["bash", "--posix", "-n"]])
def test_script_parses_in_posix_shells(tmp_path, npus, checker):
    if not shutil.which(checker[0]):
        skip_or_fail(f"{checker[0]} is not installed")
    script = tmp_path / "gather.sh"
    script.write_text(render_gather_script(npus, "/usr/bin/python3", 10, ascend_home="~/Ascend"))
    result = subprocess.run([*checker, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_each_render_gets_its_own_nonce():
    first, second = (render_gather_script(8, "python3") for _ in range(2))
    assert first != second


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"npus": -1}, "npus must be between 0 and 100"),
        ({"npus": 101}, "npus must be between 0 and 100"),
        ({"npus": True}, "npus must be an integer"),
        ({"npus": "8"}, "npus must be an integer"),
        ({"python_path": "-c"}, "must not start with '-'"),
        ({"python_path": "venv/bin/python"}, "absolute path or a bare command name"),
        ({"python_path": ""}, "non-empty string"),
        ({"python_path": "/usr/bin/python3\nreboot"}, "line breaks"),
        ({"per_command_timeout": 0}, "per_command_timeout must be between 1 and 3600"),
        ({"per_command_timeout": 10.5}, "per_command_timeout must be an integer"),
        ({"ascend_home": "usr/local/Ascend"}, "absolute path or start with ~/"),
        ({"ascend_home": "/opt/Ascend\n; reboot"}, "line breaks"),
        ({"busy_retries": -1}, "busy_retries must be between 0 and 20"),
    ],
)
def test_bad_values_are_refused_with_the_parameter_named(kwargs, message):
    arguments = {"npus": 8, "python_path": "python3", **kwargs}
    with pytest.raises(UnsafeValue, match=message):
        render_gather_script(**arguments)


# -- running it ---------------------------------------------------------------------------


def _install(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR)


def _fake_host(tmp_path: Path, fixtures: Path, home_name: str = "Ascend"):
    """PATH with fake npu-smi and firewall tools; an Ascend home with hccn_tool and version files."""
    tools = fixtures / "fake_tools"
    bin_dir = tmp_path / "bin"
    for name in ("npu-smi", "ufw", "firewall-cmd", "nft"):
        _install(tools / name, bin_dir / name)
    home = tmp_path / home_name
    _install(tools / "hccn_tool", home / "driver" / "tools" / "hccn_tool")  # not on PATH: the fallback
    versions = fixtures / "versions"
    for source, target in (
        ("driver_version.info", "driver/version.info"),
        ("firmware_version.info", "firmware/version.info"),
        (
            "ascend_toolkit_install.info",
            f"ascend-toolkit/latest/{platform.machine()}-linux/ascend_toolkit_install.info",
        ),
        ("cann_runtime_version.info", "cann-9.0.0/share/info/runtime/version.info"),
    ):
        (home / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(versions / source, home / target)
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_FIXTURES": str(fixtures),
        "FAKE_STATE": str(state),
        "TMPDIR": str(tmp_path),
    }
    return home, env


def _run(shell: str, script: str, env: dict) -> str:
    result = run_node_script([shell, "-s"], input=script, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_local_run_gathers_facts_and_cuts_off_a_hung_tool(tmp_path, fixtures_dir, shell):
    home, env = _fake_host(tmp_path, fixtures_dir)
    env["FAKE_HANG"] = "1:-lldp"
    # NPU 0's queries run beside NPU 1's; the limit leaves them time to finish (busy retry
    # included) before NPU 1's hang is known and the later calls are no longer made.
    script = render_gather_script(None, sys.executable, per_command_timeout=5, ascend_home=str(home))

    started = time.monotonic()
    output = _run(shell, script, env)
    elapsed = time.monotonic() - started
    facts = parse_gather_output(output)

    assert elapsed < 50, "the hung hccn_tool was not cut off"  # it sleeps 60 s
    assert facts.hostname == os.uname().nodename
    assert facts.arch == platform.machine()
    assert facts.hccn_tool == str(home / "driver" / "tools" / "hccn_tool")
    assert facts.npu_smi_tool == str(tmp_path / "bin" / "npu-smi")
    assert [device.npu_id for device in facts.npu_smi.devices] == [0, 1]
    assert [(h.npu_id, h.chip, h.health) for h in facts.npu_health] == [(0, 0, "OK"), (1, 0, "Alarm")]
    assert [p.pid for p in facts.npu_processes.processes] == [1333928, 784780]  # npu-smi info's process table

    assert sorted(facts.npus) == [0, 1]
    npu0, npu1 = facts.npus[0], facts.npus[1]
    assert (npu0.ip, npu0.netmask, npu0.gateway) == ("10.20.0.10", "255.255.255.0", None)
    assert (npu1.ip, npu1.gateway) == (None, None)  # exit 13 / exit 2: not configured, not an error
    assert (npu0.link, npu0.net_health, npu0.netdetect) == ("UP", "Success", "29.1.0.1")
    assert npu0.tls == TlsState(switch=0, preconfigured=1, certificates=True)  # after one "busy" answer
    assert npu0.lldp.system_name == "LEAF-A-01" and npu1.lldp is None
    assert npu0.link_stat.down_count == 1 and npu0.optical_present is True
    assert (npu0.duplex, npu0.fec, npu0.optics.lanes[3].rx_power_mw) == ("full", "rs", 0.7601)
    assert facts.npu_firmware == {0: "7.1.0.7.220", 1: "7.1.0.7.220"}

    assert facts.versions.driver_version == "23.0.7"
    assert facts.versions.firmware_version == "7.1.0.11.220"
    assert facts.versions.cann_version == "7.0.T10"
    assert [info.version for info in facts.versions.cann] == ["9.0.0"]

    assert facts.firewall.ufw.active is True
    assert (facts.firewall.firewalld.installed, facts.firewall.firewalld.active) == (True, False)
    assert facts.firewall.nftables.detail == "inet filter, ip nat"

    assert facts.sysctl["net.core.somaxconn"] == Path("/proc/sys/net/core/somaxconn").read_text().strip()
    assert set(facts.managed_files) == {
        "/etc/ascendprep/env.sh",
        "/etc/ascendprep/set_env.sh",
        "/etc/ascendprep/rank_table.json",
    }
    assert facts.python.python_version == "%d.%d.%d" % sys.version_info[:3]
    assert facts.python.packages == {name: _installed(name) for name in ("torch", "torch_npu", "torchvision")}

    problems = {(e.probe, e.npu, e.kind) for e in facts.errors}
    # After the hung -lldp on NPU 1 the remaining hccn_tool calls are not made (each would wait
    # out the limit too); they are recorded as timeouts that say so.
    skipped = {
        (probe, 1, "timeout")
        for probe in (
            "hccn.tls",
            "hccn.link_stat",
            "hccn.optical",
            "hccn.speed",
            "hccn.duplex",
            "hccn.fec",
            "hccn.stat",
        )
    }
    assert problems == {("hccn.lldp", 1, "timeout"), ("hccn.speed", 0, "unsupported")} | skipped
    (not_run,) = facts.errors_for("hccn.tls", npu=1)
    assert (
        not_run.message
        == "hccn_tool -i 1 -tls -g: not run: hccn_tool hung earlier in this run (hccn_tool -i 1 -lldp -g)"
    )
    (timeout,) = facts.errors_for("hccn.lldp", npu=1)
    assert timeout.message == "hccn_tool -i 1 -lldp -g timed out after 5s and was killed"

    sections = parse_transcript(output, "gather").sections
    tls0 = next(s for s in sections if s.name == "hccn.tls" and s.npu == 0)
    assert tls0.tries == 2
    assert sum(1 for s in sections if s.name.startswith("hccn.")) == 26  # 12 calls per NPU and one -stat read, no more
    assert [len(facts.npus[n].stat_samples) for n in (0, 1)] == [
        1,
        0,
    ]  # --sample-interval 0: read once (not after the hang)


def test_given_npu_count_and_a3_discovery(tmp_path, fixtures_dir):
    home, env = _fake_host(tmp_path, fixtures_dir)
    facts = parse_gather_output(_run("sh", render_gather_script(3, "python3", 5, ascend_home=str(home)), env))
    assert sorted(facts.npus) == [0, 1, 2]  # what the caller asked for, even beyond npu-smi's list
    assert facts.npus[2].ip == "10.20.0.12"

    # An A3 lists 8 NPUs of 2 chips: hccn devids 0-15, health per chip. Without hccn_tool
    # the devids are still reported, with one "missing" error instead of 160 failures.
    (home / "driver" / "tools" / "hccn_tool").unlink()
    env["FAKE_NPU_LIST"] = "list_a3_8npu.out"
    facts = parse_gather_output(_run("sh", render_gather_script(None, "python3", 5, ascend_home=str(home)), env))
    assert sorted(facts.npus) == list(range(16))
    assert len(facts.npu_health) == 16
    assert {(h.npu_id, h.chip) for h in facts.npu_health} == {(n, c) for n in range(8) for c in (0, 1)}
    assert [(e.probe, e.kind) for e in facts.errors] == [("hccn_tool", "missing")]
    # ... and each die's super-pod identity, keyed by its hccn devid (NPU 5 chip 0 is device 10).
    assert sorted(facts.superpod) == list(range(16))
    assert facts.superpod[10].sdid == 169082890 and (facts.superpod[10].npu_id, facts.superpod[10].chip) == (5, 0)
    assert {(d.super_pod_id, d.server_index, d.pod_size) for d in facts.superpod.values()} == {(0, 40, 384)}


def test_hostile_values_are_escaped_not_executed(tmp_path, fixtures_dir):
    home, env = _fake_host(tmp_path, fixtures_dir, home_name="we ird $(touch PWNED-home) `touch PWNED-tick`")
    python_path = "py$(touch PWNED-python);x"
    script = render_gather_script(2, python_path, 5, ascend_home=str(home))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = run_node_script(
        ["sh", "-s"], input=script, env=env, cwd=workdir, capture_output=True, text=True, timeout=60
    )
    facts = parse_gather_output(result.stdout)

    assert list(workdir.iterdir()) == [] and not list(tmp_path.glob("**/PWNED*"))
    assert facts.ascend_home == str(home)
    assert facts.versions.driver.path == f"{home}/driver/version.info"
    assert facts.npus[0].ip == "10.20.0.10"
    (python_error,) = facts.errors_for("python")
    assert python_error.kind == "missing"


def test_non_root_home_under_tilde(tmp_path, fixtures_dir):
    home, env = _fake_host(tmp_path, fixtures_dir)
    env["HOME"] = str(tmp_path)
    facts = parse_gather_output(_run("sh", render_gather_script(1, "python3", 5, ascend_home="~/Ascend"), env))
    assert facts.ascend_home == str(home)
    assert facts.versions.driver_version == "23.0.7"
    assert facts.hccn_tool == str(home / "driver" / "tools" / "hccn_tool")


def test_garbage_output_is_a_recorded_failure_not_a_crash():
    facts = parse_gather_output("sudo: a password is required\n")
    (error,) = facts.errors
    assert (error.probe, error.kind) == ("gather", "error")
    assert "no ascendprep gather header" in error.message


@pytest.mark.parametrize(
    "fixture, rc, message",
    [
        (
            "dcmi_device_used_8020.out",
            "1",
            "npu-smi info -l failed: dcmi model initialized failed, because the device is used. ret is -8020 "
            "(the NPUs are held by another container or process (DCMI is exclusive))",
        ),
        (
            "dcmi_init_failed_8005.out",
            "0",  # printed with exit 0: still a failure, not an empty list
            "npu-smi info -l failed: dcmi module initialize failed. ret is -8005 (the driver's management interface "
            "did not start: driver not loaded or not matching the kernel, or no access to /dev/davinci*)",
        ),
    ],
)
def test_npu_smi_failure_is_reported_on_its_own_and_hccn_still_queried(tmp_path, fixtures_dir, fixture, rc, message):
    home, env = _fake_host(tmp_path, fixtures_dir)
    env.update(FAKE_NPU_SMI_FAIL=fixture, FAKE_NPU_SMI_FAIL_RC=rc)
    facts = parse_gather_output(_run("sh", render_gather_script(3, "python3", 5, ascend_home=str(home)), env))
    (error,) = facts.errors_for("npu_smi.list")
    assert (error.kind, error.message) == ("error", message)
    assert facts.npu_smi is None and facts.npu_health == ()
    # hccn_tool still asked about the inventory's 3 NPUs
    assert sorted(facts.npus) == [0, 1, 2]
    assert facts.npus[0].ip == "10.20.0.10" and facts.npus[2].ip == "10.20.0.12"


def test_per_npu_sections_without_an_npu_id_are_errors_not_facts():
    """hccn.ip is an npu unit; hccn.stat2 (the late second counter read) is rendered as a host unit
    but is filed per NPU too: without ``npu=`` both are refused, and nothing is filled in."""
    nonce = "0123456789abcdef"
    m = f"@@{nonce} "
    stat = "packet statistics:\nroce_rx_err_pkt_num:0\n"
    text = (
        f"@@ascendprep gather v2 {nonce}\n"
        f"{m}begin hccn.ip\nipaddr:10.0.0.1\nnetmask:255.255.0.0\n\n{m}stderr\n\n{m}end rc=0 tries=1\n"
        f"{m}begin hccn.stat2 pass=2 t=100\n{stat}\n{m}stderr\n\n{m}end rc=0 tries=1\n"
        f"{m}done\n"
    )
    facts = parse_gather_output(text)
    assert facts.npus == {}
    assert sorted((e.probe, e.message) for e in facts.errors) == [
        ("hccn.ip", "hccn_tool -i None -ip -g: section without an NPU id"),
        ("hccn.stat", "hccn_tool -i None -stat -g: section without an NPU id"),
    ]


def test_a5_host_reads_its_ub_ports_mode_first_and_never_the_910_forms(tmp_path, fixtures_dir):
    """npu-smi's list names an A5 card: the script asks hccn_tool the 950 way (mode first, -u/-p per
    port of -dev_info's table) and does not run the 910 per-NPU queries, which that tool refuses."""
    home, env = _fake_host(tmp_path, fixtures_dir)
    env.update(FAKE_A5="1", FAKE_NPU_LIST="a5_list.out")
    script = render_gather_script(None, "python3", 5, ascend_home=str(home), sample_interval=1)
    facts = parse_gather_output(_run("sh", script, env))
    assert sorted(facts.npus) == [0]
    npu = facts.npus[0]
    assert npu.ip is None and npu.link is None and npu.stat_samples == ()  # no 910 query was made
    assert not [e for e in facts.errors if e.probe.startswith("hccn.") and not e.probe.startswith("hccn.ub_")]
    ub = npu.ub
    assert ub.connect.status == "PARTIAL LINK" and ub.connect.ports[6] == "PARTIAL UP"
    assert sorted(ub.ports) == ["0/4", "0/5", "0/6"]
    assert ub.ports["0/5"].speed.width_lanes == 4 and ub.ports["0/6"].fec.rs_mode == "128 T4"
    assert ub.ports["0/4"].port_info.lstm_state == "LINK_ACTIVE"
    assert [read.pass_number for read in ub.ports["0/6"].stat_samples] == [1, 2]
    assert ub.ports["0/6"].stat_samples[0].counters["port_id"] == 6
    assert (ub.sio.tx_errors, ub.sio.rx_errors) == (0, 0)
    assert ub.dev_info.eids[0] == "000000000000000000100000dfdf0020"
    # -link_stat prints no current time: the host's clock at the read is kept to window its flaps
    history = ub.ports["0/4"].link_stat
    assert history.down_count == 2 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", history.current_time)
    assert [e.probe for e in facts.errors if e.probe.startswith("hccn.ub")] == []
    # and it survives the facts file
    assert type(facts).from_dict(facts.to_dict()).npus[0].ub == ub


def test_a5_host_pings_between_its_cards_eids(tmp_path, fixtures_dir):
    """Two 950 cards: each UB-pings the other's first EID (-dev_info's udma table, index 0); a card
    whose pings get no reply has them recorded as failed pings, not as probe errors."""
    home, env = _fake_host(tmp_path, fixtures_dir)
    env.update(FAKE_A5="1", FAKE_NPU_LIST="a5_list.out", FAKE_UB_PING_LOST="1")
    facts = parse_gather_output(_run("sh", render_gather_script(2, "python3", 5, ascend_home=str(home)), env))
    eid = "0000:0000:0000:0000:0010:0000:dfdf:0020"  # both fake cards print the documented table
    (ping,) = facts.npus[0].ub.pings
    assert (ping.peer, ping.src_eid, ping.dst_eid, ping.ok, ping.received) == (1, eid, eid, True, 6)
    (lost,) = facts.npus[1].ub.pings
    assert (lost.peer, lost.ok, lost.error) == (0, False, "3 of 3 packets lost")
    assert not [e for e in facts.errors if e.probe.startswith("hccn.ub")]
