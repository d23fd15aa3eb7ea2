"""The two fabric-shaped example inventories, proven by an independent rule check.

The checker below is written from the rules (docs/ascend-reference.md §3 and docs/rules.md,
"Device address groups"), not from the planner: it reads the inventory YAML itself, works out
each node's group, subnets and gateways with its own code, and judges the address table that
``ascendprep plan --offline --format csv`` prints, row by row. Nothing from ``ascendprep.inventory.addressing``,
``ascendprep.inventory.groups`` or ``ascendprep.inventory.model`` is used to decide what is right.
"""

from __future__ import annotations

import csv
import io
import ipaddress
import os
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ascendprep.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
EXAMPLES = ["a2-pod512.yaml", "atlas800-300node.yaml"]
VNIC = ipaddress.ip_network("192.168.1.0/24")
PLANES = {"atlas-800": 4, "atlas-a3": 2}


class RuleBroken(AssertionError):
    pass


def _expand(pattern: str) -> list[str]:
    """``p1n[001-032]`` / ``10.50.1.[11-42]``: one bracketed span, zero padding from the first bound."""
    match = re.fullmatch(r"(.*)\[(\d+)-(\d+)\](.*)", pattern)
    if not match:
        return [pattern]
    head, lo, hi, tail = match.groups()
    width = len(lo) if lo.startswith("0") else 0
    return [f"{head}{str(n).zfill(width)}{tail}" for n in range(int(lo), int(hi) + 1)]


def _nodes(doc: dict) -> list[tuple[str, str, dict, int]]:
    """(name, host, labels, npus) per node, in inventory order."""
    out = []
    for entry in doc["nodes"]:
        names, hosts = _expand(entry["name"]), _expand(entry["host"])
        assert len(names) == len(hosts)
        for name, host in zip(names, hosts):
            out.append((name, host, entry.get("labels", {}), entry.get("npus", doc.get("npus_per_node", 8))))
    return out


def expected_subnets(doc: dict) -> dict[str, list[tuple[ipaddress.IPv4Network, ipaddress.IPv4Address | None]]]:
    """Per node name: (subnet, gateway) of rail/plane 0, 1, … of its group, from the inventory."""
    net = doc["device_network"]
    nodes = _nodes(doc)
    result = {}
    if "rule" in net:
        rule = net["rule"]
        rails = PLANES.get(doc["product"]) or rule.get("rails", 1)
        supernet = ipaddress.ip_network(rule["supernet"])
        order: list[str] = []
        for _, _, labels, _ in nodes:
            if labels[rule["by"]] not in order:
                order.append(labels[rule["by"]])
        size = 2 ** (32 - rule["prefix"])
        for name, _, labels, _ in nodes:
            g = order.index(labels[rule["by"]])
            subnets = []
            for r in range(rails):
                subnet = ipaddress.ip_network(f"{supernet.network_address + (g * rails + r) * size}/{rule['prefix']}")
                assert subnet.subnet_of(supernet)
                gateway = {"first": subnet.network_address + 1, "last": subnet.broadcast_address - 1}.get(
                    rule.get("gateway", "first")
                )
                subnets.append((subnet, gateway))
            result[name] = subnets
    else:
        for name, _, labels, _ in nodes:
            mine = [g for g in net["groups"] if all(labels.get(k) == v for k, v in g["match"].items())]
            assert len(mine) == 1, f"{name} is in {len(mine)} groups"
            group = mine[0]
            result[name] = [
                (ipaddress.ip_network(s), ipaddress.ip_address(gw))
                for s, gw in zip(group["subnets"], group["gateways"])
            ]
    return result


