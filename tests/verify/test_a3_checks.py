"""The pure side of the A3 checks: the HCCS pair plan, who is blamed, and the super-pod identity
checks on facts shaped like the real spod-info / -vnic answers (docs/a3-superpod.md §2)."""

from __future__ import annotations

from datetime import date

import yaml

from ascendprep.desired.state import build_desired
from ascendprep.facts.model import HostFacts, NpuFacts, SuperPodDie
from ascendprep.inventory.load import inventory_from_text
from ascendprep.verify.checks.context import ClusterContext, HostEvidence, NodeContext
from ascendprep.verify.checks.hccs import plan_hccs, suspects
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.superpod import die_subnets, expected_vnic, identity, sdid, vnic


def _facts(pod, index, dies=16, ips=None, sdid_of=None):
    superpod = {
        d: SuperPodDie(
            npu_id=d // 2,
            chip=d % 2,
            sdid=(sdid_of or (lambda d: (index << 22) | ((d // 2) << 18) | ((d % 2) << 16) | d))(d),
            super_pod_id=pod,
            server_index=index,
            pod_size=16,
        )
        for d in range(dies)
    }
    npus = {
        d: NpuFacts(
            devid=d, vnic_ip=expected_vnic(index, d), ip=(ips or {}).get(d), netmask="255.255.255.0" if ips else None
        )
        for d in range(dies)
    }
    return HostFacts(npus=npus, superpod=superpod, hccn_tool="/usr/bin/hccn_tool")


def test_vnic_formula_matches_the_real_hccl_log():
    assert expected_vnic(0, 0) == "192.0.2.199" and expected_vnic(0, 1) == "192.0.3.198"


def test_plan_rings_inside_pods_never_across_them():
    facts = {"a": _facts(0, 0, 4), "b": _facts(0, 1, 4), "c": _facts(1, 0, 4), "d": None}
    pairs = plan_hccs(["a", "b", "c", "d"], {n: range(4) for n in "abcd"}, facts)
    ends = {(p.source.node, p.source.devid, p.target.node, p.target.devid) for p in pairs}
    # cross-server ring a<->b per die (deduplicated), in-server rings of each die plane; c is alone in pod 1
    assert {("a", d, "b", d) for d in range(4)} <= ends
    assert ("a", 0, "a", 2) in ends and ("c", 1, "c", 3) in ends
    assert not any({s, t} & {"d"} or ({s, t} >= {"a", "c"}) or ({s, t} >= {"b", "c"}) for s, _, t, _ in ends)
    # O(N): at most two pairs per die
    assert len(pairs) <= 2 * 12
    assert {p.target.vnic for p in pairs if p.target.node == "b"} <= {expected_vnic(1, d) for d in range(4)}


def test_the_die_whose_every_pair_failed_is_blamed_not_its_peers():
    facts = {"a": _facts(0, 0, 4), "b": _facts(0, 1, 4)}
    pairs = plan_hccs(["a", "b"], {n: range(4) for n in "ab"}, facts)
    broken = {
        p.subject for p in pairs if ("b", 1) in ((p.source.node, p.source.devid), (p.target.node, p.target.devid))
    }
    assert suspects(pairs, broken) == {("b", 1): len(broken)}
    # a single failed pair blames nobody: one pair cannot tell which end is broken
    one = {next(iter(broken))}
    assert suspects(pairs, one) == {}


INVENTORY = {
    "name": "a3",
    "product": "atlas-a3",
    "npus_per_node": 4,
    "device_network": {"subnets": ["10.20.0.0/24", "10.21.0.0/24"]},
    "nodes": [{"name": "n1", "host": "10.0.0.11"}, {"name": "n2", "host": "10.0.0.12"}],
}


def _node_ctx(facts, name="n1"):
    desired = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))
    return NodeContext(desired, desired.nodes[name], HostEvidence(name, "10.0.0.11", facts))


def test_identity_names_unread_dies_and_mixed_answers():
    assert identity(_node_ctx(_facts(0, 1, 4))).status is Status.PASSED
    partial = _facts(0, 1, 4)
    partial = HostFacts(npus=partial.npus, superpod={d: v for d, v in partial.superpod.items() if d != 3})
    verdict = identity(_node_ctx(partial))
    assert verdict.status is Status.FAILED and "device 3 (NPU 1 die 1)" in verdict.message
    mixed = _facts(0, 1, 4)
    mixed.superpod[2] = SuperPodDie(npu_id=1, chip=0, sdid=1, super_pod_id=5, server_index=1, pod_size=16)
    assert identity(_node_ctx(mixed)).status is Status.FAILED


def test_vnic_against_the_server_index():
    facts = _facts(0, 1, 4)
    assert vnic(_node_ctx(facts), 3).status is Status.PASSED
    facts.npus[3] = NpuFacts(devid=3, vnic_ip="192.0.3.196")
    verdict = vnic(_node_ctx(facts), 3)
    assert verdict.status is Status.FAILED and "server index 1 gives 192.1.3.196" in verdict.message


def test_die_subnets_flags_an_npu_with_both_dies_in_one_subnet():
    good = _facts(0, 0, 4, ips={0: "10.20.0.1", 1: "10.21.0.1", 2: "10.20.0.2", 3: "10.21.0.2"})
    assert [v.status for v in die_subnets(_node_ctx(good))] == [Status.PASSED]
    bad = _facts(0, 0, 4, ips={0: "10.20.0.1", 1: "10.21.0.1", 2: "10.20.0.2", 3: "10.20.0.3"})
    (verdict,) = die_subnets(_node_ctx(bad))
    assert (
        verdict.status is Status.FAILED and verdict.npu == 2 and "NPU 1: both dies in 10.20.0.0/24" in verdict.message
    )


def test_sdid_duplicates_within_a_pod_only():
    desired = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))

    def ctx(f1, f2):
        return ClusterContext(
            desired, {"n1": HostEvidence("n1", "h", f1), "n2": HostEvidence("n2", "h", f2)}, None, date.today()
        )

    # two pods, server index 0 in each: the same SDIDs, allowed
    assert [v.status for v in sdid(ctx(_facts(0, 0, 4), _facts(1, 0, 4)))] == [Status.PASSED]
    # one pod, both servers claim index 0: every SDID twice, each duplicate names both dies
    verdicts = sdid(ctx(_facts(0, 0, 4), _facts(0, 0, 4)))
    assert len(verdicts) == 4 and all(v.status is Status.FAILED and "EI0014" in v.message for v in verdicts)
    assert "n1 device 0 (NPU 0 die 0) and n2 device 0 (NPU 0 die 0)" in verdicts[0].message


