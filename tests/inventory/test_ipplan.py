"""Device-IP rules: documented layouts, every rule violation, and invariants over random clusters."""

from __future__ import annotations

import ipaddress

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendprep.base.findings import Severity
from ascendprep.inventory.addressing import plan_device_ips
from ascendprep.inventory.load import inventory_from_text


def make(product="atlas-a2", nodes=2, npus=8, network=None, hosts="10.0.0.[11-{last}]", entries=None, **extra):
    data = {"name": "t", "product": product, "npus_per_node": npus}
    if network is not None:
        data["device_network"] = network
    data["nodes"] = entries or [
        {
            "name": f"n[1-{nodes}]" if nodes > 1 else "n1",
            "host": hosts.format(last=10 + nodes) if nodes > 1 else "10.0.0.11",
        }
    ]
    data.update(extra)
    return inventory_from_text(yaml.safe_dump(data))


def ids(plan, severity=Severity.ERROR):
    return sorted({f.id for f in plan.findings if f.severity is severity})


def test_conventional_two_server_910_matches_the_install_guide():
    plan = plan_device_ips(make("atlas-800", nodes=2))
    assert plan.layout == "conventional"
    s0 = {a.npu: a.ip for a in plan.by_node["n1"]}
    s1 = {a.npu: a.ip for a in plan.by_node["n2"]}
    assert s0 == {
        0: "192.168.100.101",
        1: "192.168.101.101",
        2: "192.168.102.101",
        3: "192.168.103.101",
        4: "192.168.100.100",
        5: "192.168.101.100",
        6: "192.168.102.100",
        7: "192.168.103.100",
    }
    assert s1[0] == "192.168.100.111" and s1[4] == "192.168.100.110" and s1[7] == "192.168.103.110"
    assert all(a.netmask == "255.255.255.0" for a in plan.by_node["n1"])
    # peer detection: the same index on the other server
    assert plan.by_node["n1"][0].detect == "192.168.100.111"
    assert plan.by_node["n2"][3].detect == "192.168.103.101"
    assert plan.findings == []


def test_910_beyond_sixteen_servers_switches_to_dense_and_keeps_the_rules():
    plan = plan_device_ips(make("atlas-800", nodes=20))
    assert plan.layout == "dense"
    assert not ids(plan)
    ips = [a.ip for entries in plan.by_node.values() for a in entries]
    assert len(ips) == len(set(ips)) == 160


def test_910_capacity_error_says_what_would_fit():
    plan = plan_device_ips(make("atlas-800", nodes=130))
    errors = [f for f in plan.findings if f.id == "ipplan.capacity"]
    assert errors and "at most 254" in errors[0].fix


def test_a2_capacity_error_names_the_prefix():
    plan = plan_device_ips(make(nodes=64, network={"subnet": "10.20.0.0/24"}))
    errors = [f for f in plan.findings if f.id == "ipplan.capacity"]
    assert errors
    assert "needs 512" in errors[0].message and "/22" in errors[0].fix


def test_a2_routed_fabric_uses_the_gateway_for_detection():
    plan = plan_device_ips(make(nodes=3, network={"subnet": "29.1.0.0/16", "gateway": "29.1.0.1"}))
    entries = [a for e in plan.by_node.values() for a in e]
    assert plan.detect_policy == "gateway"
    assert all(a.gateway == "29.1.0.1" and a.detect == "29.1.0.1" for a in entries)
    assert "29.1.0.1" not in {a.ip for a in entries}


def test_a2_without_gateway_detects_the_same_index_on_the_next_node():
    plan = plan_device_ips(make(nodes=3, network={"subnet": "10.20.0.0/24"}))
    n1, n2, n3 = plan.by_node["n1"], plan.by_node["n2"], plan.by_node["n3"]
    assert n1[5].detect == n2[5].ip and n2[5].detect == n3[5].ip and n3[5].detect == n1[5].ip


