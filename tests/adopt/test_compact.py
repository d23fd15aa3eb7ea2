"""The compactor: the most compact inventory that gives back exactly what is there, or says why not."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Optional

from ascendprep.adopt.compact import compact
from ascendprep.adopt.seen import NodeSeen, NpuSeen, Seen
from ascendprep.inventory.addressing import plan_device_ips
from ascendprep.inventory.load import load_inventory


def npu(
    devid: int, ip: str, mask: str = "255.255.255.0", gateway: Optional[str] = None, detect: Optional[str] = None
) -> NpuSeen:
    return NpuSeen(devid, ip, mask, gateway, detect)


def dense_a2(
    nodes: int = 4, npus: int = 8, first: str = "10.20.0.1", gateway: Optional[str] = "10.20.0.254"
) -> list[NodeSeen]:
    start = ipaddress.IPv4Address(first)
    return [
        NodeSeen(
            f"node{n + 1:02d}",
            f"10.0.0.{n + 1}",
            {d: npu(d, str(start + n * npus + d), gateway=gateway, detect=gateway) for d in range(npus)},
        )
        for n in range(nodes)
    ]


def planned(text_path: Path) -> dict[tuple[str, int], tuple]:
    plan = plan_device_ips(load_inventory(text_path))
    return {
        (a.node, a.npu): (a.ip, a.netmask, a.gateway, a.detect) for entries in plan.by_node.values() for a in entries
    }


def stated(nodes: list[NodeSeen]) -> dict[tuple[str, int], tuple]:
    return {(n.name, d): (v.ip, v.netmask, v.gateway, v.detect) for n in nodes for d, v in n.npus.items()}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "imported.yaml"
    path.write_text(text)
    return path


def test_a_cluster_on_the_rule_is_one_subnet_one_gateway_and_one_node_range(tmp_path: Path) -> None:
    nodes = dense_a2()
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert result.complete and result.form == "flat" and not result.off_pattern
    assert 'subnet: "10.20.0.0/24"' in result.text and 'gateway: "10.20.0.254"' in result.text
    assert 'host: "10.0.0.[1-4]"' in result.text and "device_ips" not in result.text
    assert planned(write(tmp_path, result.text)) == stated(nodes)


def test_a_recabled_node_is_explicit_and_named_off_the_pattern(tmp_path: Path) -> None:
    nodes = dense_a2(nodes=3)
    moved = {d: npu(d, f"10.20.0.{200 + d}", gateway="10.20.0.254", detect="10.20.0.254") for d in range(8)}
    nodes.insert(2, NodeSeen("node09", "10.0.0.9", moved))
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert result.off_pattern == ["node09"]
    assert "# off the pattern: node09" in result.text and '0: "10.20.0.200"' in result.text
    assert planned(write(tmp_path, result.text)) == stated(nodes)


def test_two_rails_are_found(tmp_path: Path) -> None:
    nodes = [
        NodeSeen(f"n{n}", f"10.0.0.{n + 1}", {d: npu(d, f"10.{40 + d % 2}.0.{1 + n * 4 + d // 2}") for d in range(8)})
        for n in range(3)
    ]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert 'subnets: ["10.40.0.0/24", "10.41.0.0/24"]' in result.text and not result.off_pattern
    got = planned(write(tmp_path, result.text))
    assert {k: v[:2] for k, v in got.items()} == {k: v[:2] for k, v in stated(nodes).items()}


def leaf_nodes(offset_second_leaf: int) -> list[NodeSeen]:
    nodes = []
    for leaf in range(2):
        net = ipaddress.IPv4Network(f"10.50.{leaf * offset_second_leaf}.0/24")
        gateway = str(net.network_address + 1)
        for k in range(2):
            npus = {
                d: npu(d, str(net.network_address + 2 + k * 8 + d), gateway=gateway, detect=gateway) for d in range(8)
            }
            nodes.append(NodeSeen(f"l{leaf}n{k}", f"10.1.{leaf}.{k + 1}", npus))
    return nodes


def test_leaves_laid_out_in_a_supernet_are_a_rule(tmp_path: Path) -> None:
    nodes = leaf_nodes(1)
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert result.form == "rule" and 'supernet: "10.50.0.0/23"' in result.text and "gateway: first" in result.text
    assert planned(write(tmp_path, result.text)) == stated(nodes)


def test_leaves_that_no_rule_gives_are_explicit_groups(tmp_path: Path) -> None:
    nodes = leaf_nodes(7)
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert result.form == "groups" and 'subnets: ["10.50.7.0/24"]' in result.text
    assert planned(write(tmp_path, result.text)) == stated(nodes)


def test_atlas_800_conventional_layout_is_found() -> None:
    nodes = []
    for n in range(3):
        npus = {}
        for d in range(8):
            base = ipaddress.IPv4Address(f"192.168.{100 + d % 4}.0")
            npus[d] = npu(d, str(base + (101 if d < 4 else 100) + 10 * n))
        nodes.append(NodeSeen(f"a{n}", f"10.0.0.{n + 1}", npus))
    result = compact(Seen(nodes, sources=["test"]), "atlas-800")
    assert result.layout == "conventional" and not result.off_pattern and "device_ips" not in result.text


def test_a_duplicate_device_ip_is_a_conflict_not_hidden() -> None:
    nodes = dense_a2(nodes=2)
    nodes[1].npus[3] = npu(3, nodes[0].npus[0].ip, gateway="10.20.0.254", detect="10.20.0.254")  # type: ignore[index]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert not result.complete
    assert any(c.kind == "duplicate_ip" and "node02 NPU 3" in c.message for c in result.conflicts)
    assert "# CONFLICTS" in result.text and "node02 NPU 3 has device IP 10.20.0.1" in result.text


def test_two_gateways_in_one_subnet_are_a_conflict() -> None:
    nodes = dense_a2(nodes=2)
    nodes[1] = NodeSeen(
        "node02",
        "10.0.0.2",
        {d: npu(d, f"10.20.0.{9 + d}", gateway="10.20.0.253", detect="10.20.0.253") for d in range(8)},
    )
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert not result.complete and any(c.kind == "gateway" for c in result.conflicts)


def test_detect_ips_no_policy_gives_are_explicit(tmp_path: Path) -> None:
    nodes = dense_a2(nodes=2, gateway=None)
    nodes = [
        NodeSeen(n.name, n.host, {d: npu(d, v.ip or "", detect="10.20.0.250") for d, v in n.npus.items()})
        for n in nodes
    ]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert "detect: explicit" in result.text
    assert planned(write(tmp_path, result.text)) == stated(nodes)


def test_the_majority_versions_are_pinned_and_the_odd_nodes_named() -> None:
    nodes = dense_a2(nodes=3)
    nodes = [
        NodeSeen(n.name, n.host, n.npus, versions={"driver": "24.1.0" if i != 1 else "23.0.3", "cann": "8.0.RC3"})
        for i, n in enumerate(nodes)
    ]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a2")
    assert 'driver: "24.1.0"' in result.text and 'cann: "8.0.RC3"' in result.text
    assert "# software.driver: node02 run 23.0.3, not 24.1.0" in result.text


def test_unreachable_hosts_make_the_output_incomplete() -> None:
    result = compact(
        Seen(dense_a2(nodes=2), sources=["hosts"], unreachable={"node03": "connection refused"}), "atlas-a2"
    )
    assert not result.complete and "# INCOMPLETE" in result.text and "node03: connection refused" in result.text


def test_addresses_alone_get_the_smallest_subnet_and_a_note(tmp_path: Path) -> None:
    nodes = [
        NodeSeen(n.name, n.host, {d: NpuSeen(d, v.ip, said=frozenset({"ip"})) for d, v in n.npus.items()})
        for n in dense_a2(2)
    ]
    result = compact(Seen(nodes, sources=["rank table"], rank_table=True), "atlas-a2")
    assert 'subnet: "10.20.0.0/27"' in result.text and any(c.kind == "netmask_guessed" for c in result.conflicts)
    assert "rank_table: true" in result.text
    got = planned(write(tmp_path, result.text))
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in stated(nodes).items()}


def test_outside_text_in_a_conflict_cannot_break_out_of_its_comment() -> None:
    nodes = dense_a2(nodes=1)
    seen = Seen(nodes, sources=["hosts"], unreachable={"node02": "bad\nproduct: atlas-800\x1b[2J"})
    result = compact(seen, "atlas-a2")
    assert "\nproduct: atlas-800" not in result.text and "\x1b" not in result.text


def test_what_breaks_a_load_rule_is_written_as_a_conflict_not_hidden() -> None:
    """A3 servers in a super-pod may not use 192.0.0.0/8 (the driver reserves it for the HCCS
    virtual NICs, docs/a3-superpod.md): a cluster that does is reported, the inventory not loaded."""
    nodes = [
        NodeSeen(
            f"s{n}",
            f"10.0.0.{n + 1}",
            {d: npu(d, f"192.{168 + d % 2}.50.{n * 8 + d // 2 + 1}") for d in range(16)},
            super_pod=0,
        )
        for n in range(2)
    ]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a3")
    assert result.inventory is None and not result.complete
    assert any(c.kind == "does_not_load" for c in result.conflicts) and "# CONFLICTS" in result.text


def test_a3_servers_run_together_only_while_their_server_indexes_count_up(tmp_path: Path) -> None:
    def server(n: int, index: int) -> NodeSeen:
        npus = {d: npu(d, f"10.{80 + d % 2}.0.{n * 8 + d // 2 + 1}") for d in range(16)}
        return NodeSeen(f"s{n}", f"10.0.0.{n + 1}", npus, super_pod=3, server_index=index)

    nodes = [server(0, 0), server(1, 1), server(2, 5), server(3, 6)]
    result = compact(Seen(nodes, sources=["test"]), "atlas-a3")
    assert result.text.count("super_pod: 3") == 2 and "server_index: 5" in result.text
    inventory = load_inventory(write(tmp_path, result.text))
    assert [n.server_index for n in inventory.nodes] == [0, 1, 5, 6]


def test_the_tls_switch_is_imported_and_a_mixed_one_is_a_conflict() -> None:
    nodes = [NodeSeen(n.name, n.host, n.npus, tls={d: 0 for d in n.npus}) for n in dense_a2(nodes=3)]
    assert "tls: false" in compact(Seen(nodes, sources=["hosts"]), "atlas-a2").text
    nodes[2] = NodeSeen(nodes[2].name, nodes[2].host, nodes[2].npus, tls={0: 1})
    result = compact(Seen(nodes, sources=["hosts"]), "atlas-a2")
    assert not result.complete and any(c.kind == "tls" and "not on node03" in c.message for c in result.conflicts)
