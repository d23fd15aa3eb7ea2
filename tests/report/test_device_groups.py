"""Address groups (device_network.groups / device_network.rule): planning, rules across groups,
the errors in the user's terms, the CSV table, and properties over random group layouts."""

from __future__ import annotations

import csv
import io
import ipaddress
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendprep.base import exitcodes
from ascendprep.base.findings import Severity
from ascendprep.base.yamlsource import InputError
from ascendprep.cli import main
from ascendprep.desired.state import build_desired
from ascendprep.inventory.addressing import plan_device_ips
from ascendprep.inventory.load import inventory_from_text
from ascendprep.report.plan import desired_document
from ascendprep.verify.mesh import mesh_pairs

ROOT = Path(__file__).resolve().parents[2]


def load(data: dict):
    return inventory_from_text(yaml.safe_dump(data, sort_keys=False))


def errors(plan) -> list:
    return [f for f in plan.findings if f.severity is Severity.ERROR]


def racks(count: int, per_rack: int, key: str = "rack", npus: int = 8) -> list[dict]:
    entries = []
    for rack in range(count):
        first = rack * per_rack + 1
        entries.append(
            {
                "name": f"s[{first:04d}-{first + per_rack - 1:04d}]",
                "host": f"10.60.{rack}.[1-{per_rack}]",
                "labels": {key: f"r{rack:02d}"},
            }
        )
    return entries


def test_flat_atlas800_past_one_plane_names_the_split_in_the_users_terms():
    plan = plan_device_ips(load({"name": "big", "product": "atlas-800", "nodes": racks(30, 10)}))
    capacity = [f for f in plan.findings if f.id == "ipplan.capacity"]
    assert capacity
    fix = capacity[0].fix
    assert "split into groups" in fix
    assert "your 'rack' label makes 30 groups of at most 10 servers" in fix
    assert "device_network.rule" in fix and "by: rack" in fix


def test_flat_atlas800_without_a_usable_label_says_how_many_groups():
    data = {"name": "big", "product": "atlas-800", "nodes": [{"name": "s[001-300]", "host": "h[001-300]"}]}
    fix = next(f.fix for f in plan_device_ips(load(data)).findings if f.id == "ipplan.capacity")
    assert "split into groups: at least 3 groups of at most 127 servers" in fix


def test_rule_atlas800_by_rack_keeps_the_four_planes_inside_each_rack():
    data = {
        "name": "r",
        "product": "atlas-800",
        "device_network": {"rule": {"supernet": "10.200.0.0/16", "by": "rack", "prefix": 24}},
        "nodes": racks(3, 20),
    }
    plan = plan_device_ips(load(data))
    assert not errors(plan)
    assert [g.name for g in plan.groups] == ["rack=r00", "rack=r01", "rack=r02"]
    s21 = {a.npu: a for a in plan.by_node["s0021"]}  # first server of rack r01: planes 10.200.4-7.0/24
    assert [s21[i].ip for i in range(8)] == [
        "10.200.4.2",
        "10.200.5.2",
        "10.200.6.2",
        "10.200.7.2",
        "10.200.4.3",
        "10.200.5.3",
        "10.200.6.3",
        "10.200.7.3",
    ]
    assert all(a.gateway == a.detect == f"10.200.{4 + a.npu % 4}.1" for a in s21.values())
    assert plan.layout == "dense"  # 20 servers per rack do not fit .101 + 10 per server


def test_a2_rails_per_leaf_by_rule():
    data = {
        "name": "pod",
        "product": "atlas-a2",
        "device_network": {"rule": {"supernet": "10.64.0.0/16", "by": "leaf", "prefix": 24, "rails": 8}},
        "nodes": racks(4, 4, key="leaf"),
    }
    plan = plan_device_ips(load(data))
    assert not errors(plan)
    for name, entries in plan.by_node.items():
        leaf = plan.group_of(name).index
        for a in entries:
            assert ipaddress.ip_address(a.ip) in ipaddress.ip_network(f"10.64.{leaf * 8 + a.npu}.0/24")
            assert a.gateway == a.detect == f"10.64.{leaf * 8 + a.npu}.1"


