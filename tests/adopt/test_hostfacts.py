"""What the hosts say: live device network, /etc/hccn.conf against it, product, super-pod, versions."""

from __future__ import annotations

from ascendprep.adopt.hostfacts import seen_from_facts
from ascendprep.facts.model import (
    HccnConf,
    HostFacts,
    InterfaceAddress,
    NpuFacts,
    NpuSmiDevice,
    NpuSmiList,
    ProbeError,
    SuperPodDie,
    TlsState,
    VersionFile,
    Versions,
)


def host(base: int, chips: int = 1, conf_ip: str | None = None, **extra) -> HostFacts:  # type: ignore[no-untyped-def]
    npus = {
        d: NpuFacts(
            devid=d, ip=f"10.20.0.{base + d}", netmask="255.255.255.0", gateway="10.20.0.254", netdetect="10.20.0.254"
        )
        for d in range(2)
    }
    conf = {d: {"address": f"10.20.0.{base + d}", "netmask": "255.255.255.0"} for d in range(2)}
    if conf_ip is not None:
        conf[1]["address"] = conf_ip
    return HostFacts(
        npus=npus,
        hccn_conf=HccnConf(raw="", devices=conf),
        npu_smi=NpuSmiList(total_count=1, devices=(NpuSmiDevice(npu_id=0, chip_count=chips),)),
        versions=Versions(driver=VersionFile("/d", {"Version": "24.1.rc2"})),
        addresses=(InterfaceAddress("eth0", "inet", "10.0.0.9", 24), InterfaceAddress("lo", "inet", "127.0.0.1", 8)),
        **extra,
    )


def test_live_values_are_read_and_an_address_that_differs_from_hccn_conf_is_a_conflict() -> None:
    seen = seen_from_facts(
        {"n1": "10.0.0.1", "n2": "10.0.0.2"}, {"n1": host(1), "n2": host(3, conf_ip="10.20.0.99")}, {}
    )
    n2 = seen.nodes[1]
    assert n2.npus[1].ip == "10.20.0.4" and n2.versions["driver"] == "24.1.rc2" and n2.aliases == ("10.0.0.9",)
    (conflict,) = seen.conflicts
    assert conflict.kind == "live_vs_conf" and "n2 NPU 1: live ip 10.20.0.4" in conflict.message
    assert "address_1=10.20.0.99" in conflict.message


def test_hosts_of_two_products_are_a_conflict_and_unreachable_hosts_are_kept() -> None:
    seen = seen_from_facts(
        {"n1": "a", "n2": "b", "n3": "c"}, {"n1": host(1), "n2": host(3, chips=2)}, {"n3": "connection refused"}
    )
    assert [n.name for n in seen.nodes] == ["n1", "n2"] and seen.unreachable == {"n3": "connection refused"}
    assert any(c.kind == "two_products" and "atlas-a3: n2" in c.message for c in seen.conflicts)