def test_single_node_detects_a_same_plane_npu():
    plan = plan_device_ips(make("atlas-800", nodes=1))
    single = {a.npu: a for a in plan.by_node["n1"]}
    assert single[0].detect == single[4].ip and single[4].detect == single[0].ip


def test_single_npu_single_node_has_no_peer_warning():
    plan = plan_device_ips(make(nodes=1, npus=1, network={"subnet": "10.20.0.0/24"}))
    assert ids(plan, Severity.WARNING) == ["ipplan.no_peer"]
    assert plan.by_node["n1"][0].detect is None


@pytest.mark.parametrize(
    "override, rule",
    [
        ("192.168.1.5", "ipplan.vnic_subnet"),
        ("10.99.0.5", "ipplan.wrong_plane"),
        ("10.20.0.0", "ipplan.reserved_address"),
        ("10.20.0.1", "ipplan.gateway_conflict"),
    ],
)
def test_a2_override_rules(override, rule):
    entries = [{"name": "a", "host": "10.0.0.11", "device_ips": {3: override}}, {"name": "b", "host": "10.0.0.12"}]
    plan = plan_device_ips(make(entries=entries, network={"subnet": "10.20.0.0/24", "gateway": "10.20.0.1"}))
    found = [f for f in plan.findings if f.id == rule]
    assert found, plan.findings
    assert found[0].node == "a" and found[0].npu == 3 and override in found[0].message


def test_override_duplicate_and_management_address():
    entries = [
        {"name": "a", "host": "10.20.0.200", "device_ips": {0: "10.20.0.50"}},
        {"name": "b", "host": "10.0.0.12", "device_ips": {0: "10.20.0.50", 1: "10.20.0.200"}},
    ]
    plan = plan_device_ips(make(entries=entries, network={"subnet": "10.20.0.0/24"}))
    rules = {(f.id, f.node, f.npu) for f in plan.findings}
    assert ("ipplan.duplicate", "b", 0) in rules
    assert ("ipplan.mgmt_overlap", "b", 1) in rules
    # the subnet containing a's management address is itself a finding
    assert any(f.id == "ipplan.mgmt_overlap" and f.npu is None for f in plan.findings)


def test_910_override_in_the_wrong_plane():
    entries = [{"name": "a", "host": "10.0.0.11", "device_ips": {1: "192.168.100.50"}}]
    plan = plan_device_ips(make("atlas-800", entries=entries))
    assert [(f.id, f.npu) for f in plan.findings] == [("ipplan.wrong_plane", 1)]


def test_valid_override_is_kept_and_skipped_by_allocation():
    entries = [{"name": "a", "host": "10.0.0.11", "device_ips": {0: "10.20.0.2"}}, {"name": "b", "host": "10.0.0.12"}]
    plan = plan_device_ips(make(entries=entries, network={"subnet": "10.20.0.0/24"}))
    ips = [a.ip for e in plan.by_node.values() for a in e]
    assert plan.by_node["a"][0].ip == "10.20.0.2" and plan.by_node["a"][0].source == "explicit"
    assert len(ips) == len(set(ips))


def test_gateway_outside_subnet_and_vnic_overlap():
    plan = plan_device_ips(make(nodes=2, network={"subnet": "10.20.0.0/24", "gateway": "10.21.0.1"}))
    assert "ipplan.gateway_subnet" in ids(plan)
    plan = plan_device_ips(make(nodes=2, network={"subnet": "192.168.0.0/23"}))
    assert "ipplan.vnic_subnet" in ids(plan)


def test_a3_dies_of_one_npu_sit_in_different_subnets():
    plan = plan_device_ips(make("atlas-a3", nodes=2, npus=16, network={"subnets": ["10.30.0.0/24", "10.31.0.0/24"]}))
    assert not ids(plan)
    n1 = plan.by_node["n1"]
    for k in range(8):
        a, b = ipaddress.ip_address(n1[2 * k].ip), ipaddress.ip_address(n1[2 * k + 1].ip)
        assert a in ipaddress.ip_network("10.30.0.0/24") and b in ipaddress.ip_network("10.31.0.0/24")