def test_rule_gateway_last_and_none():
    base = {"name": "pod", "product": "atlas-a2", "nodes": racks(2, 2, key="leaf"), "npus_per_node": 2}
    last = plan_device_ips(
        load(
            {
                **base,
                "device_network": {
                    "rule": {"supernet": "10.64.0.0/24", "by": "leaf", "prefix": 26, "rails": 2, "gateway": "last"}
                },
            }
        )
    )
    assert last.by_node["s0003"][1].gateway == "10.64.0.254"  # group 1, rail 1: the 4th /26
    none = plan_device_ips(
        load(
            {
                **base,
                "device_network": {"rule": {"supernet": "10.64.0.0/24", "by": "leaf", "prefix": 26, "gateway": "none"}},
            }
        )
    )
    assert all(a.gateway is None for e in none.by_node.values() for a in e)
    # without gateways a detect peer must stay inside the group's subnet
    for name, entries in none.by_node.items():
        group = none.group_of(name)
        for a in entries:
            assert ipaddress.ip_address(a.detect) in group.subnets[0]


def test_groups_capacity_names_the_group_and_the_prefix():
    explicit = {
        "name": "g",
        "product": "atlas-a2",
        "device_network": {
            "groups": [
                {"name": "small", "nodes": "s[0001-0004]", "subnet": "10.1.0.0/28", "gateway": "10.1.0.1"},
                {"name": "fine", "nodes": "s[0005-0008]", "subnet": "10.2.0.0/24", "gateway": "10.2.0.1"},
            ]
        },
        "nodes": racks(2, 4),
    }
    capacity = [f for f in plan_device_ips(load(explicit)).findings if f.id == "ipplan.capacity"]
    assert len(capacity) == 1
    assert "group small" in capacity[0].message and "need 32" in capacity[0].message
    assert capacity[0].fix.startswith("give device_network.groups[0] a /26")
    rule = {
        "name": "g",
        "product": "atlas-a2",
        "nodes": racks(2, 4),
        "device_network": {"rule": {"supernet": "10.1.0.0/24", "by": "rack", "prefix": 28}},
    }
    capacity = [f for f in plan_device_ips(load(rule)).findings if f.id == "ipplan.capacity"]
    assert capacity and capacity[0].fix.startswith("set device_network.rule.prefix to 26 or less")


def test_atlas800_group_past_one_plane_is_told_to_split_that_group():
    data = {
        "name": "g",
        "product": "atlas-800",
        "nodes": racks(2, 130),
        "device_network": {"rule": {"supernet": "10.0.0.0/16", "by": "rack", "prefix": 22}},
    }
    capacity = [f for f in plan_device_ips(load(data)).findings if f.id == "ipplan.capacity"]
    assert capacity
    assert "split group rack=r00 (130 servers) into groups of at most 126 servers" in capacity[0].fix


def test_management_address_inside_a_group_subnet_and_overrides_across_groups():
    data = {
        "name": "g",
        "product": "atlas-a2",
        "npus_per_node": 2,
        "device_network": {
            "groups": [
                {"name": "a", "nodes": "s[0001-0002]", "subnet": "10.60.0.0/24"},  # holds the management hosts
                {"name": "b", "nodes": "s[0003-0004]", "subnet": "10.9.0.0/24"},
            ]
        },
        "nodes": racks(2, 2)[:1]
        + [
            {"name": "s0003", "host": "10.70.0.3", "device_ips": {0: "10.60.0.50"}},
            {"name": "s0004", "host": "10.70.0.4", "device_ips": {0: "10.9.0.77", 1: "10.9.0.77"}},
        ],
    }
    plan = plan_device_ips(load(data))
    found = {(f.id, f.node, f.npu) for f in errors(plan)}
    assert ("ipplan.mgmt_overlap", "s0001", None) in found
    assert ("ipplan.wrong_plane", "s0003", 0) in found  # group b's NPU given group a's subnet
    assert ("ipplan.duplicate", "s0004", 1) in found
    message = next(f.message for f in errors(plan) if f.id == "ipplan.mgmt_overlap")
    assert "(group a)" in message