def test_an_unread_probe_is_named_and_a3_super_pods_are_read() -> None:
    dies = {
        d: SuperPodDie(npu_id=d // 2, chip=d % 2, sdid=100 + d, super_pod_id=5, server_index=3, pod_size=384)
        for d in range(2)
    }
    facts = host(1, chips=2, superpod=dies, errors=(ProbeError("hccn.gateway", "timeout", "no answer", npu=0),))
    seen = seen_from_facts({"n1": "a"}, {"n1": facts}, {})
    node = seen.nodes[0]
    assert (node.product, node.super_pod, node.server_index) == ("atlas-a3", 5, 3)
    assert any(c.kind == "unread" and "hccn.gateway could not be read (timeout)" in c.message for c in seen.conflicts)


def test_a_value_that_is_not_ipv4_is_a_conflict_and_not_imported() -> None:
    facts = host(1)
    npus = dict(facts.npus)
    npus[0] = NpuFacts(devid=0, ip="10.20.0.1\nproduct: atlas-800", netmask="255.0.255.0", gateway="fe80::1")
    seen = seen_from_facts({"n1": "a"}, {"n1": HostFacts(npus=npus)}, {})
    npu = seen.nodes[0].npus[0]
    assert (npu.ip, npu.netmask, npu.gateway) == (None, None, None)
    assert sum(c.kind == "not_ipv4" for c in seen.conflicts) == 3


def test_the_tls_switch_in_effect_is_read() -> None:
    npus = {
        0: NpuFacts(devid=0, ip="10.20.0.1", netmask="255.255.255.0", tls=TlsState(switch=1)),
        1: NpuFacts(devid=1, ip="10.20.0.2", netmask="255.255.255.0", tls=TlsState(switch=1, certificates=False)),
    }
    seen = seen_from_facts({"n1": "a"}, {"n1": HostFacts(npus=npus)}, {})
    assert seen.nodes[0].tls == {0: 1, 1: 0}


def test_python_torch_and_torch_npu_are_imported_as_the_majority_with_the_odd_nodes_named() -> None:
    from ascendprep.adopt.compact import compact
    from ascendprep.facts.model import PythonEnv
    from ascendprep.inventory.load import inventory_from_text

    def interpreter(torch: str, python: str = "3.10.12") -> PythonEnv:
        return PythonEnv("/usr/bin/python3", python, "/usr/bin/python3", {"torch": torch, "torch_npu": "2.1.0.post3"})

    hosts = {f"10.0.0.{i}": f"10.0.0.{i}" for i in range(1, 5)}
    facts = {
        "10.0.0.1": host(1, python=interpreter("2.1.0")),
        "10.0.0.2": host(3, python=interpreter("2.1.0")),
        "10.0.0.3": host(5, python=interpreter("2.4.0", python="3.11.4")),
        "10.0.0.4": host(7),  # the interpreter did not answer
    }
    seen = seen_from_facts(hosts, facts, {})
    assert seen.nodes[2].versions["torch"] == "2.4.0" and seen.nodes[3].versions["torch"] is None
    result = compact(seen, "atlas-a2")
    software = inventory_from_text(result.text).model.software
    assert (software.python, software.torch, software.torch_npu) == ("3.10.12", "2.1.0", "2.1.0.post3")
    assert "# software.torch: 10.0.0.3 run 2.4.0, not 2.1.0" in result.text
    assert "# software.python: 10.0.0.3 run 3.11.4, not 3.10.12" in result.text
    assert "# software.torch_npu: not found on 10.0.0.4" in result.text


def a3_host(n: int, sdid_of=None) -> HostFacts:  # type: ignore[no-untyped-def]
    """Server ``n`` of super-pod 3 (server index n): 8 NPUs of two dies, a die per plane."""
    from ascendprep.inventory.superpods import sdid

    sdid_of = sdid_of or sdid
    npus = {
        d: NpuFacts(devid=d, ip=f"10.{80 + d % 2}.0.{n * 8 + d // 2 + 1}", netmask="255.255.255.0") for d in range(16)
    }
    dies = {
        d: SuperPodDie(npu_id=d // 2, chip=d % 2, sdid=sdid_of(n, d), super_pod_id=3, server_index=n, pod_size=384)
        for d in range(16)
    }
    smi = NpuSmiList(total_count=8, devices=tuple(NpuSmiDevice(npu_id=i, chip_count=2) for i in range(8)))
    return HostFacts(npus=npus, npu_smi=smi, superpod=dies)


def test_a3_sdids_read_from_the_dies_are_checked_against_the_ones_the_inventory_plans() -> None:
    from ascendprep.adopt.compact import compact
    from ascendprep.inventory.superpods import sdid

    hosts = {f"s{n}": f"10.0.0.{n + 1}" for n in range(2)}
    good = compact(seen_from_facts(hosts, {f"s{n}": a3_host(n) for n in range(2)}, {}), "atlas-a3")
    assert good.complete and not [c for c in good.conflicts if c.kind == "sdid"]
    assert "super_pod: 3" in good.text

    # s1's dies 2 and 3 report each other's SDID (what HCCL would then refuse in the table written)
    def swapped(n: int, die: int) -> int:
        return sdid(n, {2: 3, 3: 2}.get(die, die)) if n == 1 else sdid(n, die)

    facts = {"s0": a3_host(0), "s1": a3_host(1, swapped)}
    result = compact(seen_from_facts(hosts, facts, {}), "atlas-a3")
    (conflict,) = [c for c in result.conflicts if c.kind == "sdid"]
    assert conflict.error and not result.complete
    assert f"s1 device 2: SDID {sdid(1, 3)} in npu-smi spod-info, {sdid(1, 2)} planned" in conflict.message
    assert "# CONFLICTS" in result.text and f"SDID {sdid(1, 3)} in npu-smi spod-info" in result.text


def test_sdids_of_a_rank_table_and_of_the_dies_that_differ_are_a_conflict() -> None:
    from ascendprep.adopt.seen import NodeSeen, Seen, merge

    table = Seen([NodeSeen("s1", "10.0.0.2", {}, sdids={2: 7, 3: 8}, sdids_from="rt.json server_list[1]")])
    hosts = seen_from_facts({"s1": "10.0.0.2"}, {"s1": a3_host(1)}, {})
    merged = merge(table, hosts)
    messages = [c.message for c in merged.conflicts if c.kind == "sdid"]
    assert len(messages) == 2 and messages[0].startswith("s1 die 2: SDID 7 in rt.json server_list[1] but ")
    assert messages[0].endswith(" in npu-smi spod-info")
    # the dies' own word is what the import checks the inventory against
    assert merged.nodes[0].sdids == hosts.nodes[0].sdids
