"""A verify run with faults, built as evidence without the lab, for the HTML report's tests:
node2's NPU 3 link is down and its pings lost, node4 cannot be reached, node3 carries hostile
text in what it reported, and an all-reduce with a straggler on node3."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict

from verify_cluster_facts import TODAY, cluster_evidence, desired_state, healthy_facts, with_npu  # noqa: E402

from ascendprep.facts.model import PythonEnv  # noqa: E402
from ascendprep.report.html import HtmlInput  # noqa: E402
from ascendprep.verify.checks.context import HostEvidence  # noqa: E402
from ascendprep.verify.checks.runner import no_errors, run_checks  # noqa: E402

#: What a hostile or broken host could print: markup, quotes, a terminal escape, a NUL.
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&\x1b]0;pwn\x07\x00"
#: The NPU whose link is down, and the pair whose pings are lost (node1 NPU 5 to node2 NPU 5).
FAULTY_NODE, FAULTY_NPU = "node2", 3
LOST_PAIR = "node1:5<->node2:5"


def allreduce_doc() -> Dict[str, Any]:
    sizes = []
    for step, size in enumerate([1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26, 1 << 28]):
        busbw = min(20.0, 0.002 * (4**step) * 10)
        time_us = 30.0 * (2**step)
        sizes.append(
            {
                "bytes": size,
                "time_us": time_us * (2.0 if step == 5 else 1.0),
                "algbw_GBps": busbw / 1.75,
                "busbw_GBps": busbw,
                "wrong_elements": 0,
                "ranks_reporting": 32,
                "median_us": time_us,
                "slowest_rank": 17,
                "slowest_node": "node3",
            }
        )
    return {
        "run_id": "20250601T000000Z",
        "passed": False,
        "problems": [],
        "stage": "done",
        "verdict": {
            "passed": False,
            "reasons": ["rank 17 on node3 is a straggler"],
            "world_size": 32,
            "backend": "hccl",
            "sizes": sizes,
            "stragglers": [{"rank": 17, "node": "node3", "sizes": [1 << 28], "worst_ratio": 2.0}],
            "straggler_rule": {"ratio": 1.5, "floor_us": 100.0, "min_ranks": 3},
            # every rank at 256M: 8 per node, rank 17 (node3) twice the median
            "rank_times": {
                "bytes": 1 << 28,
                "median_us": 960.0,
                "ranks": [[r, f"node{r // 8 + 1}", 1920.0 if r == 17 else 950.0 + (r % 3) * 10] for r in range(32)],
            },
            "busbw_floor": {
                "min_busbw_GBps": 15.0,
                "passed": True,
                "reason": "",
                "measured_busbw_GBps": 20.0,
                "at_bytes": 1 << 28,
            },
        },
    }


def faulty_input() -> HtmlInput:
    desired = desired_state()
    node2 = with_npu(healthy_facts(desired, FAULTY_NODE), FAULTY_NPU, link="DOWN")
    node3 = healthy_facts(desired, "node3")
    node3 = replace(
        node3,
        python=replace(
            node3.python or PythonEnv("python3"),
            packages={**(node3.python.packages if node3.python else {}), "torch": HOSTILE},
        ),
    )
    target = desired.nodes["node2"].hccn[5].ip
    hosts, plan = cluster_evidence(
        desired, {FAULTY_NODE: node2, "node3": node3, "node4": None}, lost=(("node1", 5, target),)
    )
    hosts["node4"] = HostEvidence(
        "node4", hosts["node4"].address, None, error=f"node4: {HOSTILE}", error_kind="unreachable"
    )
    results = run_checks(desired, hosts, plan, today=TODAY)
    order = [n.name for n in desired.inventory.nodes]
    return HtmlInput(
        desired, results, hosts, order, plan, 0 if no_errors(results) else 1, allreduce_doc(), (), source="unit test"
    )


#: The A3 evidence's HCCS fault: every ping from and to node3's device 1 is lost.
HCCS_DEAD_DIE = ("n3", 1)


def a3_input() -> HtmlInput:
    """Two A3 super-pods of two servers (4 dies each), every die's HCCS ping answered except those
    of node n3's device 1, whose pings all lose every packet (hccn_tool's own wording)."""
    from datetime import date

    import yaml

    from ascendprep.desired.state import build_desired
    from ascendprep.facts.model import HccsPingResult, HostFacts, NpuFacts, SuperPodDie
    from ascendprep.inventory.load import inventory_from_text
    from ascendprep.verify.checks.hccs import plan_hccs
    from ascendprep.verify.checks.registry import Selection
    from ascendprep.verify.checks.superpod import expected_vnic

    names = ["n1", "n2", "n3", "n4"]
    desired = build_desired(
        inventory_from_text(
            yaml.safe_dump(
                {
                    "name": "a3",
                    "product": "atlas-a3",
                    "npus_per_node": 4,
                    "device_network": {"subnets": ["10.20.0.0/24", "10.21.0.0/24"]},
                    "nodes": [{"name": n, "host": f"10.0.0.{11 + i}"} for i, n in enumerate(names)],
                }
            )
        )
    )

    def facts(pod: int, index: int) -> HostFacts:
        superpod = {
            d: SuperPodDie(npu_id=d // 2, chip=d % 2, sdid=d, super_pod_id=pod, server_index=index, pod_size=16)
            for d in range(4)
        }
        npus = {d: NpuFacts(devid=d, vnic_ip=expected_vnic(index, d)) for d in range(4)}
        return HostFacts(npus=npus, superpod=superpod, hccn_tool="/usr/bin/hccn_tool")

    read = {"n1": facts(0, 0), "n2": facts(0, 1), "n3": facts(1, 0), "n4": facts(1, 1)}
    pairs = plan_hccs(names, {n: range(4) for n in names}, read)
    sent: dict = {n: [] for n in names}
    for pair in pairs:
        dead = HCCS_DEAD_DIE in ((pair.source.node, pair.source.devid), (pair.target.node, pair.target.devid))
        sent[pair.source.node].append(
            HccsPingResult(pair.source.devid, pair.target.vnic, False, 3, 0, 100.0, error="3 of 3 packets lost")
            if dead
            else HccsPingResult(pair.source.devid, pair.target.vnic, True, 3, 3, 0.0, 9.5, 11.0)
        )
    hosts = {n: HostEvidence(n, f"10.0.0.{11 + i}", read[n], hccs_pings=tuple(sent[n])) for i, n in enumerate(names)}
    results = run_checks(desired, hosts, None, Selection(frozenset({"cluster.hccs"})), date(2026, 1, 1))
    return HtmlInput(desired, results, hosts, names, None, 0 if no_errors(results) else 1, source="unit test")


def saved_plan():
    """A plan as ``ascendprep plan`` saves it: node2's NPU 3 address and a sysctl to set (the
    kernel's old value hostile), node4 not planned (its error hostile), node1 and node3 unchanged."""
    from ascendprep.plan.changes import SetNpuAddress, SetSysctl
    from ascendprep.plan.planfile import PlanFile, SavedHost

    return PlanFile(
        "/x/inventory.yaml",
        "0" * 64,
        "unit",
        "2026-01-01T00:00:00+00:00",
        [
            SavedHost("node1", "10.0.0.11", True, []),
            SavedHost(
                "node2",
                "10.0.0.12",
                True,
                [
                    SetNpuAddress("node2", {"device": None, "file": None}, 3, "10.20.0.4", "255.255.255.0"),
                    SetSysctl("node2", HOSTILE, "net.core.somaxconn", "65535"),
                ],
            ),
            SavedHost("node3", "10.0.0.13", True, []),
            SavedHost("node4", "10.0.0.14", False, [], error=f"unreachable: {HOSTILE}"),
        ],
    )