def test_the_allreduce_smoke_runs_one_rank_per_die_sixteen_per_a3_server():
    from ascendprep.verify.allreduce.options import AllreduceOptions, resolve_settings

    inventory = inventory_from_text(yaml.safe_dump({**INVENTORY, "npus_per_node": 16}))
    settings, problems = resolve_settings(
        AllreduceOptions.coerce({}), [(n.name, n.npus) for n in inventory.nodes], None
    )
    assert problems == [] and settings.nproc_by_node == {"n1": 16, "n2": 16} and settings.world_size == 32


def test_the_hccs_phase_runs_for_cluster_hccs_alone():
    from ascendprep.verify.checks.registry import Selection

    assert Selection.parse(["superpod"]).needs_hccs and not Selection.parse(["superpod"]).needs_pings
    assert not Selection.parse(["sysctl"]).needs_hccs
    assert not Selection.parse((), ["cluster.hccs"]).needs_hccs and Selection.parse((), ["cluster.hccs"]).needs_pings


def test_a3_servers_outside_any_pod_have_no_hccs_plane(tmp_path):
    """The driver's rule: server index 48 or more is "in no super-pod" (the lab's --pod-servers 0
    prints 65535); such servers are not paired, not SDID-checked, and their vNIC is not judged."""
    from a3sim import A3Lab

    from ascendprep.facts.superpod import parse_spod_info

    lab = A3Lab(tmp_path, nodes=2, pod_servers=0, npus=4)
    out = lab.npu_smi("node1", "info", "-t", "spod-info", "-i", "1", "-c", "0").stdout
    die = parse_spod_info(out, 1, 0)
    assert not die.in_pod
    facts = _facts(0, die.server_index, 4)
    assert plan_hccs(["n1", "n2"], {"n1": range(4), "n2": range(4)}, {"n1": facts, "n2": facts}) == ()
    verdict = identity(_node_ctx(facts))
    assert verdict.status is Status.PASSED and verdict.message.startswith("in no super-pod (server index 65535)")
    assert vnic(_node_ctx(facts), 0).status is Status.SKIPPED
    desired = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))
    cluster = ClusterContext(
        desired, {"n1": HostEvidence("n1", "h", facts), "n2": HostEvidence("n2", "h", facts)}, None, date.today()
    )
    assert [v.status for v in sdid(cluster)] == [Status.SKIPPED]
