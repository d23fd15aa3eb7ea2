"""Plan reads a gateway or a TLS switch only where the inventory plans one; apply re-reads, of
the NPUs, only the values its changes depend on (issue 12: hccn_tool calls are what plan and
apply cost, on the lab and on real hosts alike)."""

from __future__ import annotations

import dataclasses

import yaml

from ascendprep.base import exitcodes
from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import render_gather_script
from ascendprep.facts.model import NpuFacts, TlsState
from ascendprep.facts.unit import PLAN
from ascendprep.inventory.load import inventory_from_text, load_inventory
from ascendprep.plan.changes import SetNpuAddress, SetNpuGateway, SetNpuNetdetect, SetNpuTls, SetSysctl
from ascendprep.plan.diff import diff_host
from ascendprep.plan.planfile import from_host_plans, write_plan
from ascendprep.plan.reads import npu_kinds_for, units_for_changes, units_for_plan
from ascendprep.run import apply as apply_command
from tests.commands.test_apply_command import FakeHosts, all_ok
from tests.plan.test_plan_diff import INVENTORY, converged_facts


def _desired(**device_network):
    data = {**INVENTORY, "device_network": {"subnet": "10.20.0.0/24", **device_network}}
    return build_desired(inventory_from_text(yaml.safe_dump(data)))


def _npu_sections(units) -> list[str]:
    return [u.section for u in units if u.section.startswith("hccn.") and PLAN in u.phases]


def test_plan_reads_tls_only_where_the_inventory_plans_it_and_the_gateway_always():
    """A gateway the inventory does not plan may still be on the port: plan reads it to remove it."""
    bare = _desired()  # no gateway, no TLS switch (the detect IP is a peer's, by default)
    assert _npu_sections(units_for_plan(bare, "n1")) == ["hccn.ip", "hccn.gateway", "hccn.netdetect"]
    full = _desired(gateway="10.20.0.254", detect="gateway", tls=False)
    assert _npu_sections(units_for_plan(full, "n1")) == ["hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls"]
    script = render_gather_script(8, "python3", units=units_for_plan(bare, "n1"), phase=PLAN)
    assert "-ip -g" in script and "-netdetect -g" in script and "-gateway -g" in script and "-tls -g" not in script
    assert (
        "ap_run npu_smi.list" not in script and "ap_run tool.npu_smi" not in script
    )  # the inventory gives the NPU count


def test_plan_reads_the_firewalls_only_when_the_inventory_may_act_on_them():
    for policy, read in (("leave", False), ("check", True), ("disable", True)):
        state = build_desired(inventory_from_text(yaml.safe_dump({**INVENTORY, "firewall": policy})))
        sections = {u.section for u in units_for_plan(state, "n1")}
        assert ({"firewall.ufw", "firewall.firewalld", "firewall.nftables"} <= sections) is read, policy
        assert not read or "ufw status" in render_gather_script(
            8, "python3", units=units_for_plan(state, "n1"), phase=PLAN
        )


def test_a_plan_without_the_unread_queries_is_the_same_plan():
    state = _desired(detect="peer")
    fresh = HostFacts_fresh(state)
    everything = diff_host(state, "n1", fresh)
    unread = dataclasses.replace(
        fresh, npus={n: NpuFacts(devid=n) for n in fresh.npus}
    )  # no gateway or TLS read at all
    narrowed = diff_host(state, "n1", unread)
    assert [c.key for c in narrowed.changes] == [c.key for c in everything.changes] and narrowed.incomplete == []


def HostFacts_fresh(state):
    facts = converged_facts(state, "n1")
    return dataclasses.replace(facts, npus={n: NpuFacts(devid=n) for n in facts.npus}, hccn_conf=None)


def test_apply_re_reads_the_planned_npu_kinds_and_the_address_they_need():
    ip, gateway = (
        SetNpuAddress("n1", None, 0, "10.20.0.1", "255.255.255.0"),
        SetNpuGateway("n1", None, 0, "10.20.0.254"),
    )
    detect, tls = SetNpuNetdetect("n1", None, 0, "10.20.0.9"), SetNpuTls("n1", 1, 0, 0)
    assert npu_kinds_for([detect]) == {"hccn.ip", "hccn.netdetect"}
    assert npu_kinds_for([gateway]) == {"hccn.ip", "hccn.gateway"}
    assert npu_kinds_for([tls]) == {"hccn.tls"}
    assert npu_kinds_for([SetSysctl("n1", "1", "net.core.somaxconn", "2")]) == frozenset()
    sections = [u.section for u in units_for_changes([ip, detect])]
    assert "hccn.ip" in sections and "hccn.netdetect" in sections and "file.hccn_conf" in sections
    assert "hccn.gateway" not in sections and "hccn.tls" not in sections
    assert [s for s in (u.section for u in units_for_changes([tls])) if s.startswith("hccn.")] == ["hccn.tls"]
    assert "npu_smi.list" in {u.section for u in units_for_changes([ip])}  # no NPU count: the list gives the ids
    assert "npu_smi.list" not in {u.section for u in units_for_changes([ip], npus=8)}