#: The node whose every ping is slow in :func:`slow_input`, and the round trips (average, max ms):
#: a healthy pair's as the vendor's example prints them (~1.4 ms for the first reply, ~0.04 after).
SLOW_NODE = "node3"
HEALTHY_RTT, SLOW_RTT = (0.497, 1.418), (40.0, 52.0)


def slow_input() -> HtmlInput:
    """Every pair answered with its round trip; the pairs to and from :data:`SLOW_NODE` are slow
    (no loss), and node1 NPU 5 to node2 NPU 5 lost everything."""
    desired = desired_state()
    target = desired.nodes["node2"].hccn[5].ip
    hosts, plan = cluster_evidence(desired, lost=(("node1", 5, target),))
    node_of = {p.target.ip: p.target.node for p in plan.pairs if p.source is not None}
    for name, host in hosts.items():
        pings = []
        for ping in host.pings or ():
            slow = SLOW_NODE in (name, node_of.get(ping.target))
            average, slowest = SLOW_RTT if slow else HEALTHY_RTT
            pings.append(replace(ping, average_ms=average, max_ms=slowest) if ping.ok else ping)
        hosts[name] = replace(host, pings=tuple(pings))
    results = run_checks(desired, hosts, plan, today=TODAY)
    order = [n.name for n in desired.inventory.nodes]
    return HtmlInput(desired, results, hosts, order, plan, 0 if no_errors(results) else 1, source="unit test")