def test_ping_meshes_cross_groups_only_where_routed():
    def inventory(gateways: bool) -> dict:
        groups = [{"nodes": f"s[000{1 + 2 * g}-000{2 + 2 * g}]", "subnet": f"10.{g + 1}.0.0/24"} for g in range(2)]
        if gateways:
            for g, group in enumerate(groups):
                group["gateway"] = f"10.{g + 1}.0.1"
        return {
            "name": "m",
            "product": "atlas-a2",
            "npus_per_node": 1,
            "device_network": {"groups": groups},
            "nodes": racks(2, 2),
        }

    islands = mesh_pairs(build_desired(load(inventory(False))), "full")
    assert sorted((a.node, b.node) for a, b in islands) in (
        [("s0001", "s0002"), ("s0003", "s0004")],
        [("s0002", "s0001"), ("s0004", "s0003")],
    )
    routed = mesh_pairs(build_desired(load(inventory(True))), "full")
    assert len(routed) == 6
    ring_islands = {frozenset((a.node, b.node)) for a, b in mesh_pairs(build_desired(load(inventory(False))), "ring")}
    assert ring_islands == {frozenset(("s0001", "s0002")), frozenset(("s0003", "s0004"))}
    ring_routed = {frozenset((a.node, b.node)) for a, b in mesh_pairs(build_desired(load(inventory(True))), "ring")}
    assert frozenset(("s0002", "s0003")) in ring_routed and frozenset(("s0003", "s0001")) in ring_routed


def test_offline_json_and_text_name_the_groups():
    desired = build_desired(
        load(
            {
                "name": "pod",
                "product": "atlas-a2",
                "nodes": racks(2, 2, key="leaf"),
                "device_network": {"rule": {"supernet": "10.64.0.0/16", "by": "leaf", "prefix": 24, "rails": 2}},
            }
        )
    )
    document = desired_document(desired)
    assert document["cluster"]["planes"][3] == {
        "subnet": "10.64.3.0/24",
        "gateway": "10.64.3.1",
        "group": "leaf=r01",
        "rail": 1,
    }
    assert [n["group"] for n in document["nodes"]] == ["leaf=r00", "leaf=r00", "leaf=r01", "leaf=r01"]


def test_csv_refuses_a_broken_inventory_and_writes_nothing(tmp_path: Path):
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump({"name": "big", "product": "atlas-800", "nodes": racks(30, 10)}))
    result = CliRunner().invoke(main, ["plan", "--offline", "--format", "csv", str(path)])
    assert result.exit_code == exitcodes.INVALID
    assert result.stdout == ""
    assert "split into groups" in " ".join(result.stderr.split())


def test_csv_streams_4096_nodes(tmp_path: Path):
    path = tmp_path / "inv.yaml"
    data = {
        "name": "huge",
        "product": "atlas-a2",
        "device_network": {"rule": {"supernet": "10.0.0.0/12", "by": "leaf", "prefix": 24, "rails": 8}},
        "nodes": racks(128, 32, key="leaf"),
    }
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["plan", "--offline", "--format", "csv", str(path)])
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["node", "host", "npu", "ip", "netmask", "gateway", "detect"]
    assert len(rows) == 1 + 4096 * 8
    assert len({r[3] for r in rows[1:]}) == 4096 * 8


def test_csv_needs_offline():
    result = CliRunner().invoke(main, ["plan", "--format", "csv", str(ROOT / "inventories" / "a2-pod512.yaml")])
    assert result.exit_code == exitcodes.INVALID
    assert "add --offline" in result.output


# --------------------------------------------------------------------------------------------
# Properties over random group layouts. The strategy knows which subnets it gave which group;
# the assertions judge the plan against that, not against the planner's own structures.


