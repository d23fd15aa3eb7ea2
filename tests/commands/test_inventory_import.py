"""``ascendprep inventory import``: sources, output, exit codes; the output loads and plans back."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from ascendprep.base import exitcodes
from ascendprep.cli import main
from ascendprep.inventory.load import load_inventory

DEPLOYER = Path(__file__).resolve().parents[1] / "fixtures" / "adopt" / "deployer_a2.ini"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


def offline_addresses(path: Path) -> dict[tuple[str, str], tuple[str, str, str, str]]:
    result = invoke("plan", "--offline", "--format", "csv", str(path))
    assert result.exit_code == 0, result.output
    rows = csv.DictReader(io.StringIO(result.stdout))
    return {(r["host"], r["npu"]): (r["ip"], r["netmask"], r["gateway"], r["detect"]) for r in rows}


def test_a_deployer_file_becomes_an_inventory_that_plans_the_same_addresses(tmp_path: Path) -> None:
    out = tmp_path / "inv.yaml"
    result = invoke("inventory", "import", "--deployer", str(DEPLOYER), "--product", "atlas-a2", "-o", str(out))
    assert result.exit_code == exitcodes.OK, result.output
    assert "Imported 3 nodes" in result.stderr and "1 off the pattern (10.0.0.3)" in result.stderr
    inventory = load_inventory(out)
    assert [n.name for n in inventory.nodes] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    addresses = offline_addresses(out)
    assert addresses[("10.0.0.2", "7")] == ("10.20.0.16", "255.255.255.0", "10.20.0.254", "10.20.0.254")
    assert addresses[("10.0.0.3", "0")] == ("10.20.0.100", "255.255.255.0", "10.20.0.254", "10.20.0.254")
    assert len(addresses) == 24


def test_without_o_the_inventory_goes_to_stdout_and_messages_to_stderr() -> None:
    result = invoke("inventory", "import", "--deployer", str(DEPLOYER), "--product", "atlas-a2")
    assert result.exit_code == 0 and result.stdout.startswith("# Written by `ascendprep inventory import`")
    assert "Imported" not in result.stdout


def test_a_rank_table_alone_plans_the_same_addresses(tmp_path: Path) -> None:
    servers = [
        {
            "server_id": f"10.0.0.{s + 1}",
            "device": [
                {"device_id": str(d), "device_ip": f"10.30.0.{s * 8 + d + 1}", "rank_id": str(s * 8 + d)}
                for d in range(8)
            ],
        }
        for s in range(2)
    ]
    servers[1]["device"][0]["device_ip"] = "10.30.0.99"
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({"version": "1.0", "server_count": "2", "server_list": servers, "status": "completed"}))
    out = tmp_path / "inv.yaml"
    result = invoke("inventory", "import", "--rank-table", str(table), "--product", "atlas-a2", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "note:" in result.stderr and "netmask" in result.stderr
    got = {key: value[0] for key, value in offline_addresses(out).items()}
    assert got == {(s["server_id"], d["device_id"]): d["device_ip"] for s in servers for d in s["device"]}


def test_a_rank_table_hccl_refuses_exits_2_naming_the_rule(tmp_path: Path) -> None:
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({"version": "1.0", "server_list": [], "status": "completed"}))
    result = invoke("inventory", "import", "--rank-table", str(table))
    assert result.exit_code == exitcodes.INVALID
    assert "HCCL would refuse this rank table" in result.stderr and "R4" in result.stderr
    assert "Traceback" not in result.output


def test_a_bad_deployer_line_exits_2_with_file_and_line(tmp_path: Path) -> None:
    ini = tmp_path / "inventory_file"
    ini.write_text("[hccn]\n10.0.0.1 deviceip=10.20.0.1,fd00::1\n")
    result = invoke("inventory", "import", "--deployer", str(ini))
    assert result.exit_code == exitcodes.INVALID
    assert f"{ini}:2:" in result.stderr and "IPv6" in result.stderr


def test_a_deployer_and_a_rank_table_that_disagree_are_a_conflict_exit_1(tmp_path: Path) -> None:
    servers = [
        {
            "server_id": f"10.0.0.{s + 1}",
            "device": [
                {"device_id": str(d), "device_ip": f"10.20.0.{s * 8 + d + 1}", "rank_id": str(s * 8 + d)}
                for d in range(8)
            ],
        }
        for s in range(3)
    ]
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({"version": "1.0", "server_count": "3", "server_list": servers, "status": "completed"}))
    result = invoke(
        "inventory", "import", "--rank-table", str(table), "--deployer", str(DEPLOYER), "--product", "atlas-a2"
    )
    assert result.exit_code == exitcodes.FAILED
    assert "conflict:" in result.stderr and "10.0.0.3 NPU 0: ip is 10.20.0.17" in result.stderr


def test_no_source_is_a_usage_error() -> None:
    result = invoke("inventory", "import")
    assert result.exit_code == exitcodes.INVALID and "--hosts, --deployer and/or --rank-table" in result.output
    result = invoke("inventory", "import", "--deployer", str(DEPLOYER), "--user", "admin")
    assert result.exit_code == exitcodes.INVALID and "are for --hosts" in result.output


def test_adopt_takes_only_sysctl_env_and_firewall_and_needs_the_hosts() -> None:
    wrong = invoke("inventory", "import", "--hosts", "node1", "--adopt", "sysctl,kernel")
    assert wrong.exit_code == 2 and "'kernel': choose from sysctl, env, firewall" in wrong.output
    alone = invoke("inventory", "import", "--deployer", str(DEPLOYER), "--adopt", "env")
    assert alone.exit_code == 2 and "--adopt reads the hosts: give --hosts too" in alone.output
