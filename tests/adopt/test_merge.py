"""Sources combined: a rank table for servers and addresses, the hosts for the rest."""

from __future__ import annotations

from ascendprep.adopt.compact import compact
from ascendprep.adopt.seen import NodeSeen, NpuSeen, Seen, merge

IP_ONLY = frozenset({"ip"})


def test_the_hosts_fill_in_what_the_rank_table_does_not_say_matched_by_address() -> None:
    table = Seen(
        [
            NodeSeen(
                f"10.0.0.{n + 1}",
                f"10.0.0.{n + 1}",
                {d: NpuSeen(d, f"10.20.0.{n * 2 + d + 1}", said=IP_ONLY) for d in range(2)},
            )
            for n in range(2)
        ],
        sources=["rank table"],
        rank_table=True,
    )
    hosts = Seen(
        [
            NodeSeen(
                f"node{n + 1}",
                f"node{n + 1}.example",
                {
                    d: NpuSeen(d, f"10.20.0.{n * 2 + d + 1}", "255.255.255.0", "10.20.0.254", "10.20.0.254")
                    for d in range(2)
                },
                versions={"driver": "24.1.rc2"},
                aliases=(f"10.0.0.{n + 1}", "172.17.0.1"),
            )
            for n in reversed(range(2))
        ],
        sources=["hosts"],
    )
    seen = merge(table, hosts)
    assert [(n.name, n.host) for n in seen.nodes] == [("node1", "node1.example"), ("node2", "node2.example")]
    npu = seen.nodes[1].npus[1]
    assert (npu.ip, npu.netmask, npu.gateway) == ("10.20.0.4", "255.255.255.0", "10.20.0.254") and not seen.conflicts
    result = compact(seen, "atlas-a2")
    assert result.complete and 'subnet: "10.20.0.0/24"' in result.text and 'driver: "24.1.rc2"' in result.text


def test_sources_that_differ_on_an_npu_are_a_conflict() -> None:
    table = Seen([NodeSeen("a", "10.0.0.1", {0: NpuSeen(0, "10.20.0.1", said=IP_ONLY)})], sources=["rank table"])
    hosts = Seen([NodeSeen("a", "10.0.0.1", {0: NpuSeen(0, "10.20.0.9", "255.255.255.0")})], sources=["hosts"])
    seen = merge(table, hosts)
    (conflict,) = seen.conflicts
    assert (
        conflict.kind == "sources_differ" and "ip is 10.20.0.1" in conflict.message and "10.20.0.9" in conflict.message
    )
    assert seen.nodes[0].npus[0].ip == "10.20.0.1"
