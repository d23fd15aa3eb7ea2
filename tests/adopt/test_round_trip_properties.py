"""The round trip on generated clusters: any addressing the rules can express comes back as the
rule (no node explicit); any other comes back explicit, and planned it gives the same addresses."""

from __future__ import annotations

import ipaddress

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendprep.adopt.compact import compact
from ascendprep.adopt.seen import NodeSeen, NpuSeen, Seen
from ascendprep.inventory.addressing import plan_device_ips
from ascendprep.inventory.load import inventory_from_text


@st.composite
def expressible(draw: st.DrawFn) -> str:
    """An inventory text in one of the forms: flat A2 (1, 2 or 4 rails), A2 by rule over leaves,
    flat Atlas 800 (conventional or dense), flat A3; with or without gateways."""
    product = draw(st.sampled_from(["atlas-a2", "atlas-a2", "atlas-800", "atlas-a3"]))
    nodes = draw(st.integers(1, 9))
    gateway = draw(st.booleans())
    lines = ["name: gen", f"product: {product}"]
    if product == "atlas-a2":
        npus = draw(st.sampled_from([1, 2, 4, 8]))
        rails = draw(st.sampled_from([r for r in (1, 2, 4) if r <= npus]))
        lines.append(f"npus_per_node: {npus}")
        if draw(st.booleans()) and nodes > 1:
            leaves = draw(st.integers(2, min(nodes, 4)))
            prefix = draw(st.sampled_from([24, 25]))
            lines += [
                "device_network:",
                f"  rule: {{supernet: 10.60.0.0/20, by: leaf, prefix: {prefix}, rails: {rails}, gateway: {'last' if gateway else 'none'}}}",
            ]
            labels = [f"l{min(i * leaves // nodes, leaves - 1)}" for i in range(nodes)]
            lines.append("nodes:")
            lines += [f"  - {{host: 10.0.0.{i + 1}, labels: {{leaf: {labels[i]}}}}}" for i in range(nodes)]
            return "\n".join(lines) + "\n"
        subnets = [f"10.{70 + r}.0.0/{draw(st.sampled_from([22, 24, 25]))}" for r in range(rails)]
        lines += ["device_network:", f"  subnets: [{', '.join(subnets)}]"]
        if gateway:
            lines.append(
                f"  gateways: [{', '.join(str(ipaddress.IPv4Network(s).network_address + 1) for s in subnets)}]"
            )
    elif product == "atlas-800":
        npus = draw(st.sampled_from([4, 8]))
        lines.append(f"npus_per_node: {npus}")
        if draw(st.booleans()):
            lines += ["device_network:", "  layout: dense"]
    else:
        npus = draw(st.sampled_from([2, 8, 16]))
        lines += [f"npus_per_node: {npus}", "device_network:", "  subnets: [10.80.0.0/24, 10.81.0.0/24]"]
        if gateway:
            lines.append("  gateways: [10.80.0.254, 10.81.0.254]")
    lines.append("nodes:")
    lines += [f"  - {{host: 10.0.0.{i + 1}}}" for i in range(nodes)]
    return "\n".join(lines) + "\n"


def addresses_of(text: str) -> tuple[str, dict[tuple[str, int], tuple]]:
    inventory = inventory_from_text(text)
    plan = plan_device_ips(inventory)
    assert not [f for f in plan.findings if f.severity.value == "error"], plan.findings
    return inventory.product.id, {
        (a.node, a.npu): (a.ip, a.netmask, a.gateway, a.detect) for entries in plan.by_node.values() for a in entries
    }


def seen_of(addresses: dict[tuple[str, int], tuple]) -> Seen:
    nodes: dict[str, dict[int, NpuSeen]] = {}
    for (node, devid), (ip, mask, gateway, detect) in addresses.items():
        nodes.setdefault(node, {})[devid] = NpuSeen(devid, ip, mask, gateway, detect)
    return Seen([NodeSeen(name, name, npus) for name, npus in nodes.items()], sources=["generated"])


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(expressible())
def test_what_the_rules_express_comes_back_as_the_rule(text: str) -> None:
    product, addresses = addresses_of(text)
    result = compact(seen_of(addresses), product)
    assert result.complete, result.conflicts
    assert result.off_pattern == [], result.text
    assert addresses_of(result.text)[1] == addresses


@FAST
@given(expressible(), st.data())
def test_what_they_do_not_comes_back_explicit_and_exact(text: str, data: st.DataObject) -> None:
    product, addresses = addresses_of(text)
    names = sorted({node for node, _ in addresses}, key=lambda n: tuple(int(p) for p in n.split(".")))
    moved = data.draw(st.sets(st.sampled_from(names), min_size=1, max_size=len(names)))
    taken = {value[0] for value in addresses.values()} | {value[2] for value in addresses.values()}
    changed = dict(addresses)
    for (node, devid), (ip, mask, gateway, detect) in addresses.items():
        if node not in moved:
            continue
        network = ipaddress.IPv4Network(f"{ip}/{mask}", strict=False)
        # an address from the top of the NPU's subnet, where the packed layout never reaches
        candidate = network.broadcast_address - 2
        while str(candidate) in taken or candidate.packed[-1] in (0, 255):
            candidate -= 1
        taken.add(str(candidate))
        changed[(node, devid)] = (str(candidate), mask, gateway, detect)
    result = compact(seen_of(changed), product)
    assert moved <= set(result.off_pattern)
    got = addresses_of(result.text)[1]
    # a detect IP that is not set (a lone NPU without a peer) is a note, and plan then sets one
    assert {k: v if changed[k][3] is not None else v[:3] + (None,) for k, v in got.items()} == changed
