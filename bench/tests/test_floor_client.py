"""The hand-batched floor of bench/floor_client.py: its one script per host, the read-back
check, and the saved targets (the benchmark itself runs by hand against a lab)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import floor_client  # noqa: E402
from floor_client import HostTarget, NpuTarget, Targets, readback_problems, render_floor_script  # noqa: E402

CONTENT = "export A='x y'\necho $(id) \"q\" \\\n"
TARGET = HostTarget(
    "node1", "10.0.0.11", 22, "root",
    (NpuTarget(0, "10.20.0.1", "255.255.255.0", "10.20.0.9"), NpuTarget(1, "10.20.0.2", "255.255.255.0", None)),
    (("net.core.somaxconn", "65535"), ("net.ipv4.ip_local_reserved_ports", "60000-60015")),
    (("/etc/ascendprep/env.sh", CONTENT),),
)  # fmt: skip


def test_the_script_makes_each_change_once_with_every_value_quoted():
    script = render_floor_script(TARGET, "/opt/hccn tool")
    assert subprocess.run(["sh", "-n"], input=script, text=True, check=False).returncode == 0
    lines = script.splitlines()
    sets = [line for line in lines if " -s " in line]
    assert (
        len([s for s in sets if "-ip -s" in s]) == 2 and len([s for s in sets if "-netdetect -s" in s]) == 1
    )  # npu 1 plans no detect IP
    assert "'/opt/hccn tool' -i 0 -ip -s address 10.20.0.1 netmask 255.255.255.0" in script
    assert "> /proc/sys/net/ipv4/ip_local_reserved_ports" in script
    assert len([line for line in lines if line.startswith("echo '@@floor-ip")]) == 2  # one read-back per NPU


def test_files_are_written_byte_for_byte(tmp_path):
    target = tmp_path / "etc dir" / "env.sh"
    only_files = HostTarget("node1", "h", 22, "root", (), (), ((str(target), CONTENT),))
    done = subprocess.run(
        ["sh", "-s"], input=render_floor_script(only_files), text=True, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert target.read_text() == CONTENT and oct(target.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in target.parent.iterdir()] == ["env.sh"]  # no temp file left


def test_read_backs_must_show_every_planned_address():
    good = "@@floor-ip 0@@\nipaddr:10.20.0.1\nnetmask:255.255.255.0\n@@floor-ip 1@@\nipaddr:10.20.0.2\n"
    assert readback_problems(TARGET, good) == []
    wrong = good.replace("10.20.0.2", "10.20.0.3")
    assert readback_problems(TARGET, wrong) == ["npu 1: reads back '10.20.0.3', expected 10.20.0.2"]
    assert readback_problems(TARGET, "@@floor-ip 0@@\nipaddr:10.20.0.1\n") == [
        "npu 1: reads back None, expected 10.20.0.2"
    ]


def test_saved_targets_read_back_the_same(tmp_path):
    targets = Targets((TARGET,), "/k/id_ed25519", ("/k/known_hosts",), 10.0)
    path = tmp_path / "targets.json"
    path.write_text(targets.to_json())
    assert Targets.from_json(path.read_text()) == targets
    assert floor_client.main(["--targets", str(path), "--save-targets", str(tmp_path / "again.json")]) == 0
    assert Targets.from_json((tmp_path / "again.json").read_text()) == targets
