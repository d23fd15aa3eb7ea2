"""Ascend 950 (Atlas 350) on the plan side: the host's generation against the inventory's, IPv4
on ``bond<slot>`` with the slot from ``npu-smi info -m``, /etc/hccn.conf keys by slot, and the
mode-first hccn_tool commands of the apply script."""

from __future__ import annotations

import yaml

from ascendprep.apply.script import render_apply_script
from ascendprep.base.findings import Severity
from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import render_gather_script
from ascendprep.facts.model import HccnConf, HostFacts, NpuFacts, NpuSmiChip
from ascendprep.inventory.addressing import plan_device_ips
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.changes import SetNpuAddress, SetNpuGateway, from_saved
from ascendprep.plan.diff import GENERATION_MISMATCH, diff_host
from ascendprep.plan.reads import units_for_changes, units_for_plan


def inventory(product="atlas-350", subnet="10.20.0.0/24", gateway=None, npus=2):
    net = {"subnet": subnet}
    if gateway:
        net["gateway"] = gateway
    data = {
        "name": "t",
        "product": product,
        "npus_per_node": npus,
        "device_network": net,
        "nodes": [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}],
    }
    return inventory_from_text(yaml.safe_dump(data))


def chips(*slots):
    return tuple(
        NpuSmiChip(npu_id=i, chip_id=0, chip_name="950PR", slot_id=s, chip_phy_id=i) for i, s in enumerate(slots)
    )


def npu_changes(plan):
    return [c for c in plan.changes if c.npu is not None]


def test_a_fresh_950_host_gets_its_addresses_on_bond_slot_devices():
    desired = build_desired(inventory(gateway="10.20.0.1"))
    facts = HostFacts(
        npu_pci_ids=("d806", "d806"),
        npu_chips=chips(3, 7),
        npus={0: NpuFacts(devid=0), 1: NpuFacts(devid=1)},
        hccn_conf=HccnConf(raw="", devices={}),
    )
    plan = diff_host(desired, "n1", facts, areas=("npu",))
    changes = npu_changes(plan)
    assert plan.findings == [] and plan.incomplete == []
    assert {(c.kind, c.npu, c.bond_slot) for c in changes} == {
        ("hccn.ip", 0, 3),
        ("hccn.ip", 1, 7),
        ("hccn.gateway", 0, 3),
        ("hccn.gateway", 1, 7),
        ("hccn.netdetect", 0, 3),
        ("hccn.netdetect", 1, 7),
    }
    script = render_apply_script(changes, "/usr/local/bin/hccn_tool")
    want = next(h for h in desired.nodes["n1"].hccn if h.npu == 1)
    assert f"/usr/local/bin/hccn_tool -s -ip -i 1 -d bond7 -address {want.ip} -netmask {want.netmask}" in script
    assert "/usr/local/bin/hccn_tool -s -gateway -i 0 -d bond3 -address 10.20.0.1" in script
    assert f"/usr/local/bin/hccn_tool -s -netdetect -i 1 -address {want.netdetect}" in script
    # never the 910B order (-i N -ip -s ...) on a 950
    assert "-ip -s address" not in script and "-gateway -s gateway" not in script


def test_hccn_conf_is_read_by_slot_so_a_converged_950_host_plans_nothing():
    desired = build_desired(inventory())
    wants = {h.npu: h for h in desired.nodes["n1"].hccn}
    npus = {n: NpuFacts(devid=n, ip=w.ip, netmask=w.netmask, netdetect=w.netdetect) for n, w in wants.items()}
    by_slot = {3: wants[0], 7: wants[1]}
    conf = {slot: {"address": w.ip, "netmask": w.netmask, "netdetect": w.netdetect} for slot, w in by_slot.items()}
    facts = HostFacts(npu_chips=chips(3, 7), npus=npus, hccn_conf=HccnConf(raw="", devices=conf))
    assert npu_changes(diff_host(desired, "n1", facts, areas=("npu",))) == []
    # the same file keyed by NPU id (the 910B way) is stale on a 950: the driver reads address_<slot>
    by_npu = HccnConf(raw="", devices={n: conf[s] for n, s in ((0, 3), (1, 7))})
    stale = diff_host(desired, "n1", HostFacts(npu_chips=chips(3, 7), npus=npus, hccn_conf=by_npu), areas=("npu",))
    assert {c.kind for c in npu_changes(stale)} == {"hccn.ip", "hccn.netdetect"}