# --------------------------------------------------------------------------------------------
# Invariants over random clusters


@st.composite
def clusters(draw):
    product = draw(st.sampled_from(["atlas-800", "atlas-a2", "atlas-a3"]))
    if product == "atlas-800":
        npus = draw(st.sampled_from([1, 2, 4, 8]))
    elif product == "atlas-a2":
        npus = draw(st.integers(1, 8))
    else:
        npus = draw(st.integers(1, 16))
    nodes = draw(st.integers(1, 40))
    prefix = draw(st.integers(20, 27))
    second = draw(st.integers(16, 31))
    planes = {"atlas-800": 4, "atlas-a3": 2}.get(product, draw(st.integers(1, 3)))
    step = 1 << (32 - prefix)
    base = int(ipaddress.IPv4Address(f"172.{second}.0.0"))
    subnets = [str(ipaddress.IPv4Network((base + i * step * 2, prefix))) for i in range(planes)]
    use_gateway = draw(st.booleans())
    network = {"subnets": subnets} if planes > 1 or product != "atlas-a2" else {"subnet": subnets[0]}
    if use_gateway:
        gateways = [str(ipaddress.IPv4Network(s).network_address + 1) for s in subnets]
        if "subnets" in network:
            network["gateways"] = gateways
        else:
            network["gateway"] = gateways[0]
    return make(product, nodes=nodes, npus=npus, network=network)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_every_generated_plan_keeps_every_invariant(inventory):
    plan = plan_device_ips(inventory)
    if "ipplan.capacity" in ids(plan):
        return  # a clear capacity error is the correct answer for a cluster that does not fit
    assert not ids(plan), plan.findings
    product = inventory.product
    vnic = ipaddress.ip_network("192.168.1.0/24")
    mgmt = {node.host for node in inventory.nodes}
    seen = set()
    by_plane_octets: dict[int, set[int]] = {}
    for node in inventory.nodes:
        entries = plan.by_node[node.name]
        assert [a.npu for a in entries] == list(range(node.npus))
        for a in entries:
            ip = ipaddress.ip_address(a.ip)
            assert a.ip not in seen
            seen.add(a.ip)
            assert ip not in vnic and a.ip not in mgmt
            plane = plan.planes[product.plane_of(a.npu, len(plan.planes))]
            assert ip in plane.network and ip not in (plane.network.network_address, plane.network.broadcast_address)
            assert a.netmask == str(plane.network.netmask)
            if a.gateway is not None:
                assert ipaddress.ip_address(a.gateway) in plane.network and a.gateway != a.ip
                assert a.detect == a.gateway
            elif a.detect is not None:
                assert ipaddress.ip_address(a.detect) in plane.network and a.detect != a.ip
            if product.id == "atlas-800":
                octet = int(ip) & 0xFF
                assert octet not in by_plane_octets.setdefault(plane.index, set())
                by_plane_octets[plane.index].add(octet)
    if product.id == "atlas-800":
        for node in inventory.nodes:
            nets = [ipaddress.ip_network(f"{a.ip}/{a.prefix}", strict=False) for a in plan.by_node[node.name]]
            for i in range(min(node.npus, 4)):
                for j in range(min(node.npus, 4)):
                    assert (nets[i] == nets[j]) == (i == j)
                if i + 4 < node.npus:
                    assert nets[i] == nets[i + 4]
    if product.id == "atlas-a3":
        for node in inventory.nodes:
            entries = plan.by_node[node.name]
            for k in range(0, node.npus - 1, 2):
                assert ipaddress.ip_network(
                    f"{entries[k].ip}/{entries[k].prefix}", strict=False
                ) != ipaddress.ip_network(f"{entries[k + 1].ip}/{entries[k + 1].prefix}", strict=False)
