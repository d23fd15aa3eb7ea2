"""A3 planning: super-pods in the inventory, the rank table 1.2 they give, the address ranges the
A3 driver refuses, and the inventories whose rank table HCCL would refuse (refused at plan with a
located error, or written so that the table passes)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ascendprep.base import exitcodes
from ascendprep.base.yamlsource import InputError
from ascendprep.cli import main
from ascendprep.desired.ranktable import build_rank_table, server_ids
from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text, load_inventory
from ascendprep.inventory.ranktable_rules import check_rank_table
from ascendprep.inventory.superpods import sdid, vnic_address

EXAMPLE = Path(__file__).resolve().parents[2] / "inventories" / "a3-superpod.yaml"


def a3(
    nodes: list[dict[str, Any]],
    *,
    subnets=("10.30.0.0/24", "10.31.0.0/24"),
    env=None,
    training=None,
    product="atlas-a3",
    npus=None,
) -> str:
    data: dict[str, Any] = {
        "name": "a3",
        "product": product,
        "device_network": {"subnets": list(subnets)},
        "nodes": nodes,
    }
    if npus is not None:
        data["npus_per_node"] = npus
    if env:
        data["env"] = env
    if training:
        data["training"] = training
    return yaml.safe_dump(data, sort_keys=False)


TWO_PODS = [
    {"name": "a3-[1-2]", "host": "10.0.0.[11-12]", "super_pod": 0},
    {"name": "a3-[3-4]", "host": "10.0.0.[13-14]", "super_pod": 1},
]


def desired(text: str):
    return build_desired(inventory_from_text(text))


def table_of(text: str) -> dict[str, Any]:
    state = desired(text)
    assert not state.invalid, state.findings
    return json.loads(
        next(f.content for f in state.nodes[next(iter(state.nodes))].files if f.path.endswith("rank_table.json"))
    )


def plan_offline(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["plan", str(path), "--offline"])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, " ".join(result.output.split())


def located(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        inventory_from_text(text)
    return [str(p) for p in caught.value.problems]


# --- SDIDs and vNIC addresses (driver tool_cmd.c, checked against the real capture) -------------


def test_sdid_matches_the_real_capture() -> None:
    assert sdid(40, 0) == 167772160
    assert sdid(40, 1) == 167837697
    assert sdid(40, 10) == 169082890


def test_vnic_address_matches_the_hccl_log() -> None:
    assert vnic_address(0, 0) == "192.0.2.199"
    assert vnic_address(0, 1) == "192.0.3.198"


# --- rank table 1.2 ------------------------------------------------------------------------------


def test_two_pods_give_a_12_table_hccl_accepts() -> None:
    table = table_of(a3(TWO_PODS))
    assert table["version"] == "1.2" and table["server_count"] == "4"
    assert [s["server_id"] for s in table["server_list"]] == ["10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"]
    assert table["super_pod_list"] == [
        {"super_pod_id": "0", "server_list": [{"server_id": "10.0.0.11"}, {"server_id": "10.0.0.12"}]},
        {"super_pod_id": "1", "server_list": [{"server_id": "10.0.0.13"}, {"server_id": "10.0.0.14"}]},
    ]
    second = table["server_list"][1]
    assert second["host_ip"] == "10.0.0.12"
    # Devices in local-rank order, ranks following torchrun's node rank x 16 + local rank.
    assert [d["device_id"] for d in second["device"]] == [str(d) for d in range(16)]
    assert [d["rank_id"] for d in second["device"]] == [str(16 + d) for d in range(16)]
    assert [d["super_device_id"] for d in second["device"]] == [str(sdid(1, d)) for d in range(16)]
    # More than one pod: every device carries its RoCE address; no op-retry, no backup.
    assert all("device_ip" in d and "backup_device_ip" not in d for s in table["server_list"] for d in s["device"])
    # The first server of the second pod restarts at server index 0.
    assert table["server_list"][2]["device"][0]["super_device_id"] == str(sdid(0, 0))
    assert check_rank_table(table, inventory_from_text(a3(TWO_PODS)).product) == []


def test_rank_order_matches_set_env_node_ranks() -> None:
    state = desired(a3(TWO_PODS))
    table = table_of(a3(TWO_PODS))
    for s, server in enumerate(table["server_list"]):
        node = next(n for n in state.nodes.values() if n.node.host == server["server_id"])
        set_env = next(f.content for f in node.files if f.path.endswith("set_env.sh"))
        assert f"export NODE_RANK={s}\n" in set_env
        assert server["device"][0]["rank_id"] == str(node.rank)


def test_op_retry_adds_the_other_die_as_backup() -> None:
    table = table_of(a3(TWO_PODS, env={"HCCL_OP_RETRY_ENABLE": "L1:1,L2:1", "HCCL_OP_EXPANSION_MODE": "AI_CPU"}))
    devices = table["server_list"][0]["device"]
    assert devices[0]["backup_device_ip"] == devices[1]["device_ip"]
    assert devices[1]["backup_device_ip"] == devices[0]["device_ip"]
    assert devices[5]["backup_device_ip"] == devices[4]["device_ip"]


def test_explicit_server_index_and_sdids() -> None:
    nodes = [{"name": "a3-[1-2]", "host": "10.0.0.[11-12]", "super_pod": 7, "server_index": 40}]
    table = table_of(a3(nodes))
    assert table["server_list"][0]["device"][0]["super_device_id"] == "167772160"
    assert table["server_list"][1]["device"][1]["super_device_id"] == str(sdid(41, 1))
    assert table["super_pod_list"] == [
        {"super_pod_id": "7", "server_list": [{"server_id": "10.0.0.11"}, {"server_id": "10.0.0.12"}]}
    ]


def test_logical_super_pods_split_one_physical_pod() -> None:
    nodes = [
        {"name": "a3-[1-2]", "host": "10.0.0.[11-12]", "super_pod": 0, "logical_super_pod": "lp-a"},
        {"name": "a3-[3-4]", "host": "10.0.0.[13-14]", "super_pod": 0, "logical_super_pod": "lp-b"},
    ]
    table = table_of(a3(nodes))
    assert [p["super_pod_id"] for p in table["super_pod_list"]] == ["lp-a", "lp-b"]
    # Server indexes count on across the physical pod, so SDIDs never repeat inside it.
    assert table["server_list"][2]["device"][0]["super_device_id"] == str(sdid(2, 0))
    # Without a rank table, set_env.sh tells HCCL the logical pod.
    state = desired(a3(nodes))
    assert "export HCCL_LOGIC_SUPERPOD_ID=lp-b\n" in next(
        f.content for f in state.nodes["a3-3"].files if f.path.endswith("set_env.sh")
    )
    state = desired(a3(nodes, training={"rank_table": True}))
    assert "HCCL_LOGIC_SUPERPOD_ID" not in next(
        f.content for f in state.nodes["a3-3"].files if f.path.endswith("set_env.sh")
    )


def test_a3_outside_a_super_pod_keeps_10() -> None:
    table = table_of(a3([{"name": "a3-[1-2]", "host": "10.0.0.[11-12]"}]))
    assert table["version"] == "1.0" and "super_pod_list" not in table
    assert all("super_device_id" not in d for s in table["server_list"] for d in s["device"])
    assert table["server_list"][0]["host_ip"] == "10.0.0.11"


# --- refused at plan, located ----------------------------------------------------------------------


def test_duplicate_sdids_in_one_pod_are_refused(tmp_path: Path) -> None:
    nodes = [
        {"name": "a3-1", "host": "10.0.0.11", "super_pod": 0, "server_index": 3},
        {"name": "a3-2", "host": "10.0.0.12", "super_pod": 0, "server_index": 3},
    ]
    code, output = plan_offline(tmp_path, a3(nodes))
    assert code == exitcodes.INVALID
    assert (
        f"{tmp_path / 'inventory.yaml'}:14: nodes[1].super_pod: a3-2 and a3-1 are both server 3 of super-pod 0"
        in output
    )
    assert "EI0014" in output


def test_same_server_index_in_two_pods_is_fine() -> None:
    nodes = [
        {"name": "a3-1", "host": "10.0.0.11", "super_pod": 0, "server_index": 3},
        {"name": "a3-2", "host": "10.0.0.12", "super_pod": 1, "server_index": 3},
    ]
    assert table_of(a3(nodes))["version"] == "1.2"


def test_a_pods_servers_must_be_listed_together() -> None:
    nodes = [
        {"name": "a3-1", "host": "10.0.0.11", "super_pod": 0},
        {"name": "a3-2", "host": "10.0.0.12", "super_pod": 1},
        {"name": "a3-3", "host": "10.0.0.13", "super_pod": 0},
    ]
    problems = located(a3(nodes))
    assert any("nodes[2].super_pod: a3-3 is in super-pod 0, whose servers are listed earlier" in p for p in problems), (
        problems
    )


def test_a_logical_pod_never_joins_two_physical_pods() -> None:
    nodes = [
        {"name": "a3-1", "host": "10.0.0.11", "super_pod": 0, "logical_super_pod": "lp"},
        {"name": "a3-2", "host": "10.0.0.12", "super_pod": 1, "logical_super_pod": "lp"},
    ]
    problems = located(a3(nodes))
    assert any(
        "nodes[1].logical_super_pod: logical super-pod 'lp' would join physical super-pods 0 (a3-1) and 1 (a3-2)" in p
        for p in problems
    ), problems


def test_super_pod_is_all_or_none_and_a3_only() -> None:
    mixed = [{"name": "a3-1", "host": "10.0.0.11", "super_pod": 0}, {"name": "a3-2", "host": "10.0.0.12"}]
    assert any("nodes[1]: a3-2 has no super_pod while other servers have one" in p for p in located(a3(mixed)))
    a2 = a3([{"name": "n1", "host": "10.0.0.11", "super_pod": 0}], product="atlas-a2", subnets=("10.30.0.0/24",))
    assert any("nodes[0].super_pod: super-pods exist only on atlas-a3" in p for p in located(a2))
    alone = a3([{"name": "a3-1", "host": "10.0.0.11", "server_index": 2}])
    assert any("nodes[0].server_index: server_index needs super_pod" in p for p in located(alone))


def test_server_index_beyond_the_pod_is_refused() -> None:
    problems = located(a3([{"name": "a3-[1-3]", "host": "10.0.0.[11-13]", "super_pod": 0, "server_index": 46}]))
    assert any(
        "nodes[0].server_index: a3-3 gets server index 48; a super-pod's servers are numbered 0-47" in p
        for p in problems
    ), problems


@pytest.mark.parametrize(
    "subnets,pods,reserved",
    [
        (("192.168.2.0/24", "10.31.0.0/24"), False, "192.168.0.0/21"),
        (("10.30.0.0/24", "192.168.0.0/16"), False, "192.168.0.0/21"),
        (("192.10.0.0/24", "10.31.0.0/24"), True, "192.0.0.0/8"),
    ],
)
def test_device_subnets_in_hccs_reserved_ranges_are_refused(tmp_path: Path, subnets, pods, reserved) -> None:
    nodes = TWO_PODS if pods else [{"name": "a3-[1-2]", "host": "10.0.0.[11-12]"}]
    code, output = plan_offline(tmp_path, a3(nodes, subnets=subnets))
    assert code == exitcodes.INVALID, output
    bad = next(i for i, s in enumerate(subnets) if not s.startswith("10."))
    assert (
        f"inventory.yaml:{5 + bad}: device_network.subnets[{bad}]: device subnet {subnets[bad]} lies in {reserved}, reserved for the HCCS virtual NICs"
        in output
    ), output


def test_outside_a_super_pod_the_rest_of_192_is_allowed() -> None:
    table = table_of(a3([{"name": "a3-[1-2]", "host": "10.0.0.[11-12]"}], subnets=("192.10.0.0/24", "192.11.0.0/24")))
    assert table["server_list"][0]["device"][0]["device_ip"].startswith("192.10.0.")


def test_reserved_range_in_a_group_is_located_at_the_group() -> None:
    text = yaml.safe_dump(
        {
            "name": "a3",
            "product": "atlas-a3",
            "device_network": {
                "groups": [
                    {"nodes": "a3-1", "subnets": ["10.30.0.0/24", "10.31.0.0/24"]},
                    {"nodes": "a3-2", "subnets": ["10.32.0.0/24", "192.168.4.0/24"]},
                ]
            },
            "nodes": [{"name": "a3-1", "host": "10.0.0.11"}, {"name": "a3-2", "host": "10.0.0.12"}],
        },
        sort_keys=False,
    )
    assert any(
        "device_network.groups[1].subnets[1]: device subnet 192.168.4.0/24 lies in 192.168.0.0/21" in p
        for p in located(text)
    )


# --- the four inventories whose tables HCCL refused --------------------------------------------------


def test_known_case_a3_nodes_by_host_name_write_a_table_without_host_ip() -> None:
    text = a3([{"name": "a3-[1-2]", "host": "a3-[1-2].example.com", "super_pod": 0}])
    table = table_of(text)
    assert all("host_ip" not in s for s in table["server_list"])
    assert check_rank_table(table, inventory_from_text(text).product) == []


def test_known_case_a3_host_names_with_op_retry_are_refused() -> None:
    text = a3(
        [{"name": "a3-[1-2]", "host": "a3-[1-2].example.com", "super_pod": 0}],
        env={"HCCL_OP_RETRY_ENABLE": "L1:1,L2:0"},
    )
    assert any(
        "nodes[0].host: 'a3-1.example.com' is a host name: op-retry (HCCL_OP_RETRY_ENABLE) needs the rank table's host_ip"
        in p
        for p in located(text)
    )


def test_known_case_one_host_on_two_ports_gets_unique_server_ids() -> None:
    text = a3(
        [{"name": "a3-1", "host": "10.0.0.11", "port": 2201}, {"name": "a3-2", "host": "10.0.0.11", "port": 2202}]
    )
    inventory = inventory_from_text(text)
    table = table_of(text)
    assert [s["server_id"] for s in table["server_list"]] == ["a3-1", "a3-2"]
    assert check_rank_table(table, inventory.product) == []


def test_known_case_host_name_over_64_characters_gets_a_short_server_id() -> None:
    long_host = ("a" * 60) + ".example.com"
    text = a3([{"name": "a3-1", "host": long_host}, {"name": "a3-2", "host": "10.0.0.12"}])
    table = table_of(text)
    assert [s["server_id"] for s in table["server_list"]] == ["a3-1", "a3-2"]
    assert check_rank_table(table, inventory_from_text(text).product) == []


def test_server_ids_stay_addresses_when_they_can() -> None:
    inventory = inventory_from_text(a3(TWO_PODS))
    assert list(server_ids(inventory.nodes).values()) == ["10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"]


def test_known_case_atlas_800_unlike_npu_counts_refused(tmp_path: Path) -> None:
    text = textwrap.dedent("""\
        name: mixed
        product: atlas-800
        nodes:
          - name: n1
            host: 10.0.0.11
          - name: n2
            host: 10.0.0.12
            npus: 4
        """)
    code, output = plan_offline(tmp_path, text)
    assert code == exitcodes.INVALID, output
    assert "inventory.yaml:8: nodes[1].npus: n2 has 4 NPUs but n1 has 8" in output
    assert "EI0014" in output


def test_atlas_a2_unlike_npu_counts_are_fine() -> None:
    text = textwrap.dedent("""\
        name: mixed
        product: atlas-a2
        device_network: {subnet: 10.30.0.0/24}
        nodes:
          - {name: n1, host: 10.0.0.11}
          - {name: n2, host: 10.0.0.12, npus: 4}
        """)
    assert table_of(text)["server_count"] == "2"


def test_a_table_hccl_would_refuse_is_a_plan_error() -> None:
    """The safety net: whatever slips past the inventory rules, the built table is checked."""
    state = desired(a3(TWO_PODS))
    from ascendprep.desired.state import rank_table_findings

    table = build_rank_table(state.inventory, state.ipplan)
    table["server_list"][1]["server_id"] = table["server_list"][0]["server_id"]
    findings = rank_table_findings(table, state.inventory)
    assert findings and findings[0].id == "ranktable.R6"
    assert state.invalid is False and "R6" in findings[0].message


# --- the example inventory ------------------------------------------------------------------------


def test_example_inventory_plans_clean(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--offline", "--format", "json"])
    assert result.exit_code == 0, result.output
    inventory = load_inventory(EXAMPLE)
    state = build_desired(inventory)
    table = json.loads(
        next(f.content for f in next(iter(state.nodes.values())).files if f.path.endswith("rank_table.json"))
    )
    assert table["version"] == "1.2" and len(table["super_pod_list"]) == 2
    assert check_rank_table(table, inventory.product) == []