def test_an_npu_without_a_slot_is_not_planned_and_says_why():
    desired = build_desired(inventory())
    facts = HostFacts(npu_chips=chips(3), npus={0: NpuFacts(devid=0), 1: NpuFacts(devid=1)})
    plan = diff_host(desired, "n1", facts, areas=("npu",))
    assert {c.npu for c in npu_changes(plan)} == {0}
    assert plan.incomplete == ["npu 1: its bond device is unknown (npu-smi info -m lists no slot for it)"]
    unread = diff_host(desired, "n1", HostFacts(npus={0: NpuFacts(devid=0)}), areas=("npu",))
    assert npu_changes(unread) == [] and all("npu-smi info -m was not read" in line for line in unread.incomplete)


def test_a2_inventory_on_a_950_host_is_refused_with_a_finding():
    desired = build_desired(inventory(product="atlas-a2"))
    facts = HostFacts(npu_pci_ids=("d806",), npus={0: NpuFacts(devid=0), 1: NpuFacts(devid=1)})
    plan = diff_host(desired, "n1", facts)
    assert plan.changes == []
    [finding] = plan.findings
    assert finding.id == GENERATION_MISMATCH and finding.severity is Severity.ERROR
    assert "atlas-a2" in finding.message and "Ascend 950" in finding.message and "d806" in finding.message
    assert "product: atlas-350" in finding.fix
    assert plan.incomplete == [finding.message]


def test_950_inventory_on_a_910b_host_is_refused_and_npu_smi_names_tell_too():
    desired = build_desired(inventory())
    plan = diff_host(desired, "n1", HostFacts(npu_pci_ids=("d802",)))
    assert [f.id for f in plan.findings] == [GENERATION_MISMATCH] and plan.changes == []
    assert "Ascend 910b" in plan.findings[0].message
    # without sysfs, npu-smi's product name (the documented 'A5 PCIe Card') identifies a 950
    from ascendprep.facts.model import NpuSmiDevice, NpuSmiList

    listed = NpuSmiList(1, (NpuSmiDevice(0, product_name="A5 PCIe Card"),))
    a2 = diff_host(build_desired(inventory(product="atlas-a2")), "n1", HostFacts(npu_smi=listed))
    assert [f.id for f in a2.findings] == [GENERATION_MISMATCH]
    assert "npu-smi product name 'A5 PCIe Card'" in a2.findings[0].message


def test_the_950_plan_script_reads_slots_and_uses_the_mode_first_syntax_without_npu_smi_c():
    desired = build_desired(inventory())
    units = units_for_plan(desired, "n1")
    sections = [u.section for u in units]
    assert "npu_smi.map" in sections and "tool.npu_smi" in sections and "pci.npus" in sections
    script = render_gather_script(2, "python3", units=units, phase="plan", generation="950")
    assert 'ap_hccn -g -ip -i "$ap_dev" -d "bond$ap_slot"' in script
    assert 'ap_hccn -g -gateway -i "$ap_dev" -d "bond$ap_slot"' in script
    assert 'ap_hccn -g -netdetect -i "$ap_dev"' in script
    assert "info -m" in script
    npu_smi_calls = [line for line in script.splitlines() if '"$AP_NPUSMI"' in line and "ap_run" in line]
    assert npu_smi_calls and not any(" -c " in line for line in npu_smi_calls)
    # an A2 plan script keeps its own syntax and reads no map
    a2 = render_gather_script(2, "python3", phase="plan", generation="910b")
    assert 'ap_hccn -i "$ap_dev" -ip -g' in a2 and "npu_smi.map" not in a2


def test_apply_rereads_npu_smi_map_for_950_changes():
    change = SetNpuAddress("n1", None, 0, "10.20.0.2", "255.255.255.0", bond_slot=4)
    assert "npu_smi.map" in [u.section for u in units_for_changes([change], npus=2)]


