"""The vendor deployer's inventory_file read as what is there, and every way it can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendprep.adopt.deployer import parse_deployer, read_deployer
from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.products import PRODUCTS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "adopt" / "deployer_a2.ini"
A2 = PRODUCTS["atlas-a2"]
IPS = ",".join(f"10.20.0.{i}" for i in range(1, 9))


def problems(text: str, product=A2) -> list[str]:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as caught:
        parse_deployer(text, "inv.ini", product)
    return [str(p) for p in caught.value.problems]


def test_the_vendor_file_gives_every_npu_its_address_netmask_gateway_and_detect_ip() -> None:
    seen = read_deployer(FIXTURE, A2)
    assert [n.name for n in seen.nodes] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    third = seen.nodes[2]
    assert third.user == "root" and third.where.endswith("deployer_a2.ini:13")
    npu = third.npus[7]
    assert (npu.ip, npu.netmask, npu.gateway, npu.detect) == (
        "10.20.0.107",
        "255.255.255.0",
        "10.20.0.254",
        "10.20.0.254",
    )
    assert not seen.conflicts


def test_a_host_line_overrides_the_shared_vars() -> None:
    text = f"[hccn]\nh1 deviceip={IPS} netmask=255.255.0.0 gateways=10.20.255.254\n[hccn:vars]\nnetmask=255.255.255.0\n"
    npu = parse_deployer(text, "inv.ini", A2).nodes[0].npus[0]
    assert (npu.netmask, npu.gateway, npu.detect) == ("255.255.0.0", "10.20.255.254", None)
    assert "detect" not in npu.said  # the file does not say: not the same as "none set"


def test_ipv6_device_addresses_are_refused_with_the_line() -> None:
    text = "[hccn]\nh1 deviceip=10.20.0.1,fd00::2\n"
    (problem,) = problems(text)
    assert problem.startswith("inv.ini:2: [hccn] h1 deviceip: NPU 1: fd00::2 is IPv6")


def test_more_device_ips_than_the_product_has_npus_is_refused() -> None:
    text = f"[hccn]\nh1 deviceip={IPS},10.20.0.9\n"
    (problem,) = problems(text)
    assert "inv.ini:2:" in problem and "9 device IPs" in problem and "at most 8 NPUs" in problem


def test_a_missing_npu_against_npu_num_is_refused() -> None:
    seven = ",".join(f"10.20.0.{i}" for i in range(1, 8))
    (problem,) = problems(f"[hccn]\nh1 deviceip={seven}\n[hccn:vars]\nnpu_num=8\n")
    assert "inv.ini:2:" in problem and "7 device IPs but npu_num=8 (line 4)" in problem


def test_a_server_with_fewer_npus_than_the_rest_is_named_not_hidden() -> None:
    seven = ",".join(f"10.20.1.{i}" for i in range(1, 8))
    seen = parse_deployer(
        f"[hccn]\nh1 deviceip={IPS}\nh2 deviceip={seven}\nh3 deviceip={IPS.replace('.0.', '.2.')}\n", "i", A2
    )
    (conflict,) = seen.conflicts
    assert conflict.kind == "npu_count" and conflict.node == "h2" and "is an NPU missing" in conflict.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("h1 deviceip=1.2.3.4\n", "inv.ini:1: a line before any [section]"),
        ('[hccn]\nh1 deviceip="10.0.0.1\n', "inv.ini:2: [hccn]: cannot split the line as Ansible does"),
        ("[worker]\nh1\n", "inv.ini: [hccn]: no [hccn] section"),
        ("[hccn]\nh1 detectip=10.0.0.1\n", "inv.ini:2: [hccn] h1: no deviceip= list"),
        (f"[hccn]\nh1 deviceip={IPS} netmask=255.0.255.0\n", "netmask"),
        (f"[hccn]\nh1 deviceip={IPS} detectip=1.1.1.1,2.2.2.2\n", "2 values for 8 NPUs"),
        (f"[hccn]\nh1 deviceip={IPS}\nh1 deviceip={IPS}\n", "inv.ini:3: [hccn] h1: the host is listed twice"),
        (f"[hccn]\nh_1; deviceip={IPS}\n", "inv.ini:2: [hccn] h_1;"),
        (f"[hccn]\nh1 deviceip={IPS} ansible_ssh_user='$(reboot)'\n", "not a valid user name"),
        ("[hccn]\nh1 deviceip=10.0.0.1,not-an-ip\n", "'not-an-ip' is not an IP address"),
    ],
)
def test_hostile_lines_are_located_errors(text: str, expected: str) -> None:
    assert any(expected in p for p in problems(text)), problems(text)


def test_a_worker_without_hccn_line_is_named() -> None:
    seen = parse_deployer(f"[worker]\nh1\nh[2:3]\n[hccn]\nh1 deviceip={IPS}\n", "i", A2)
    assert sorted(c.node for c in seen.conflicts if c.kind == "no_device_ips") == ["h2", "h3"]


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "inv.ini"
    with big.open("wb") as handle:
        handle.truncate(8 * 1024 * 1024 + 1)
    with pytest.raises(InputError, match="larger than"):
        read_deployer(big, A2)