def _plan(tmp_path, monkeypatch, data, facts):
    monkeypatch.chdir(tmp_path)
    inventory_path = tmp_path / "inventory.yaml"
    inventory_path.write_text(yaml.safe_dump(data))
    state = build_desired(load_inventory(inventory_path))
    plans = [diff_host(state, name, facts(state, name)) for name in ("n1", "n2")]
    plan_path = tmp_path / ".ascendprep" / "plan.json"
    write_plan(from_host_plans(inventory_path, "t", plans), plan_path)
    return plan_path, state


def test_apply_of_fresh_addresses_re_reads_no_gateway_or_tls(tmp_path, monkeypatch):
    data = {**INVENTORY, "device_network": {"subnet": "10.20.0.0/24", "tls": False, "detect": "peer"}}

    def facts(state, name):
        converged = converged_facts(state, name)
        if name != "n1":
            return converged
        return dataclasses.replace(
            converged, npus={n: NpuFacts(devid=n, tls=TlsState(switch=0)) for n in converged.npus}, hccn_conf=None
        )

    plan_path, state = _plan(tmp_path, monkeypatch, data, facts)
    # at apply, n1's NPUs answer only what was asked: its address and detect IP (unset), no TLS
    at_apply = {
        "n1": dataclasses.replace(facts(state, "n1"), npus={n: NpuFacts(devid=n) for n in range(2)}),
        "n2": facts(state, "n2"),
    }
    hosts = FakeHosts(monkeypatch, at_apply, all_ok)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    assert [s for s in hosts.reread["n1"] if s.startswith("hccn.")] == ["hccn.ip", "hccn.netdetect"]
    assert sorted(c.key for c in hosts.applied["n1"]) == [
        "hccn.ip:0",
        "hccn.ip:1",
        "hccn.netdetect:0",
        "hccn.netdetect:1",
    ]


def test_apply_of_a_tls_change_reads_only_tls_and_still_sees_what_moved(tmp_path, monkeypatch):
    data = {**INVENTORY, "device_network": {"subnet": "10.20.0.0/24", "tls": False}}

    def facts(state, name):
        converged = converged_facts(state, name)
        if name != "n1":
            return converged
        return dataclasses.replace(
            converged, npus={n: dataclasses.replace(f, tls=TlsState(switch=1)) for n, f in converged.npus.items()}
        )

    plan_path, state = _plan(tmp_path, monkeypatch, data, facts)
    only_tls = {n: NpuFacts(devid=n, tls=TlsState(switch=1)) for n in range(2)}  # the address was not read
    hosts = FakeHosts(
        monkeypatch, {"n1": dataclasses.replace(facts(state, "n1"), npus=only_tls), "n2": facts(state, "n2")}, all_ok
    )
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    assert [s for s in hosts.reread["n1"] if s.startswith("hccn.")] == ["hccn.tls"]
    assert sorted(c.key for c in hosts.applied["n1"]) == ["hccn.tls:0", "hccn.tls:1"]

    # the re-read TLS value still counts: npu 1 lost its certificates since planning (TLS
    # effectively off, as planned), so only npu 0 is switched
    moved = {
        0: NpuFacts(devid=0, tls=TlsState(switch=1)),
        1: NpuFacts(devid=1, tls=TlsState(switch=1, certificates=False)),
    }
    hosts = FakeHosts(
        monkeypatch, {"n1": dataclasses.replace(facts(state, "n1"), npus=moved), "n2": facts(state, "n2")}, all_ok
    )
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    assert [c.key for c in hosts.applied["n1"]] == ["hccn.tls:0"]  # npu 1 is already as planned


def test_plan_on_a3_keeps_npu_smi_list_so_spod_info_confirms_the_sdids():
    """A3's planned SDIDs are checked against spod-info, which runs per chip of npu-smi's list:
    plan must not drop the list there even though the inventory gives the NPU count."""
    a3 = build_desired(load_inventory("inventories/a3-superpod.yaml"))
    node = a3.inventory.nodes[0].name
    sections = {u.section for u in units_for_plan(a3, node)}
    assert {"tool.npu_smi", "npu_smi.list", "npu_smi.spod"} <= sections
    script = render_gather_script(a3.inventory.nodes[0].npus, "python3", units=units_for_plan(a3, node), phase=PLAN)
    assert "ap_run npu_smi.list" in script and "spod-info" in script
    # the two-chip flag is set in the main shell, where the per-NPU jobs read it
    assert script.index("AP_SPOD=1 ;;") < script.index("ap_each_npu ap_chip_probes")