def test_a_saved_950_change_keeps_its_bond_slot_and_a_tls_one_is_refused():
    change = SetNpuGateway("n1", {"device": None, "file": None}, 2, "10.20.0.1", bond_slot=5)
    saved = change.to_dict()
    assert saved["target"] == "npu 2 bond5"
    back = from_saved(saved["kind"], "n1", saved["target"], saved["before"], saved["after"])
    assert back == change and back.bond_slot == 5
    import pytest

    from ascendprep.plan.changes import ChangeError

    with pytest.raises(ChangeError, match="TLS"):
        from_saved("hccn.tls", "n1", "npu 2 bond5", 0, 1)


def test_950_gateway_removal_takes_the_slot_key_out_of_hccn_conf():
    change = SetNpuGateway("n1", {"device": "10.20.0.1", "file": "10.20.0.1"}, 1, None, bond_slot=6)
    script = render_apply_script([change], "/usr/local/bin/hccn_tool")
    assert "_ap_ungateway 1 /usr/local/bin/hccn_tool /etc/hccn.conf 6" in script


def test_950_addressing_refuses_the_vnic_subnets_and_a_gateway_outside_the_subnet():
    findings = plan_device_ips(inventory(subnet="192.168.2.0/24")).findings
    assert any(f.id == "ipplan.vnic_subnet" and "192.168.2.0/24" in f.message for f in findings)
    findings = plan_device_ips(inventory(subnet="192.168.1.0/24")).findings
    assert any(f.id == "ipplan.vnic_subnet" for f in findings)
    findings = plan_device_ips(inventory(gateway="10.30.0.1")).findings
    assert any(f.id == "ipplan.gateway_subnet" for f in findings)
    # the same 192.168.2.0/24 is fine on an A2 (its vNIC is elsewhere)
    assert not plan_device_ips(inventory(product="atlas-a2", subnet="192.168.2.0/24")).findings


def test_950_inventory_refuses_a_tls_switch_at_load():
    import pytest

    from ascendprep.base.yamlsource import InputError

    data = {
        "name": "t",
        "product": "atlas-350",
        "device_network": {"subnet": "10.20.0.0/24", "tls": True},
        "nodes": [{"name": "n1", "host": "10.0.0.11"}],
    }
    with pytest.raises(InputError, match="inv.yaml:5: device_network.tls: .*TLS switch"):
        inventory_from_text(yaml.safe_dump(data, sort_keys=False), file="inv.yaml")


def test_the_950_verify_script_asks_health_per_card_without_c():
    script = render_gather_script(2, "python3", phase="verify", generation="950")
    health = [line for line in script.splitlines() if "npu_smi.health" in line and "ap_run" in line]
    assert health == [
        '\tap_run npu_smi.health " npu=$ap_id chip=$ap_c card=1" ap_tool "$AP_NPUSMI" info -t health -i "$ap_id"'
    ]
    a2 = render_gather_script(2, "python3", phase="verify")
    assert 'info -i "$ap_id" -c "$ap_c" -t health' in a2


def test_a_950_script_sends_no_910_form_per_npu_query():
    script = render_gather_script(2, "python3", phase="verify", generation="950")
    body = script[script.index("ap_npu_probes() {") : script.index("ap_each_npu ap_npu_probes")]
    runs = [line.split()[1] for line in body.splitlines() if line.strip().startswith("ap_run")]
    assert runs == ["hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls"]
    # every query mode first (the 950 guide's form); the 910 forms put the mode last
    assert "-tls -g" not in body and "-stat -g" not in body and "ap_hccn -g -tls -i" in body


def test_within_the_910_family_the_pci_id_is_not_held_against_the_product():
    """d802/d803 are not confirmed ids (docs/ascend-reference.md §4.5): an A3 inventory on a host
    showing d802 is not refused for it; only the 950 boundary is."""
    a3 = {
        "name": "t",
        "product": "atlas-a3",
        "npus_per_node": 2,
        "device_network": {"subnets": ["10.20.0.0/24", "10.21.0.0/24"]},
        "nodes": [{"name": "n1", "host": "10.0.0.11"}],
    }
    desired = build_desired(inventory_from_text(yaml.safe_dump(a3)))
    plan = diff_host(desired, "n1", HostFacts(npu_pci_ids=("d802",)))
    assert GENERATION_MISMATCH not in [f.id for f in plan.findings]


# --------------------------------------------------------------------------------------------
# The rank table 2.0, planned from every host's -dev_info


