"""The ping mesh (which pairs, from which end) and --only/--skip selection."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import pytest
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, healthy_facts, judge, with_npu

from ascendprep.facts.model import ProbeError
from ascendprep.verify.checks.registry import GROUPS, Selection, SelectionError
from ascendprep.verify.checks.runner import run_checks
from ascendprep.verify.mesh import PingPlan, mesh_pairs, plan_pings

ATLAS_800 = """\
name: old
product: atlas-800
nodes:
  - name: server[0-2]
    host: 10.0.0.[10-12]
"""


def _keys(pairs):
    return {frozenset(((a.node, a.npu), (b.node, b.npu))) for a, b in pairs}


def test_ring_pairs_next_node_and_master_once_each(desired):
    pairs = mesh_pairs(desired, "ring")
    # 4 nodes: ring 1-2, 2-3, 3-4, 4-1 plus master (node1) pairs 1-3; per NPU index, 8 indexes.
    assert len(pairs) == 5 * 8
    assert _keys(pairs) == {
        frozenset(((a, n), (b, n)))
        for n in range(8)
        for a, b in [("node1", "node2"), ("node2", "node3"), ("node3", "node4"), ("node4", "node1"), ("node3", "node1")]
    }
    assert all(a.npu == b.npu for a, b in pairs)


def test_full_mesh_is_every_pair_of_a_plane():
    desired = desired_state(ATLAS_800)
    pairs = mesh_pairs(desired, "full")
    # Atlas 800: NPU i and i+4 share a plane; 3 servers x 2 NPUs = 6 members per plane, 4 planes.
    assert len(pairs) == 4 * len(list(combinations(range(6), 2)))
    assert all(a.npu % 4 == b.npu % 4 for a, b in pairs)
    senders = {}
    for a, _ in pairs:
        senders[a.node] = senders.get(a.node, 0) + 1
    assert max(senders.values()) - min(senders.values()) <= 8  # the default source alternates


def test_single_node_has_nothing_to_ping():
    desired = desired_state(INVENTORY.replace("node[2-4]", "node[2-2]").replace("10.231.0.[12-14]", "10.231.0.[12-12]"))
    assert len(mesh_pairs(desired, "ring")) == 8
    single = desired_state(ATLAS_800.replace("server[0-2]", "server[0-0]").replace("10.0.0.[10-12]", "10.0.0.[10-10]"))
    assert mesh_pairs(single, "ring") == []
    reach = [r for r in judge(single) if r.check == "cluster.reachability"]
    assert [r.status.value for r in reach] == ["skipped"] and "single node" in reach[0].message


def test_source_avoids_a_down_link(desired):
    facts = {name: healthy_facts(desired, name) for name in ("node1", "node2", "node3", "node4")}
    facts["node1"] = with_npu(facts["node1"], 0, link="DOWN")
    touching = [
        p
        for p in plan_pings(desired, facts, "ring").pairs
        if ("node1", 0) in ((p.a.node, p.a.npu), (p.b.node, p.b.npu))
    ]
    assert len(touching) == 3  # node1-node2, node4-node1, node3-node1 on NPU 0
    assert all(p.source is not None and p.source.node != "node1" for p in touching)


def test_a_node_where_hccn_tool_hung_sends_no_pings_but_is_still_pinged(desired):
    facts = {name: healthy_facts(desired, name) for name in ("node1", "node2", "node3", "node4")}
    facts["node3"] = replace(
        facts["node3"], errors=(ProbeError("hccn.ip", "timeout", "hccn_tool -i 5 -ip -g timed out", npu=5),)
    )
    plan = plan_pings(desired, facts, "ring")
    touching = [p for p in plan.pairs if "node3" in (p.a.node, p.b.node)]
    assert len(touching) == 3 * 8
    assert all(p.source is not None and p.source.node != "node3" for p in touching)
    assert "node3" not in plan.by_source()


def test_pair_with_no_usable_end_is_could_not_check(desired):
    hosts, plan = cluster_evidence(desired, {"node1": None, "node2": None})
    blocked = [p for p in plan.pairs if p.source is None]
    assert {frozenset((p.a.node, p.b.node)) for p in blocked} == {frozenset(("node1", "node2"))}
    results = [
        r for r in run_checks(desired, hosts, plan, today=TODAY) if r.check == "cluster.reachability" and r.failed
    ]
    assert len(results) == 8 and all("could not check: no end of" in r.message for r in results)


def test_ping_plan_round_trips_through_json(desired):
    _, plan = cluster_evidence(desired, {"node2": None})
    assert PingPlan.from_dict(plan.to_dict()) == plan


def test_only_a_group_brings_its_prerequisites():
    selection = Selection.parse(["network"])
    ids = [c.id for c in selection.checks()]
    assert ids[:2] == ["node.reachable", "node.hccn_tool"]
    assert "cluster.reachability" in ids and "cluster.tls" in ids and "software.cann" not in ids
    assert selection.needs_pings


def test_skip_and_comma_lists():
    selection = Selection.parse(["software,files"], ["cluster.compat", "software.torchvision"])
    ids = {c.id for c in selection.checks()}
    assert "files.managed" in ids and "software.cann" in ids and "cluster.versions" in ids
    assert "cluster.compat" not in ids and "software.torchvision" not in ids
    assert not selection.needs_pings
    assert not Selection.parse([], ["cluster.reachability"]).needs_pings


def test_prerequisite_runs_even_when_skipped_by_name():
    ids = {c.id for c in Selection.parse(["network.link"], ["node"]).checks()}
    assert ids == {"node.reachable", "node.hccn_tool", "network.link"}


@pytest.mark.parametrize(
    "name, hint",
    [
        ("netwrk", "did you mean 'network'"),
        ("network.lnk", "did you mean 'network.link'"),
        ("zzz", "groups: " + ", ".join(GROUPS)),
    ],
)
def test_unknown_selector_is_refused_with_a_hint(name, hint):
    with pytest.raises(SelectionError, match="no such check or group") as info:
        Selection.parse([name])
    assert hint in str(info.value)


def test_only_runs_what_was_asked(desired):
    results = judge(desired, selection=Selection.parse(["sysctl"]))
    assert {r.check for r in results} == {
        "node.reachable",
        "sysctl.minimum",
        "sysctl.reserved_ports",
        "sysctl.persisted",
    }


def test_the_cli_spells_groups_and_meshes_as_the_registry_does():
    """commands/verify.py lists them itself (so the CLI starts without importing every check)."""
    from ascendprep.commands import verify
    from ascendprep.verify.mesh import MESHES

    assert verify.GROUPS == GROUPS
    assert verify.MESHES == MESHES
