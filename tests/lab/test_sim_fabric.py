"""The simulated switch: ping reachability and net_health states (pure rules + end to end)."""

from __future__ import annotations

import pytest

from ascendprep.lab.sim import fabric, state


def make_nodes(product: str = "atlas-a2", npus: int = 8, names: tuple[str, ...] = ("n1", "n2")) -> dict[str, dict]:
    cabling = state.default_cabling(product, list(names), npus)
    return {
        name: state.new_node_document(product, {"name": name, "npus": npus, "cabling": cabling[name]}, 0.0)
        for name in names
    }


def configure(nodes, node, devid, ip=None, netmask="255.255.255.0", gateway=None, netdetect=None):
    device = nodes[node]["devices"][devid]
    device.update(ip=ip, netmask=netmask if ip else None, gateway=gateway, netdetect=netdetect)


class TestPing:
    def test_same_subnet_reaches(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10")
        configure(nodes, "n2", 0, "10.20.0.20")
        assert fabric.can_reach(nodes, "n1", 0, "10.20.0.20")
        assert fabric.can_reach(nodes, "n2", 0, "10.20.0.10")

    def test_different_subnets_without_gateway_fail(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10")
        configure(nodes, "n2", 0, "10.20.1.20")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.1.20")

    def test_gateway_on_both_routes_between_subnets(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10", gateway="10.20.0.1")
        configure(nodes, "n2", 0, "10.20.1.20", gateway="10.20.1.1")
        assert fabric.can_reach(nodes, "n1", 0, "10.20.1.20")

    def test_gateway_on_one_side_only_fails(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10", gateway="10.20.0.1")
        configure(nodes, "n2", 0, "10.20.1.20")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.1.20")

    def test_mismatched_netmasks_are_not_one_subnet(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10", netmask="255.255.0.0")
        configure(nodes, "n2", 0, "10.20.1.20", netmask="255.255.255.0")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.1.20")

    @pytest.mark.parametrize("where", ["admin", "fault", "optics"])
    def test_peer_link_down_fails(self, where):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10")
        configure(nodes, "n2", 0, "10.20.0.20")
        if where == "admin":
            nodes["n2"]["devices"][0]["admin_up"] = False
        elif where == "fault":
            nodes["n2"]["faults"].append({"kind": "link-down", "npu": 0})
        else:
            nodes["n2"]["devices"][0]["optical_present"] = False
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.0.20")

    def test_unconfigured_peer_fails(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.0.20")

    def test_source_without_ip_fails(self):
        nodes = make_nodes()
        configure(nodes, "n2", 0, "10.20.0.20")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.0.20")

    def test_gateway_address_answers_inside_subnet(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10", gateway="10.20.0.1")
        configure(nodes, "n1", 1, "10.20.0.11")
        assert fabric.can_reach(nodes, "n1", 0, "10.20.0.1")
        assert fabric.can_reach(nodes, "n1", 1, "10.20.0.1")
        assert not fabric.can_reach(nodes, "n1", 0, "10.20.0.2")

    def test_a3_dies_sharing_a_subnet_cannot_ping(self):
        nodes = make_nodes("atlas-a3", 16)
        configure(nodes, "n1", 0, "10.30.0.10")
        configure(nodes, "n1", 1, "10.30.0.11")
        configure(nodes, "n2", 0, "10.30.0.20")
        assert not fabric.can_reach(nodes, "n1", 0, "10.30.0.20")
        configure(nodes, "n1", 1, "10.31.0.11")
        assert fabric.can_reach(nodes, "n1", 0, "10.30.0.20")

    def test_a3_dies_of_one_npu_never_reach_each_other(self):
        nodes = make_nodes("atlas-a3", 16)
        configure(nodes, "n1", 0, "10.30.0.10", gateway="10.30.0.1")
        configure(nodes, "n1", 1, "10.31.0.11", gateway="10.31.0.1")
        assert not fabric.can_reach(nodes, "n1", 0, "10.31.0.11")


class TestNetHealth:
    def test_states(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10")
        assert fabric.net_health(nodes, "n1", 0) == "Init"
        configure(nodes, "n2", 0, "10.20.0.20")
        configure(nodes, "n1", 0, "10.20.0.10", netdetect="10.20.0.20")
        assert fabric.net_health(nodes, "n1", 0) == "Success"
        nodes["n2"]["devices"][0]["admin_up"] = False
        assert fabric.net_health(nodes, "n1", 0) == "Receive timeout"
        configure(nodes, "n1", 0, "10.20.0.10", netdetect="10.99.0.1")
        assert fabric.net_health(nodes, "n1", 0) == "Unreachable"
        nodes["n1"]["devices"][0]["admin_up"] = False
        assert fabric.net_health(nodes, "n1", 0) == "Fault"

    def test_detect_ip_equal_to_gateway(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "29.1.137.205", "255.255.0.0", gateway="29.1.0.1", netdetect="29.1.0.1")
        assert fabric.net_health(nodes, "n1", 0) == "Success"

    def test_fault_forces_receive_timeout(self):
        nodes = make_nodes()
        configure(nodes, "n1", 0, "10.20.0.10", netdetect="10.20.0.20")
        configure(nodes, "n2", 0, "10.20.0.20")
        nodes["n1"]["faults"].append({"kind": "net-health-fail", "npu": None})
        assert fabric.net_health(nodes, "n1", 0) == "Receive timeout"


def test_end_to_end_two_subnets_need_gateways(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.set_ip("node2", 0, "10.20.1.20")
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "10.20.1.20").returncode == 1
    lab.ok("node1", "-i", "0", "-gateway", "-s", "gateway", "10.20.0.1")
    lab.ok("node2", "-i", "0", "-gateway", "-s", "gateway", "10.20.1.1")
    out = lab.ok("node1", "-i", "0", "-ping", "-g", "address", "10.20.1.20")
    assert out.endswith("3 packets transmitted, 3 received, 0.00% packet loss\n")


def test_end_to_end_link_down_breaks_ping_and_health(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.set_ip("node2", 0, "10.20.0.20")
    lab.ok("node1", "-i", "0", "-netdetect", "-s", "address", "10.20.0.20")
    assert lab.ok("node1", "-i", "0", "-net_health", "-g") == "net health status: Success\n"
    lab.ok("node2", "-i", "0", "-link", "-s", "down")
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "10.20.0.20").returncode == 1
    assert lab.ok("node1", "-i", "0", "-net_health", "-g") == "net health status: Receive timeout\n"
    own = lab.hccn("node2", "-i", "0", "-ping", "-g", "address", "10.20.0.10")
    assert (own.returncode, own.stdout, own.stderr) == (22, "", "Execute failed: Link status is down.\n")
    assert lab.ok("node2", "-i", "0", "-net_health", "-g") == "net health status: Fault\n"
    lab.ok("node2", "-i", "0", "-cfg", "recovery")
    assert lab.ok("node1", "-i", "0", "-net_health", "-g") == "net health status: Success\n"


def _reply_times(out: str) -> list[float]:
    import re

    return [float(t) for t in re.findall(r"recv seq=\d+,time=([0-9.]+)ms", out)]


def test_end_to_end_a_shaped_node_answers_slowly(lab):
    """The lab's ``slow`` fault marks the node's document: pings from and to it wait out the bucket."""
    from ascendprep.lab.sim import state
    from ascendprep.lab.sim.hccn_tool import SHAPED_WAIT_MS

    lab.set_ip("node1", 0, "10.20.0.10")
    lab.set_ip("node2", 0, "10.20.0.20")
    fast = _reply_times(lab.ok("node1", "-i", "0", "-ping", "-g", "address", "10.20.0.20"))
    assert len(fast) == 3 and max(fast) < 2  # the vendor's example: ~1.4 ms, then ~0.04 ms
    with state.edit_node(lab.state_dir, "node2") as doc:
        doc["shaped_rate"] = "8mbit"
    to_slow = _reply_times(lab.ok("node1", "-i", "0", "-ping", "-g", "address", "10.20.0.20"))
    from_slow = _reply_times(lab.ok("node2", "-i", "0", "-ping", "-g", "address", "10.20.0.10"))
    assert all(t >= SHAPED_WAIT_MS for t in to_slow + from_slow) and len(to_slow) == len(from_slow) == 3
