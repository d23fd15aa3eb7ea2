"""Whatever a deployer file or a rank table holds, the readers answer with what is there or a
located InputError: never another exception (a traceback for the user)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendprep.adopt.deployer import parse_deployer
from ascendprep.adopt.ranktable import rank_table_seen
from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.products import PRODUCTS

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = st.sampled_from(
    ["[hccn]", "[hccn:vars]", "[worker]", "10.0.0.1", "h1", "deviceip=", "detectip=", "netmask=", "gateways=",
     "10.20.0.1", "10.20.0.2,10.20.0.3", "fd00::1", "255.255.255.0", "255.0.255.0", '"', "'", "=", ",", "#", ";",
     "npu_num=2", "ansible_ssh_user=root", "[", "]", "\x00", "é", " ", "\n"]
)  # fmt: skip


@FUZZ
@given(st.lists(WORDS, max_size=40).map("".join), st.sampled_from([None, "atlas-a2", "atlas-800", "atlas-a3"]))
def test_any_deployer_text_is_read_or_refused_with_a_location(text: str, product: Any) -> None:
    try:
        seen = parse_deployer(text, "inv.ini", PRODUCTS[product] if product else None)
    except InputError as error:
        assert error.problems and all(p.file == "inv.ini" for p in error.problems)
    else:
        assert all(node.npus for node in seen.nodes)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.sampled_from(["0", "1", "10.0.0.1", "1.0", "1.2", "completed", "x"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "status", "server_count", "server_list", "server_id", "device", "device_id",
                         "device_ip", "rank_id", "super_pod_list", "super_pod_id", "super_device_id", "host_ip"]),
        inner,
        max_size=6,
    ),
    max_leaves=30,
)  # fmt: skip


@FUZZ
@given(JSON)
def test_any_json_value_as_a_rank_table_is_read_or_refused(table: Any) -> None:
    try:
        rank_table_seen(table, "rt.json", PRODUCTS["atlas-a2"])
    except InputError as error:
        assert error.problems and all(p.file == "rt.json" for p in error.problems)


def valid_table() -> dict[str, Any]:
    servers = [
        {
            "server_id": f"10.0.0.{s + 1}",
            "host_ip": f"10.0.0.{s + 1}",
            "device": [
                {"device_id": str(d), "device_ip": f"10.30.0.{s * 2 + d + 1}", "rank_id": str(s * 2 + d)}
                for d in range(2)
            ],
        }
        for s in range(2)
    ]
    return {"version": "1.0", "server_count": "2", "server_list": servers, "status": "completed"}


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, path + (index,))
    return found


@FUZZ
@given(st.data())
def test_a_valid_table_with_any_one_value_replaced_is_read_or_refused(data: st.DataObject) -> None:
    table = valid_table()
    path = data.draw(st.sampled_from(_paths(table)[1:]))
    holder = table
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = data.draw(JSON)
    try:
        rank_table_seen(table, "rt.json", PRODUCTS["atlas-a2"])
    except InputError as error:
        assert error.problems and all(p.file == "rt.json" for p in error.problems)