def _dev_info_host(managed=None):
    from pathlib import Path

    from ascendprep.facts.ub_dev_info import parse_dev_info
    from ascendprep.facts.ub_model import UbFacts

    # the vendor's -dev_info example (hicann/driver docs/en/Ascend_950_HCCN_Tool)
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "hccn" / "a5_dev_info.out").read_text()
    dev_info = parse_dev_info(text)
    return HostFacts(
        npus={n: NpuFacts(devid=n, ub=UbFacts(dev_info=dev_info)) for n in range(2)},
        npu_chips=chips(0, 1),
        managed_files=managed or {},
    )


def _table_changes(plan):
    from ascendprep.base.paths import RANK_TABLE

    return [c for c in plan.changes if c.key == f"file:{RANK_TABLE}"]


def test_the_950_plan_script_reads_dev_info_per_npu_in_the_mode_first_form():
    desired = build_desired(inventory())
    script = render_gather_script(2, "python3", units=units_for_plan(desired, "n1"), phase="plan", generation="950")
    assert 'ap_run hccn.ub_dev_info " npu=$ap_dev" ap_hccn -g -dev_info -i "$ap_dev"' in script
    assert "ap_each_npu ap_ub_dev_info" in script
    # none of verify's other UB queries at plan, and no -dev_info on an earlier generation
    assert "-ub_connect" not in script and "-ub_ping" not in script
    a2 = render_gather_script(2, "python3", phase="plan", generation="910b")
    assert "-dev_info" not in a2


def test_a_950_plan_writes_the_2_0_table_to_every_node_and_a_converged_host_plans_nothing():
    from ascendprep.base.paths import MANAGED_FILES, RANK_TABLE
    from ascendprep.desired.state import plan_rank_table_v2
    from ascendprep.facts.model import ManagedFile
    from ascendprep.plan.drift import sha256_text

    desired = build_desired(inventory())
    facts = {"n1": _dev_info_host(), "n2": _dev_info_host()}
    absent = {path: ManagedFile(path, False) for path in MANAGED_FILES}
    assert [f.id for f in plan_rank_table_v2(desired, facts)] == ["ranktable.v2_planned"]
    for name in ("n1", "n2"):
        [change] = _table_changes(diff_host(desired, name, _dev_info_host(absent), areas=("files",)))
        assert change.before is None and change.content is not None and json_version(change.content) == "2.0"
    content = next(f.content for f in desired.nodes["n1"].files if f.path == RANK_TABLE)
    there = dict(absent, **{RANK_TABLE: ManagedFile(RANK_TABLE, True, sha256_text(content))})
    assert _table_changes(diff_host(desired, "n1", _dev_info_host(there), areas=("files",))) == []


def json_version(content):
    import json

    return json.loads(content)["version"]


def test_a_950_host_whose_eids_were_not_read_means_no_table_and_a_finding_naming_it():
    from ascendprep.base.paths import MANAGED_FILES
    from ascendprep.desired.state import plan_rank_table_v2
    from ascendprep.facts.model import ManagedFile

    desired = build_desired(inventory())
    [finding] = plan_rank_table_v2(desired, {"n1": _dev_info_host(), "n2": HostFacts(npu_chips=chips(0, 1))})
    assert finding.id == "ranktable.v2_eids" and finding.severity is Severity.ERROR and finding.node == "n2"
    absent = {path: ManagedFile(path, False) for path in MANAGED_FILES}
    assert _table_changes(diff_host(desired, "n1", _dev_info_host(absent), areas=("files",))) == []


def test_apply_rereads_every_nodes_eids_for_the_2_0_table():
    from ascendprep.plan.reads import with_rank_table_v2_reads

    sections = [u.section for u in with_rank_table_v2_reads(None)]
    assert {"hccn.ub_dev_info", "npu_smi.map", "tool.hccn_tool"} <= set(sections)
    assert "managed" not in sections  # a node without changes is only read for the table
    change = SetNpuAddress("n1", None, 0, "10.20.0.1", "255.255.255.0", bond_slot=0)
    both = [u.section for u in with_rank_table_v2_reads(units_for_changes([change], npus=2))]
    assert "hccn.ip" in both and "hccn.ub_dev_info" in both