@st.composite
def grouped_clusters(draw):
    product = draw(st.sampled_from(["atlas-800", "atlas-a2", "atlas-a3"]))
    npus = {
        "atlas-800": draw(st.sampled_from([1, 2, 4, 8])),
        "atlas-a2": draw(st.integers(1, 8)),
        "atlas-a3": draw(st.integers(1, 16)),
    }[product]
    rails = {"atlas-800": 4, "atlas-a3": 2}.get(product) or draw(st.integers(1, 4))
    group_count = draw(st.integers(1, 6))
    sizes = [draw(st.integers(1, 9)) for _ in range(group_count)]
    # Interleave the groups' nodes so that membership by label is not membership by position.
    owners = [g for g, size in enumerate(sizes) for _ in range(size)]
    owners = draw(st.permutations(owners))
    prefix = draw(st.integers(24, 27))
    gateway = draw(st.sampled_from(["first", "last", "none"]))
    form = draw(st.sampled_from(["rule", "groups"]))
    nodes = [
        {"name": f"n{i:03d}", "host": f"10.250.{i // 200}.{i % 200 + 1}", "labels": {"leaf": f"l{g}"}}
        for i, g in enumerate(owners)
    ]
    order = list(dict.fromkeys(owners))  # label values in order of first appearance
    size = 1 << (32 - prefix)
    base = int(ipaddress.IPv4Address("172.20.0.0"))
    expected = {}
    for position, g in enumerate(order):
        subnets = [ipaddress.IPv4Network((base + (position * rails + r) * size, prefix)) for r in range(rails)]
        gws = [
            None if gateway == "none" else (s.network_address + 1 if gateway == "first" else s.broadcast_address - 1)
            for s in subnets
        ]
        expected[f"l{g}"] = list(zip(subnets, gws))
    if form == "rule":
        rule = {"supernet": "172.20.0.0/16", "by": "leaf", "prefix": prefix, "gateway": gateway}
        if product == "atlas-a2":
            rule["rails"] = rails
        network = {"rule": rule}
    else:
        groups = []
        for value in draw(st.permutations(list(expected))):
            group = {"match": {"leaf": value}, "subnets": [str(s) for s, _ in expected[value]]}
            if gateway != "none":
                group["gateways"] = [str(gw) for _, gw in expected[value]]
            groups.append(group)
        network = {"groups": groups}
    data = {"name": "h", "product": product, "npus_per_node": npus, "device_network": network, "nodes": nodes}
    return data, expected


def _rail(product: str, npu: int, rails: int) -> int:
    return npu % 4 if product == "atlas-800" else npu % 2 if product == "atlas-a3" else npu % rails


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped_clusters())
def test_every_grouped_plan_keeps_every_rule(case):
    data, expected = case
    plan = plan_device_ips(load(data))
    if any(f.id == "ipplan.capacity" for f in plan.findings):
        return  # a clear capacity error is the right answer when a group outgrows its subnet
    assert not errors(plan), plan.findings
    product = data["product"]
    mgmt = {n["host"] for n in data["nodes"]}
    gateways = {str(gw) for per in expected.values() for _, gw in per if gw is not None}
    seen: set[str] = set()
    octets: dict[ipaddress.IPv4Network, set[int]] = {}
    for node in data["nodes"]:
        mine = expected[node["labels"]["leaf"]]
        entries = plan.by_node[node["name"]]
        assert [a.npu for a in entries] == list(range(data["npus_per_node"]))
        for a in entries:
            subnet, gateway = mine[_rail(product, a.npu, len(mine))]
            ip = ipaddress.ip_address(a.ip)
            assert ip in subnet and ip not in (subnet.network_address, subnet.broadcast_address)
            assert a.netmask == str(subnet.netmask)
            assert a.ip not in seen and a.ip not in mgmt and a.ip not in gateways
            seen.add(a.ip)
            assert a.gateway == (str(gateway) if gateway else None)
            if gateway is not None:
                assert a.detect == str(gateway)
            elif a.detect is not None:
                assert ipaddress.ip_address(a.detect) in subnet and a.detect != a.ip
            if product == "atlas-800":
                assert int(ip) & 0xFF not in octets.setdefault(subnet, set())
                octets[subnet].add(int(ip) & 0xFF)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped_clusters(), st.data())
def test_an_overlap_between_groups_is_a_located_error(case, data_strategy):
    data, expected = case
    network = data["device_network"]
    if "groups" not in network or len(network["groups"]) < 2:
        return
    victim = data_strategy.draw(st.integers(1, len(network["groups"]) - 1))
    network["groups"][victim]["subnets"][0] = network["groups"][0]["subnets"][-1]
    with pytest.raises(InputError) as caught:
        load(data)
    problems = [str(p) for p in caught.value.problems]
    assert any("overlaps" in p and "device_network.groups[" in p for p in problems), problems
    assert all(p.startswith("inventory.yaml:") for p in problems)


def test_groups_document_round_trips_through_json():
    """The JSON plan of a grouped inventory is plain JSON (no IPv4 objects leak into it)."""
    desired = build_desired(
        load(
            {
                "name": "pod",
                "product": "atlas-a2",
                "nodes": racks(2, 1, key="leaf"),
                "device_network": {"rule": {"supernet": "10.64.0.0/16", "by": "leaf", "prefix": 24}},
            }
        )
    )
    assert json.loads(json.dumps(desired_document(desired)))["cluster"]["planes"][1]["group"] == "leaf=r01"


