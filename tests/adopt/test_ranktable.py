"""A rank table (1.0, 1.2) read as what is there; a table HCCL would refuse is refused with its rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ascendprep.adopt.compact import compact
from ascendprep.adopt.ranktable import rank_table_seen, read_rank_table
from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.products import PRODUCTS
from ascendprep.inventory.superpods import sdid

A2 = PRODUCTS["atlas-a2"]


def table_10(servers: int = 2, devices: int = 8) -> dict[str, Any]:
    """A 1.0 table as HCCL's documentation shows it: server_id the host address, ranks in order."""
    rank = 0
    server_list = []
    for s in range(servers):
        device = []
        for d in range(devices):
            device.append({"device_id": str(d), "device_ip": f"10.30.{s}.{d + 1}", "rank_id": str(rank)})
            rank += 1
        server_list.append({"server_id": f"10.0.0.{s + 1}", "device": device})
    return {"version": "1.0", "server_count": str(servers), "server_list": server_list, "status": "completed"}


def test_servers_devices_and_addresses_are_read_and_only_addresses_are_said() -> None:
    seen = rank_table_seen(table_10(), "rt.json", A2)
    assert [n.name for n in seen.nodes] == ["10.0.0.1", "10.0.0.2"]
    npu = seen.nodes[1].npus[7]
    assert npu.ip == "10.30.1.8" and npu.said == {"ip"}
    assert seen.rank_table and not seen.conflicts


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (lambda t: t.update(status="initializing"), "rule R2"),
        (lambda t: t.update(version="1.1"), "rule R3"),
        (lambda t: t.update(server_count="3"), "rule R5"),
        (
            lambda t: t["server_list"][1]["device"][0].update(device_ip=t["server_list"][0]["device"][0]["device_ip"]),
            "rule R",
        ),
        (lambda t: t["server_list"][0]["device"][1].update(device_id="0"), "rule R"),
    ],
)
def test_a_table_hccl_would_refuse_is_refused_naming_the_rule(change, rule: str) -> None:  # type: ignore[no-untyped-def]
    table = table_10()
    change(table)
    with pytest.raises(InputError) as caught:
        rank_table_seen(table, "rt.json", A2)
    text = str(caught.value)
    assert "rt.json: HCCL would refuse this rank table" in text and rule in text


def test_ranks_out_of_server_order_list_the_servers_by_first_rank() -> None:
    table = table_10()
    table["server_list"].reverse()
    seen = rank_table_seen(table, "rt.json", A2)
    assert [n.name for n in seen.nodes] == ["10.0.0.1", "10.0.0.2"]
    assert any(c.kind == "rank_order" for c in seen.conflicts)


def test_a_12_table_gives_super_pods_and_implies_a3(tmp_path: Path) -> None:
    table = table_10(servers=2, devices=16)
    table["version"] = "1.2"
    for s, server in enumerate(table["server_list"]):
        for device in server["device"]:
            device["super_device_id"] = str(sdid(s + 4, int(device["device_id"])))
            die = int(device["device_id"])
            device["device_ip"] = f"10.{30 + die % 2}.0.{s * 8 + die // 2 + 1}"  # the dies in two planes
    table["super_pod_list"] = [
        {"super_pod_id": "7", "server_list": [{"server_id": "10.0.0.1"}, {"server_id": "10.0.0.2"}]}
    ]
    path = tmp_path / "rt.json"
    path.write_text(json.dumps(table))
    seen = read_rank_table(path, None)
    assert seen.product == "atlas-a3" and [n.super_pod for n in seen.nodes] == [7, 7]
    # the server index is the SDIDs' (the A3 driver's numbering, docs/a3-superpod.md §2)
    assert [n.server_index for n in seen.nodes] == [4, 5] and not seen.conflicts
    result = compact(seen, "atlas-a3")
    assert result.complete, result.conflicts
    assert "super_pod: 7" in result.text and "server_index: 4" in result.text


def test_sdids_not_of_the_driver_s_form_and_ranks_an_inventory_cannot_write_are_conflicts() -> None:
    table = table_10(servers=2, devices=16)
    table["version"] = "1.2"
    for s, server in enumerate(table["server_list"]):
        for device in server["device"]:
            device["super_device_id"] = str(s * 16 + int(device["device_id"]))
    table["super_pod_list"] = [
        {"super_pod_id": "7", "server_list": [{"server_id": "10.0.0.1"}, {"server_id": "10.0.0.2"}]}
    ]
    assert any(c.kind == "sdid" for c in rank_table_seen(table, "rt.json", None).conflicts)
    table = table_10()
    first = table["server_list"][0]["device"]
    first[0]["rank_id"], first[1]["rank_id"] = first[1]["rank_id"], first[0]["rank_id"]
    result = compact(rank_table_seen(table, "rt.json", A2), "atlas-a2")
    assert not result.complete
    assert any(
        c.kind == "ranks" and "10.0.0.1 device 0: rank 1 in the table read, 0 written" in c.message
        for c in result.conflicts
    )


def test_not_json_and_deep_json_are_located_errors(tmp_path: Path) -> None:
    path = tmp_path / "rt.json"
    path.write_text('{"version": "1.0",\n "server_list": [}')
    with pytest.raises(InputError, match="rt.json:2: not JSON"):
        read_rank_table(path, A2)
    path.write_text("[" * 200 + "]" * 200)
    with pytest.raises(InputError, match="nested more than"):
        read_rank_table(path, A2)


def test_a_copy_is_not_changed() -> None:
    table = table_10()
    before = copy.deepcopy(table)
    rank_table_seen(table, "rt.json", A2)
    assert table == before
