"""One test per rule of docs/ranktable-rules.md: a table HCCL loads passes, and the same table
broken in exactly that rule's way is caught with that rule's number."""

from __future__ import annotations

import copy
import json
from typing import Any, Callable

import pytest

from ascendprep.inventory.products import PRODUCTS
from ascendprep.inventory.ranktable_rules import RANK_TABLE_MAX_BYTES, check_path, check_rank_table

A2 = PRODUCTS["atlas-a2"]
A3 = PRODUCTS["atlas-a3"]
A800 = PRODUCTS["atlas-800"]


def table_10(servers: int = 2, devices: int = 2) -> dict[str, Any]:
    rank = 0
    server_list = []
    for s in range(servers):
        device = []
        for d in range(devices):
            device.append({"device_id": str(d), "device_ip": f"10.20.{s}.{d + 1}", "rank_id": str(rank)})
            rank += 1
        server_list.append({"server_id": f"10.0.0.{s + 1}", "host_ip": f"10.0.0.{s + 1}", "device": device})
    return {"version": "1.0", "server_count": str(servers), "server_list": server_list, "status": "completed"}


def table_12() -> dict[str, Any]:
    """The shape of the HCCL doc's example: 2 pods x 2 servers x 2 dies."""
    table = table_10(servers=4, devices=2)
    table["version"] = "1.2"
    for s, server in enumerate(table["server_list"]):
        for d, device in enumerate(server["device"]):
            device["super_device_id"] = str((s % 2) << 22 | d << 16 | d)
    table["super_pod_list"] = [
        {"super_pod_id": "0", "server_list": [{"server_id": "10.0.0.1"}, {"server_id": "10.0.0.2"}]},
        {"super_pod_id": "1", "server_list": [{"server_id": "10.0.0.3"}, {"server_id": "10.0.0.4"}]},
    ]
    return table


def rules(table: Any, product=A2) -> set[str]:
    return {v.rule for v in check_rank_table(table, product)}


def broken(base: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    table = copy.deepcopy(base())
    change(table)
    return table


def test_good_tables_pass() -> None:
    assert check_rank_table(table_10(), A2) == []
    assert check_rank_table(table_12(), A3) == []
    assert check_rank_table(table_10(servers=2, devices=8), A800) == []


def test_r1_path_must_end_in_json_and_table_must_be_an_object() -> None:
    assert check_path("/etc/ascendprep/rank_table.json") == []
    assert [v.rule for v in check_path("/etc/ascendprep/rank_table")] == ["R1"]
    assert rules(["not", "an", "object"]) == {"R1"}


@pytest.mark.parametrize("status", [None, 1, "initializing"])
def test_r2_status_string_completed(status: Any) -> None:
    def change(t: dict[str, Any]) -> None:
        if status is None:
            del t["status"]
        else:
            t["status"] = status

    assert rules(broken(table_10, change)) == {"R2"}


@pytest.mark.parametrize("version", [None, "1.1", "2.0", 1.0])
def test_r3_version_concise_only(version: Any) -> None:
    def change(t: dict[str, Any]) -> None:
        if version is None:
            del t["version"]
        else:
            t["version"] = version

    assert "R3" in rules(broken(table_10, change))


@pytest.mark.parametrize("servers", [None, [], "x"])
def test_r4_server_list_required_and_not_empty(servers: Any) -> None:
    assert rules(broken(table_10, lambda t: t.update(server_list=servers))) == {"R4"}


@pytest.mark.parametrize("count", ["3", "0", 2, "two"])
def test_r5_server_count_matches(count: Any) -> None:
    assert rules(broken(table_10, lambda t: t.update(server_count=count))) == {"R5"}


def test_r5_server_count_is_optional() -> None:
    assert rules(broken(table_10, lambda t: t.pop("server_count"))) == set()


@pytest.mark.parametrize("server_id", [None, "", "x" * 65, "10.0.0.1"])
def test_r6_server_id_required_short_unique(server_id: Any) -> None:
    def change(t: dict[str, Any]) -> None:
        t["server_list"][1]["server_id"] = server_id

    assert rules(broken(table_10, change)) == {"R6"}


def test_r6_server_id_is_not_checked_as_an_ip() -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][0].update(server_id="node-a"))) == set()


@pytest.mark.parametrize("host_ip", ["node1.example", "10.0.0", "", 3])
def test_r7_host_ip_must_be_an_ip_literal(host_ip: Any) -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][0].update(host_ip=host_ip))) == {"R7"}


@pytest.mark.parametrize("device", [None, []])
def test_r8_device_required_non_empty(device: Any) -> None:
    assert "R8" in rules(broken(table_10, lambda t: t["server_list"][0].update(device=device)))


@pytest.mark.parametrize(
    "key,value", [("rank_id", 0), ("device_id", 1), ("rank_id", "0x1"), ("device_id", "4294967296")]
)
def test_r9_ids_are_decimal_strings(key: str, value: Any) -> None:
    assert "R9" in rules(broken(table_10, lambda t: t["server_list"][0]["device"][0].update({key: value})))


def test_r10_device_id_range_by_product() -> None:
    eight = broken(table_10, lambda t: t["server_list"][0]["device"][0].update(device_id="8"))
    assert rules(eight, A800) == {"R10"}
    assert rules(eight, A2) == set()
    sixteen = broken(table_10, lambda t: t["server_list"][0]["device"][0].update(device_id="16"))
    assert rules(sixteen, A3) == {"R10"}