def test_groups_by_several_ranges_and_several_labels():
    data = {
        "name": "g",
        "product": "atlas-a2",
        "npus_per_node": 1,
        "device_network": {
            "groups": [
                {"name": "odd", "nodes": ["s0001", "s[0003-0003]"], "subnet": "10.1.0.0/24"},
                {"name": "even", "match": {"rack": "r00", "row": "b"}, "subnet": "10.2.0.0/24"},
            ]
        },
        "nodes": [
            {"name": "s0001", "host": "10.60.0.1", "labels": {"rack": "r00", "row": "a"}},
            {"name": "s0002", "host": "10.60.0.2", "labels": {"rack": "r00", "row": "b"}},
            {"name": "s0003", "host": "10.60.0.3", "labels": {"rack": "r00", "row": "a"}},
            {"name": "s0004", "host": "10.60.0.4", "labels": {"rack": "r00", "row": "b"}},
        ],
    }
    plan = plan_device_ips(load(data))
    assert not errors(plan)
    assert {n: plan.group_of(n).name for n in plan.by_node} == {
        "s0001": "odd",
        "s0002": "even",
        "s0003": "odd",
        "s0004": "even",
    }
    # peer detection stays inside the group: s0001 probes s0003, s0004 probes s0002
    assert plan.by_node["s0001"][0].detect == plan.by_node["s0003"][0].ip
    assert plan.by_node["s0004"][0].detect == plan.by_node["s0002"][0].ip


def test_conventional_layout_per_rack_group():
    data = {
        "name": "r",
        "product": "atlas-800",
        "device_network": {"layout": "conventional", "rule": {"supernet": "10.200.0.0/16", "by": "rack", "prefix": 24}},
        "nodes": racks(2, 3),
    }
    plan = plan_device_ips(load(data))
    assert plan.layout == "conventional" and not errors(plan)
    assert plan.by_node["s0004"][0].ip == "10.200.4.101" and plan.by_node["s0005"][4].ip == "10.200.4.110"
    too_many = {**data, "nodes": racks(2, 17)}  # .101 + 10 x 16 is past .254
    assert "ipplan.layout" in {f.id for f in plan_device_ips(load(too_many)).findings}


def test_group_names_from_labels_are_shown_as_text_not_markup():
    from rich.console import Console

    from ascendprep.report.plan import print_plan

    data = {
        "name": "m",
        "product": "atlas-a2",
        "npus_per_node": 1,
        "device_network": {"rule": {"supernet": "10.64.0.0/16", "by": "leaf", "prefix": 24}},
        "nodes": [
            {"name": "a1", "host": "10.0.0.1", "labels": {"leaf": "[bold]x[/bold]"}},
            {"name": "b1", "host": "10.0.0.2", "labels": {"leaf": "y"}},
        ],
    }
    console = Console(record=True, width=200)
    print_plan(console, build_desired(load(data)))
    text = console.export_text()
    assert "leaf=[bold]x[/bold]" in text and "a1 (10.0.0.1) group leaf=[bold]x[/bold]" in text


def test_explicit_detect_ip_must_be_reachable_by_its_groups_rule():
    def data(gateway: bool) -> dict:
        groups = [
            {"name": "a", "nodes": "s0001", "subnet": "10.1.0.0/24"},
            {"name": "b", "nodes": "s0002", "subnet": "10.2.0.0/24"},
        ]
        if gateway:
            groups[0]["gateway"] = "10.1.0.1"
            groups[1]["gateway"] = "10.2.0.1"
        return {
            "name": "d",
            "product": "atlas-a2",
            "npus_per_node": 1,
            "device_network": {"detect": "explicit", "groups": groups},
            "nodes": [
                {"name": "s0001", "host": "10.60.0.1", "detect_ips": {0: "10.2.0.9"}},  # group b's subnet
                {"name": "s0002", "host": "10.60.0.2", "detect_ips": {0: "10.2.0.9"}},
            ],
        }

    unrouted = {(f.id, f.node) for f in errors(plan_device_ips(load(data(False))))}
    assert unrouted == {("ipplan.detect_unreachable", "s0001")}
    assert not errors(plan_device_ips(load(data(True))))
