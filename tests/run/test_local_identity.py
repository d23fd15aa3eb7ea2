"""Which inventory node a --local run is: by name, host name or address; never a guess."""

from __future__ import annotations

import click
import pytest
import yaml

from ascendprep.inventory.load import inventory_from_text
from ascendprep.run.node_local import MachineIdentity, match_node, parse_ip_addresses

INVENTORY = {
    "name": "t",
    "product": "atlas-a2",
    "npus_per_node": 2,
    "device_network": {"subnet": "10.20.0.0/24"},
    "nodes": [{"name": "a2n0[1-3]", "host": "10.0.0.[11-13]"}, {"name": "gpu-x", "host": "Gpu-X.example.com"}],
}

IP_ADDR = """1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 10.0.0.12/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever
2: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever preferred_lft forever
"""


def inventory():
    return inventory_from_text(yaml.safe_dump(INVENTORY), file="inv.yaml")


def identity(names=(), addresses=()):
    return MachineIdentity(frozenset(names), frozenset(addresses))


def test_ip_addr_output_gives_every_address():
    assert parse_ip_addresses(IP_ADDR) == {"127.0.0.1", "10.0.0.12", "fe80::1"}


@pytest.mark.parametrize(
    "names, addresses, expected",
    [
        (["a2n01"], [], "a2n01"),  # the host name is the node name
        (["server9"], ["10.0.0.13"], "a2n03"),  # an address of this machine is the node's host
        (["gpu-x.example.com"], [], "gpu-x"),  # a host name matched case-blind
    ],
)
def test_the_node_is_found_by_name_host_or_address(names, addresses, expected):
    assert match_node(inventory(), identity(names, addresses), None).name == expected


def test_no_match_and_several_matches_are_refused_naming_what_was_compared():
    with pytest.raises(
        click.BadParameter,
        match=r"no node of inv.yaml is this machine \(host names server9; addresses 192.0.2.1; its nodes: ",
    ):
        match_node(inventory(), identity(["server9"], ["192.0.2.1"]), None)
    with pytest.raises(click.BadParameter, match="several nodes .*a2n01, a2n02"):
        match_node(inventory(), identity(["a2n01"], ["10.0.0.12"]), None)
    assert match_node(inventory(), identity(["a2n01"], ["10.0.0.12"]), "a2n02").name == "a2n02"  # --node decides


def test_a_machine_with_many_addresses_names_a_few_and_counts_the_rest():
    many = [f"192.0.2.{i}" for i in range(1, 13)]
    with pytest.raises(click.BadParameter, match="and 4 more; its nodes"):
        match_node(inventory(), identity(["server9"], many), None)