def test_r11_device_ip_required_unique_valid_same_count() -> None:
    def drop(t: dict[str, Any]) -> None:
        t["server_list"][0].pop("host_ip")
        t["server_list"][0]["device"][0].pop("device_ip")

    assert "R11" in rules(broken(table_10, drop))
    assert rules(broken(table_10, lambda t: t["server_list"][1]["device"][0].update(device_ip="10.20.0.1"))) == {"R11"}
    assert rules(broken(table_10, lambda t: t["server_list"][1]["device"][0].update(device_ip="0.0.0.0"))) == {"R11"}
    assert rules(
        broken(table_10, lambda t: t["server_list"][1]["device"][0].update(device_ip="10.21.0.1,10.22.0.1"))
    ) == {"R11"}


def test_r11_device_ip_may_be_left_out_with_a_host_ip() -> None:
    def drop(t: dict[str, Any]) -> None:
        for server in t["server_list"]:
            for device in server["device"]:
                device.pop("device_ip")

    assert rules(broken(table_10, drop)) == set()


@pytest.mark.parametrize(
    "key,value",
    [("host_port", "0"), ("device_port", "65536"), ("backup_device_port", 16667), ("device_vnic_port", "x")],
)
def test_r12_ports_are_strings_in_range(key: str, value: Any) -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][0]["device"][0].update({key: value}))) == {"R12"}


def test_r13_rank_ids_exactly_zero_to_n_minus_one() -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][1]["device"][1].update(rank_id="7"))) == {"R13"}
    assert rules(broken(table_10, lambda t: t["server_list"][1]["device"][1].update(rank_id="0"))) == {"R13"}


def test_r13_a_servers_ranks_are_contiguous() -> None:
    def interleave(t: dict[str, Any]) -> None:
        t["server_list"][0]["device"][1]["rank_id"] = "2"
        t["server_list"][1]["device"][0]["rank_id"] = "1"

    assert rules(broken(table_10, interleave)) == {"R13"}


def test_r14_a_device_once_per_server() -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][0]["device"][1].update(device_id="0"))) == {"R14"}


def test_r15_one_address_family() -> None:
    assert rules(broken(table_10, lambda t: t["server_list"][1].update(host_ip="fd00::2"))) == {"R15"}
    assert rules(broken(table_10, lambda t: t["server_list"][1]["device"][0].update(device_ip="fd00::9"))) == {"R15"}


def test_r16_same_device_count_on_910_only() -> None:
    uneven = broken(lambda: table_10(devices=2), lambda t: t["server_list"][1]["device"].pop())
    assert rules(uneven, A800) == {"R16"}
    assert rules(uneven, A2) == set()
    assert rules(uneven, A3) == set()


def test_r17_unknown_keys_are_ignored() -> None:
    table = broken(table_10, lambda t: t.update(container_ip="x", hardware_type="800I-A3-64G"))
    table["server_list"][0]["container_ip"] = "not checked"
    assert rules(table) == set()


def test_r19_size_cap() -> None:
    assert [v.rule for v in check_rank_table(table_10(), A2, compact_bytes=RANK_TABLE_MAX_BYTES + 1)] == ["R19"]
    assert check_rank_table(table_10(), A2, compact_bytes=len(json.dumps(table_10()))) == []


def test_12_needs_super_pod_list() -> None:
    assert rules(broken(table_12, lambda t: t.pop("super_pod_list")), A3) == {"1.2"}


def test_12_every_server_in_exactly_one_unique_pod() -> None:
    assert rules(broken(table_12, lambda t: t["super_pod_list"][1]["server_list"].pop()), A3) == {"1.2"}
    assert rules(broken(table_12, lambda t: t["super_pod_list"][1].update(super_pod_id="0")), A3) == {"1.2"}
    assert rules(
        broken(table_12, lambda t: t["super_pod_list"][1]["server_list"].append({"server_id": "10.0.0.9"})), A3
    ) == {"1.2"}
    assert rules(
        broken(table_12, lambda t: t["super_pod_list"][1]["server_list"].append({"server_id": "10.0.0.1"})), A3
    ) == {"1.2"}


def test_12_every_rank_has_an_sdid_unique_per_pod() -> None:
    assert rules(broken(table_12, lambda t: t["server_list"][0]["device"][0].pop("super_device_id")), A3) == {"1.2"}
    duplicate = broken(
        table_12,
        lambda t: t["server_list"][1]["device"][0].update(
            super_device_id=t["server_list"][0]["device"][0]["super_device_id"]
        ),
    )
    violations = check_rank_table(duplicate, A3)
    assert [v.rule for v in violations] == ["1.2"] and "EI0014" in violations[0].message
    # The same SDID in two pods is fine: SDIDs restart per pod (the doc's example).
    assert (
        table_12()["server_list"][0]["device"][0]["super_device_id"]
        == table_12()["server_list"][2]["device"][0]["super_device_id"]
    )


def test_12_pods_listed_contiguously() -> None:
    def swap(t: dict[str, Any]) -> None:
        t["super_pod_list"][0]["server_list"][1] = {"server_id": "10.0.0.3"}
        t["super_pod_list"][1]["server_list"][0] = {"server_id": "10.0.0.2"}

    assert rules(broken(table_12, swap), A3) == {"1.2"}
