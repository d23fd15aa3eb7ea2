"""A healthy cluster passes every check; each single fault fails exactly the check that names it.

Facts are built from the desired state (verify_cluster_facts.py); each fault changes one fact the
way the real fault shows up, and the test asserts which (check, node, NPU) fail and nothing else.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, Optional, Set, Tuple

import pytest

from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.runner import no_errors, run_checks
from ascendprep.desired.state import DesiredState
from ascendprep.desired.envfiles import render_sysctl_conf
from ascendprep.facts.model import Firewall, FirewallTool, HccnConf, HostFacts, LinkRecord, LinkStat, LldpNeighbor, ManagedFile, NpuHealth, NpuSmiDevice, NpuSmiList, ProbeError, PythonEnv, SysctlFile, TlsState, VersionFile
from ascendprep.base.findings import Severity
from ascendprep.facts.jobenv_model import ShellEnv, TorchNpuImport, Visibility
from verify_cluster_facts import JOB_ITEMS, NOW, TODAY, cluster_evidence, desired_state, healthy_facts, with_npu

Where = Tuple[str, Optional[str], Optional[int]]


@pytest.fixture(scope="module")
def desired() -> DesiredState:
    return desired_state()


def failures(desired: DesiredState, facts: Optional[Dict[str, Optional[HostFacts]]] = None, lost=(), severity: Optional[Severity] = None):
    hosts, plan = cluster_evidence(desired, facts, lost=lost)
    results = run_checks(desired, hosts, plan, today=TODAY)
    return [r for r in results if r.failed and (severity is None or r.severity is severity)], results


def where(results) -> Set[Where]:
    return {(r.check, r.node, r.npu) for r in results}


def test_healthy_cluster_passes_every_check(desired):
    failed, results = failures(desired)
    assert failed == []
    assert no_errors(results)
    ids = {r.check for r in results}
    # Every check of the registry ran on this fully specified inventory.
    assert {"node.reachable", "npu.health", "network.lldp", "network.tls", "network.gateway", "sysctl.minimum", "firewall.active", "files.managed", "software.torchvision", "cluster.reachability", "cluster.compat"} <= ids
    # 4 nodes x 8 NPUs x 11 per-NPU network checks (network.counters the 11th), each recorded per NPU.
    assert sum(1 for r in results if r.check.startswith("network.")) == 4 * 8 * 11
    # the A3 super-pod checks (issue 21) do not apply to this atlas-a2 inventory: skipped once each, saying why
    a3_only = {"superpod.identity", "superpod.vnic", "superpod.die_subnets", "superpod.rank_table", "cluster.sdid", "cluster.hccs",
               "superpod.hccl_env"}
    assert {(r.check, r.status, r.message) for r in results if r.check in a3_only} == {
        (check, Status.SKIPPED, "atlas-a2 has no HCCS super-pod plane") for check in a3_only}
    assert all(r.status is Status.PASSED for r in results if r.check not in a3_only)


def _node2(desired: DesiredState) -> HostFacts:
    return healthy_facts(desired, "node2")


def _conf_with(facts: HostFacts, npu: int, **values: str) -> HccnConf:
    assert facts.hccn_conf is not None
    devices = {k: dict(v) for k, v in facts.hccn_conf.devices.items()}
    devices[npu].update(values)
    return HccnConf(raw="(edited)", devices=devices)


def _conf_without(facts: HostFacts, npu: int, key: str) -> HccnConf:
    assert facts.hccn_conf is not None
    devices = {k: dict(v) for k, v in facts.hccn_conf.devices.items()}
    devices[npu].pop(key, None)
    return HccnConf(raw="(edited)", devices=devices)


FAULTS: Dict[str, Tuple[Callable[[DesiredState], HostFacts], Set[Where]]] = {
    "link down": (lambda d: with_npu(_node2(d), 3, link="DOWN"), {("network.link", "node2", 3)}),
    "net health timeout": (lambda d: with_npu(_node2(d), 3, net_health="Receive timeout"), {("network.net_health", "node2", 3)}),
    "no lldp neighbour": (lambda d: with_npu(_node2(d), 3, lldp=None), {("network.lldp", "node2", 3)}),
    "optics missing": (lambda d: with_npu(_node2(d), 5, optical_present=False), {("network.optical", "node2", 5)}),
    "tls switch on": (lambda d: with_npu(_node2(d), 3, tls=TlsState(switch=1, preconfigured=1)), {("network.tls", "node2", 3), ("cluster.tls", "node2", 3)}),
    "gateway removed": (lambda d: replace(with_npu(_node2(d), 6, gateway=None, gateway_iface=None), hccn_conf=_conf_without(_node2(d), 6, "gateway")), {("network.gateway", "node2", 6)}),
    "detect ip changed": (lambda d: replace(with_npu(_node2(d), 1, netdetect="10.20.0.77"), hccn_conf=_conf_with(_node2(d), 1, netdetect="10.20.0.77")), {("network.netdetect", "node2", 1)}),
    "device ip changed": (lambda d: replace(with_npu(_node2(d), 2, ip="10.20.0.200"), hccn_conf=_conf_with(_node2(d), 2, address="10.20.0.200")), {("network.ip", "node2", 2)}),
    "stale hccn.conf": (lambda d: replace(_node2(d), hccn_conf=_conf_with(_node2(d), 3, address="10.20.0.199")), {("network.hccn_conf", "node2", 3)}),
    "npu alarm": (lambda d: replace(_node2(d), npu_health=tuple(NpuHealth(i, 0, "Alarm" if i == 4 else "OK", "80E18402" if i == 4 else None) for i in range(8))), {("npu.health", "node2", 4)}),
    "npu missing from npu-smi": (lambda d: replace(_node2(d), npu_smi=NpuSmiList(7, tuple(NpuSmiDevice(i) for i in range(7)))), {("npu.count", "node2", None), ("npu.health", "node2", 7)}),
    "somaxconn too low": (lambda d: replace(_node2(d), sysctl={**_node2(d).sysctl, "net.core.somaxconn": "4096"}), {("sysctl.minimum", "node2", None)}),
    # the file persists the host's 8080 with HCCL's ports; the live value lost HCCL's
    "ports not reserved": (lambda d: replace(_node2(d), sysctl={**_node2(d).sysctl, "net.ipv4.ip_local_reserved_ports": "8080"}, sysctl_file=SysctlFile(render_sysctl_conf({**_node2(d).sysctl, "net.ipv4.ip_local_reserved_ports": "8080,60000-60015"}))), {("sysctl.reserved_ports", "node2", None)}),
    "env file edited": (lambda d: replace(_node2(d), managed_files={**_node2(d).managed_files, "/etc/ascendprep/env.sh": ManagedFile("/etc/ascendprep/env.sh", True, "0" * 64)}), {("files.managed", "node2", None)}),
    "rank table missing": (lambda d: replace(_node2(d), managed_files={**_node2(d).managed_files, "/etc/ascendprep/rank_table.json": ManagedFile("/etc/ascendprep/rank_table.json", False)}), {("files.managed", "node2", None)}),
    "torch_npu not installed": (lambda d: replace(_node2(d), python=PythonEnv("/usr/bin/python3", "3.10.12", "/usr/bin/python3", {"torch": "2.6.0", "torch_npu": None, "torchvision": "0.21.0"})), {("software.torch_npu", "node2", None)}),
    # issue 17, the job environment (checks/jobenv.py)
    "RANK_TABLE_FILE in a site profile": (lambda d: replace(_node2(d), job=replace(_node2(d).job, login=ShellEnv({"HCCL_CONNECT_TIMEOUT": None, "RANK_TABLE_FILE": "/etc/ascendprep/hccl_8p.json"}))), {("job.rank_table", "node2", None)}),
    "short HCCL_CONNECT_TIMEOUT in a site profile": (lambda d: replace(_node2(d), job=replace(_node2(d).job, login=ShellEnv({"HCCL_CONNECT_TIMEOUT": "60", "RANK_TABLE_FILE": None}))), {("job.connect_timeout", "node2", None)}),
    "container without davinci_manager": (lambda d: replace(_node2(d), job=replace(_node2(d).job, visible=Visibility(present=tuple(i for i in JOB_ITEMS if i != "dev:/dev/davinci_manager")))), {("job.container", "node2", None)}),
    "torch_npu import undefined symbol": (lambda d: replace(_node2(d), job=replace(_node2(d).job, torch_npu=TorchNpuImport(ok=False, error="ImportError: libtorch_npu.so: undefined symbol: _ZN3c10", rc=1))), {("job.torch_npu_import", "node2", None)}),
    "hccn_tool missing": (lambda d: replace(_node2(d), hccn_tool=None, npus={}, errors=(ProbeError("hccn_tool", "missing", "hccn_tool: not installed"),)), {("node.hccn_tool", "node2", None)}),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_one_fault_fails_exactly_its_check(desired, fault):
    make, expected = FAULTS[fault]
    failed, results = failures(desired, {"node2": make(desired)})
    assert where(failed) == expected, [r.message for r in failed]
    assert all(r.severity is Severity.ERROR for r in failed)
    assert not no_errors(results)
    for result in failed:
        assert result.fix, f"{result.check} has no fix"
        finding = result.finding()
        assert finding is not None and (finding.node, finding.npu) == (result.node, result.npu)


def test_hccn_tool_missing_skips_the_npu_checks_naming_why(desired):
    _, results = failures(desired, {"node2": FAULTS["hccn_tool missing"][0](desired)})
    skipped = [r for r in results if r.node == "node2" and r.check.startswith("network.")]
    from ascendprep.verify.checks.registry import CHECKS

    per_npu = [c for c in CHECKS if c.scope == "npu" and c.id.startswith("network.")]
    assert len(skipped) == 8 * len(per_npu) and len(per_npu) >= 10
    assert all(r.status is Status.SKIPPED and "node.hccn_tool failed" in r.message for r in skipped)


def test_recent_link_flap_is_a_warning_only(desired):
    flapped = LinkStat(NOW, up_count=2, down_count=1, records=(LinkRecord("Wed Jun  7 09:10:00 2023", "UP"), LinkRecord("Wed Jun  7 09:09:58 2023", "DOWN")))
    failed, results = failures(desired, {"node2": with_npu(_node2(desired), 3, link_stat=flapped)})
    assert where(failed) == {("network.link_flaps", "node2", 3)}
    assert failed[0].severity is Severity.WARNING and "1 time in the last 24 h" in failed[0].message
    assert no_errors(results)


def test_old_link_flap_is_not_recent(desired):
    old = LinkStat(NOW, up_count=2, down_count=1, records=(LinkRecord("Mon Jun  5 09:10:00 2023", "UP"), LinkRecord("Mon Jun  5 09:09:58 2023", "DOWN")))
    failed, _ = failures(desired, {"node2": with_npu(_node2(desired), 3, link_stat=old)})
    assert failed == []


@pytest.mark.parametrize("now, when", [
    ("Wed Jun  7 10:08:28 " + "2" * 5000, "Wed Jun  7 09:09:58 2023"),  # int() refuses over 4,300 digits
    (NOW, "Wed Jun  \u00b27 09:09:58 2023"),  # a superscript two: isdigit() but not int()
    ("Wed Jun  7 1\u0660:08:28 2023", "Wed Jun  7 09:09:58 2023"),  # an Arabic-Indic zero
], ids=["5000-digit-year", "superscript-day", "arabic-indic-hour"])
def test_a_link_history_time_that_is_not_a_time_counts_the_down_without_crashing(desired, now, when):
    flapped = LinkStat(now, up_count=2, down_count=1, records=(LinkRecord("Wed Jun  7 09:10:00 2023", "UP"), LinkRecord(when, "DOWN")))
    failed, results = failures(desired, {"node2": with_npu(_node2(desired), 3, link_stat=flapped)})
    assert where(failed) == {("network.link_flaps", "node2", 3)}
    assert failed[0].severity is Severity.WARNING and "the check itself failed" not in failed[0].message
    assert no_errors(results)


def test_probe_timeout_is_could_not_check_never_a_pass(desired):
    facts = replace(_node2(desired), errors=(ProbeError("hccn.link", "timeout", "hccn_tool -i 3 -link -g timed out after 10s and was killed", npu=3),))
    failed, _ = failures(desired, {"node2": facts})
    assert where(failed) == {("network.link", "node2", 3)}
    assert failed[0].message.startswith(COULD_NOT_CHECK) and "timed out" in failed[0].message


def test_unsupported_probe_skips_with_the_reason(desired):
    facts = replace(_node2(desired), errors=(ProbeError("hccn.optical", "unsupported", "hccn_tool -i 0 -optical -g: The command is not supported on this product.", npu=0),))
    failed, results = failures(desired, {"node2": facts})
    assert failed == []
    optical = next(r for r in results if (r.check, r.node, r.npu) == ("network.optical", "node2", 0))
    assert optical.status is Status.SKIPPED and "not supported" in optical.message


def test_unreachable_node_fails_once_and_its_npus_are_pinged_from_peers(desired):
    failed, results = failures(desired, {"node3": None})
    assert where(failed) == {("node.reachable", "node3", None)}
    assert "connection refused" in failed[0].message
    node3 = [r for r in results if r.node == "node3" and r.check != "node.reachable"]
    assert node3 and all(r.status is Status.SKIPPED for r in node3)
    pairs = [r for r in results if r.check == "cluster.reachability" and "node3" in (r.subject or "")]
    assert pairs and all(r.status is Status.PASSED and r.evidence["from"]["node"] != "node3" for r in pairs)


def test_lost_pings_name_the_broken_pair(desired):
    hosts, plan = cluster_evidence(desired)
    pair = next(p for p in plan.pairs if {p.a.node, p.b.node} == {"node1", "node2"} and p.a.npu == 3)
    assert pair.source is not None
    failed, _ = failures(desired, lost=((pair.source.node, 3, pair.target.ip),))
    assert [(r.check, r.subject) for r in failed] == [("cluster.reachability", pair.subject)]
    assert f"{pair.source.node} npu 3" in failed[0].message and pair.target.ip in failed[0].message
    assert failed[0].evidence["received"] == 0


def test_version_skew_names_the_odd_node(desired):
    facts = _node2(desired)
    skewed = replace(facts, versions=replace(facts.versions, toolkit=VersionFile("/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info", {"version": "8.1.RC1"})))
    failed, _ = failures(desired, {"node2": skewed})
    found = where(failed)
    assert ("software.cann", "node2", None) in found
    skew = next(r for r in failed if r.check == "cluster.versions")
    assert skew.message == "node2 has CANN 8.1.RC1, the other 3 have 8.2.RC1"
    assert skew.node == "node2"
    # Anything else is the compatibility verdict on node2's own stack.
    assert all(r.check == "cluster.compat" and r.node == "node2" for r in failed if r.check not in ("software.cann", "cluster.versions", "job.nnal"))  # NNAL stays at the old CANN


def test_duplicate_device_ip_names_both_holders(desired):
    taken = healthy_facts(desired, "node1").npus[3].ip
    facts = replace(with_npu(_node2(desired), 3, ip=taken), hccn_conf=_conf_with(_node2(desired), 3, address=taken))
    failed, _ = failures(desired, {"node2": facts})
    assert where(failed) == {("network.ip", "node2", 3), ("cluster.duplicate_ip", None, None)}
    duplicate = next(r for r in failed if r.check == "cluster.duplicate_ip")
    assert duplicate.message == f"device IP {taken} is configured on node1 npu 3, node2 npu 3"


@pytest.mark.parametrize("policy, severity", [("check", Severity.WARNING), ("disable", Severity.ERROR)])
def test_active_firewall_follows_the_policy(policy, severity):
    from verify_cluster_facts import INVENTORY

    desired = desired_state(INVENTORY.replace("firewall: check", f"firewall: {policy}"))
    facts = replace(healthy_facts(desired, "node4"), firewall=Firewall(ufw=FirewallTool(True, True), firewalld=FirewallTool(False), nftables=FirewallTool(True, False)))
    failed, _ = failures(desired, {"node4": facts})
    assert [(r.check, r.node, r.subject, r.severity) for r in failed] == [("firewall.active", "node4", "ufw", severity)]


def test_firewall_leave_is_reported_skipped_once():
    from verify_cluster_facts import INVENTORY

    desired = desired_state(INVENTORY.replace("firewall: check", "firewall: leave"))
    hosts, plan = cluster_evidence(desired)
    results = [r for r in run_checks(desired, hosts, plan, today=TODAY) if r.check == "firewall.active"]
    assert [(r.status, r.node) for r in results] == [(Status.SKIPPED, None)]


def test_cabling_mismatch_names_both_ports(desired):
    moved = with_npu(healthy_facts(desired, "node1"), 2, lldp=LldpNeighbor(system_name="leaf-9", port_ifname="200GE1/0/7"))
    failed, _ = failures(desired, {"node1": moved})
    assert where(failed) == {("network.lldp", "node1", 2)}
    assert "leaf-9 200GE1/0/7" in failed[0].message and "leaf-3 200GE1/0/1" in failed[0].message


def test_a_check_that_crashes_fails_instead_of_passing(desired, monkeypatch):
    from ascendprep.verify.checks import registry

    broken = next(c for c in registry.CHECKS if c.id == "npu.count")
    monkeypatch.setattr(registry, "CHECKS", tuple(replace(c, run=lambda ctx: 1 / 0) if c is broken else c for c in registry.CHECKS))
    failed, _ = failures(desired)
    assert {(r.check, r.node) for r in failed} == {("npu.count", f"node{i}") for i in range(1, 5)}
    assert all("ZeroDivisionError" in r.message for r in failed)