def check_address_table(doc: dict, rows: list[dict]) -> None:
    """Raise :class:`RuleBroken` at the first row or subnet that breaks a device-IP rule."""
    product = doc["product"]
    nodes = _nodes(doc)
    subnets = expected_subnets(doc)
    mgmt = {ipaddress.ip_address(host) for _, host, _, _ in nodes}
    all_subnets = {s for per in subnets.values() for s in per}
    gateways = {gw for _, gw in all_subnets if gw is not None}

    def fail(message: str) -> None:
        raise RuleBroken(message)

    spans = sorted((int(s.network_address), int(s.broadcast_address), s) for s, _ in all_subnets)
    for (_, a_last, a), (b_first, _, b) in zip(spans, spans[1:]):
        if b_first <= a_last:
            fail(f"subnets {a} and {b} overlap")
    for subnet, gateway in all_subnets:
        if subnet.overlaps(VNIC):
            fail(f"{subnet} overlaps the vNIC subnet")
        if gateway is not None and (
            gateway not in subnet or gateway in (subnet.network_address, subnet.broadcast_address)
        ):
            fail(f"gateway {gateway} is not a host of {subnet}")
        if any(m in subnet for m in mgmt):
            fail(f"{subnet} holds a management address")

    expected_keys = [(name, host, npu) for name, host, _, npus in nodes for npu in range(npus)]
    if [(r["node"], r["host"], int(r["npu"])) for r in rows] != expected_keys:
        fail("the table does not hold exactly one row per NPU in node order")
    seen: dict[ipaddress.IPv4Address, str] = {}
    octets: dict[ipaddress.IPv4Network, set[int]] = {}
    subnet_of_row: dict[tuple[str, int], ipaddress.IPv4Network] = {}
    for row in rows:
        where = f"{row['node']} NPU {row['npu']}"
        npu = int(row["npu"])
        ip = ipaddress.ip_address(row["ip"])
        rails = len(subnets[row["node"]])
        rail = npu % 4 if product == "atlas-800" else npu % 2 if product == "atlas-a3" else npu % rails
        subnet, gateway = subnets[row["node"]][rail]
        if ip not in subnet or ip in (subnet.network_address, subnet.broadcast_address):
            fail(f"{where}: {ip} is not a host address of rail/plane {rail}'s {subnet}")
        if row["netmask"] != str(subnet.netmask):
            fail(f"{where}: netmask {row['netmask']} is not {subnet.netmask}")
        if row["gateway"] != (str(gateway) if gateway else ""):
            fail(f"{where}: gateway {row['gateway']} is not its group's {gateway}")
        if doc["device_network"].get("detect") == "gateway" and row["detect"] != str(gateway):
            fail(f"{where}: detect IP {row['detect']} is not the gateway {gateway}")
        if row["detect"] and (ipaddress.ip_address(row["detect"]) not in subnet and not gateway):
            fail(f"{where}: detect IP {row['detect']} cannot be reached")
        if ip in seen:
            fail(f"{where}: {ip} is also {seen[ip]}")
        seen[ip] = where
        if ip in gateways or ip in mgmt or ip in VNIC:
            fail(f"{where}: {ip} is a gateway, a management address or in the vNIC subnet")
        if product == "atlas-800":
            octet = int(ip) & 0xFF
            if octet in octets.setdefault(subnet, set()):
                fail(f"{where}: last octet {octet} already used in {subnet}")
            octets[subnet].add(octet)
        subnet_of_row[(row["node"], npu)] = subnet
    if product == "atlas-800":
        for name, _, _, npus in nodes:
            first_four = {subnet_of_row[(name, i)] for i in range(min(npus, 4))}
            if len(first_four) != min(npus, 4):
                fail(f"{name}: NPUs 0-3 are not on four different planes")
            for i in range(4, npus):
                if subnet_of_row[(name, i)] != subnet_of_row[(name, i - 4)]:
                    fail(f"{name}: NPU {i} is not on NPU {i - 4}'s plane")


def _table(inventory: str) -> str:
    env = dict(os.environ, COLUMNS="120")
    result = CliRunner().invoke(
        main, ["plan", "--offline", "--format", "csv", str(ROOT / "inventories" / inventory)], env=env
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("inventory", EXAMPLES)
def test_example_plan_passes_the_independent_rule_check(inventory: str) -> None:
    doc = yaml.safe_load((ROOT / "inventories" / inventory).read_text())
    rows = _rows(_table(inventory))
    assert len(rows) == {"a2-pod512.yaml": 512 * 8, "atlas800-300node.yaml": 300 * 8}[inventory]
    check_address_table(doc, rows)


@pytest.mark.parametrize("inventory", EXAMPLES)
def test_the_independent_check_catches_broken_tables(inventory: str) -> None:
    """The checker itself can fail: each corruption of a correct table is caught."""
    doc = yaml.safe_load((ROOT / "inventories" / inventory).read_text())
    good = _rows(_table(inventory))
    wrong_plane = [dict(r) for r in good]
    wrong_plane[1]["ip"] = good[0]["ip"].rsplit(".", 1)[0] + ".250"  # NPU 1 moved onto NPU 0's plane/rail
    duplicate = [dict(r) for r in good]
    duplicate[-1]["ip"] = good[-9]["ip"]
    other_group = [dict(r) for r in good]
    other_group[0]["ip"], other_group[-8]["ip"] = good[-8]["ip"], good[0]["ip"]
    bad_gateway = [dict(r) for r in good]
    bad_gateway[100]["gateway"] = good[-1]["gateway"]
    for broken in (wrong_plane, duplicate, other_group, bad_gateway):
        with pytest.raises(RuleBroken):
            check_address_table(doc, broken)


@pytest.mark.parametrize("inventory", ["atlas800-2node.yaml", "a2-64node.yaml", *EXAMPLES])
def test_address_table_matches_golden(inventory: str) -> None:
    path = GOLDEN / Path(inventory).stem / "addresses.csv"
    text = _table(inventory)
    if os.environ.get("ASCENDPREP_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, f"{path.parent.name}/addresses.csv differs from the golden file"


def test_example_groups_follow_the_fabric() -> None:
    """Spot values a network engineer would read off the design: leaf 3, rail 5 is 10.105.3.0/24
    behind 10.105.3.1; rack 30 (the 30th rack), plane 3 is 10.200.119.0/24 behind .1."""
    a2 = {(r["node"], r["npu"]): r for r in _rows(_table("a2-pod512.yaml"))}
    row = a2[("p1n070", "5")]  # p1n065-096 hang off leaf l03
    assert ipaddress.ip_address(row["ip"]) in ipaddress.ip_network("10.105.3.0/24")
    assert row["gateway"] == row["detect"] == "10.105.3.1"
    a800 = {(r["node"], r["npu"]): r for r in _rows(_table("atlas800-300node.yaml"))}
    row = a800[("s300", "7")]
    assert ipaddress.ip_address(row["ip"]) in ipaddress.ip_network("10.200.119.0/24")
    assert row["gateway"] == row["detect"] == "10.200.119.1"
    # inside each rack the install guide's layout: the rack's first server at .101 / .100
    assert a800[("s291", "0")]["ip"] == "10.200.116.101" and a800[("s291", "4")]["ip"] == "10.200.116.100"
