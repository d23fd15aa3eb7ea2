"""A healthy cluster passes every check; the faults a data case cannot state are here.

The single-fact faults (one fact changed -> exactly these checks fail at this severity) are data:
tests/fixtures/checks/<check>/<case>.json, run by tests/verify/test_check_cases.py. The tests here
hold what those cannot: message wording and evidence, skipped and could-not-check verdicts, lost
pings, several nodes, another inventory. Facts are built from the desired state
(verify_cluster_facts.py); each fault changes one fact the way the real fault shows up.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional, Set, Tuple

import pytest
from verify_cluster_facts import NOW, cluster_evidence, desired_state, healthy_facts, judge, with_npu

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import (
    Firewall,
    FirewallTool,
    HccnConf,
    HostFacts,
    LinkRecord,
    LinkStat,
    LldpNeighbor,
    ProbeError,
    VersionFile,
)
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.runner import no_errors

Where = Tuple[str, Optional[str], Optional[int]]


def failures(
    desired: DesiredState,
    facts: Optional[Dict[str, Optional[HostFacts]]] = None,
    lost=(),
    severity: Optional[Severity] = None,
):
    results = judge(desired, facts, lost=lost)
    return [r for r in results if r.failed and (severity is None or r.severity is severity)], results


def where(results) -> Set[Where]:
    return {(r.check, r.node, r.npu) for r in results}


def test_healthy_cluster_passes_every_check(desired):
    failed, results = failures(desired)
    assert failed == []
    assert no_errors(results)
    ids = {r.check for r in results}
    # Every check of the registry ran on this fully specified inventory.
    assert {
        "node.reachable",
        "npu.health",
        "network.lldp",
        "network.tls",
        "network.gateway",
        "sysctl.minimum",
        "firewall.active",
        "files.managed",
        "software.torchvision",
        "cluster.reachability",
        "cluster.compat",
    } <= ids
    # 4 nodes x 8 NPUs x 11 per-NPU network checks (network.counters the 11th), each recorded per NPU.
    assert sum(1 for r in results if r.check.startswith("network.")) == 4 * 8 * 11
    # the A3 super-pod checks (issue 21) do not apply to this atlas-a2 inventory: skipped once each, saying why
    a3_only = {
        "superpod.identity",
        "superpod.vnic",
        "superpod.die_subnets",
        "superpod.rank_table",
        "cluster.sdid",
        "cluster.hccs",
        "superpod.hccl_env",
    }
    assert {(r.check, r.status, r.message) for r in results if r.check in a3_only} == {
        (check, Status.SKIPPED, "atlas-a2 has no HCCS super-pod plane") for check in a3_only
    }
    # the Ascend 950 UB checks do not apply either: skipped once each, saying why
    ub_only = {"ub.link", "ub.lanes", "ub.counters", "ub.ping", "ub.sio", "ub.link_flaps"}
    assert {(r.check, r.status, r.message) for r in results if r.check in ub_only} == {
        (check, Status.SKIPPED, "atlas-a2 has no UB ports (Ascend 950 only)") for check in ub_only
    }
    # nor the 950's factory topology file (rank table 2.0 only)
    (topology,) = [r for r in results if r.check == "job.topology_file"]
    assert topology.status is Status.SKIPPED and "reads no factory topology file" in topology.message
    assert all(r.status is Status.PASSED for r in results if r.check not in a3_only | ub_only | {"job.topology_file"})


def _node2(desired: DesiredState) -> HostFacts:
    return healthy_facts(desired, "node2")


def _conf_with(facts: HostFacts, npu: int, **values: str) -> HccnConf:
    assert facts.hccn_conf is not None
    devices = {k: dict(v) for k, v in facts.hccn_conf.devices.items()}
    devices[npu].update(values)
    return HccnConf(raw="(edited)", devices=devices)


def test_hccn_tool_missing_skips_the_npu_checks_naming_why(desired):
    missing = replace(
        _node2(desired),
        hccn_tool=None,
        npus={},
        errors=(ProbeError("hccn_tool", "missing", "hccn_tool: not installed"),),
    )
    _, results = failures(desired, {"node2": missing})
    skipped = [r for r in results if r.node == "node2" and r.check.startswith("network.")]
    from ascendprep.verify.checks.registry import CHECKS

    per_npu = [c for c in CHECKS if c.scope == "npu" and c.id.startswith("network.")]
    assert len(skipped) == 8 * len(per_npu) and len(per_npu) >= 10
    assert all(r.status is Status.SKIPPED and "node.hccn_tool failed" in r.message for r in skipped)


def test_recent_link_flap_is_a_warning_only(desired):
    flapped = LinkStat(
        NOW,
        up_count=2,
        down_count=1,
        records=(LinkRecord("Wed Jun  7 09:10:00 2023", "UP"), LinkRecord("Wed Jun  7 09:09:58 2023", "DOWN")),
    )
    failed, results = failures(desired, {"node2": with_npu(_node2(desired), 3, link_stat=flapped)})
    assert where(failed) == {("network.link_flaps", "node2", 3)}
    assert failed[0].severity is Severity.WARNING and "1 time in the last 24 h" in failed[0].message
    assert no_errors(results)


@pytest.mark.parametrize(
    "now, when",
    [
        ("Wed Jun  7 10:08:28 " + "2" * 5000, "Wed Jun  7 09:09:58 2023"),  # int() refuses over 4,300 digits
        (NOW, "Wed Jun  \u00b27 09:09:58 2023"),  # a superscript two: isdigit() but not int()
        ("Wed Jun  7 1\u0660:08:28 2023", "Wed Jun  7 09:09:58 2023"),  # an Arabic-Indic zero
    ],
    ids=["5000-digit-year", "superscript-day", "arabic-indic-hour"],
)
def test_a_link_history_time_that_is_not_a_time_counts_the_down_without_crashing(desired, now, when):
    flapped = LinkStat(
        now, up_count=2, down_count=1, records=(LinkRecord("Wed Jun  7 09:10:00 2023", "UP"), LinkRecord(when, "DOWN"))
    )
    failed, results = failures(desired, {"node2": with_npu(_node2(desired), 3, link_stat=flapped)})
    assert where(failed) == {("network.link_flaps", "node2", 3)}
    assert failed[0].severity is Severity.WARNING and "the check itself failed" not in failed[0].message
    assert no_errors(results)


def test_probe_timeout_is_could_not_check_never_a_pass(desired):
    facts = replace(
        _node2(desired),
        errors=(
            ProbeError("hccn.link", "timeout", "hccn_tool -i 3 -link -g timed out after 10s and was killed", npu=3),
        ),
    )
    failed, _ = failures(desired, {"node2": facts})
    assert where(failed) == {("network.link", "node2", 3)}
    assert failed[0].message.startswith(COULD_NOT_CHECK) and "timed out" in failed[0].message


def test_unsupported_probe_skips_with_the_reason(desired):
    facts = replace(
        _node2(desired),
        errors=(
            ProbeError(
                "hccn.optical",
                "unsupported",
                "hccn_tool -i 0 -optical -g: The command is not supported on this product.",
                npu=0,
            ),
        ),
    )
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
    skewed = replace(
        facts,
        versions=replace(
            facts.versions,
            toolkit=VersionFile(
                "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info",
                {"version": "8.1.RC1"},
            ),
        ),
    )
    failed, _ = failures(desired, {"node2": skewed})
    found = where(failed)
    assert ("software.cann", "node2", None) in found
    skew = next(r for r in failed if r.check == "cluster.versions")
    assert skew.message == "node2 has CANN 8.1.RC1, the other 3 have 8.2.RC1"
    assert skew.node == "node2"
    # Anything else is the compatibility verdict on node2's own stack.
    assert all(
        r.check == "cluster.compat" and r.node == "node2"
        for r in failed
        if r.check not in ("software.cann", "cluster.versions", "job.nnal")
    )  # NNAL stays at the old CANN


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
    facts = replace(
        healthy_facts(desired, "node4"),
        firewall=Firewall(
            ufw=FirewallTool(True, True), firewalld=FirewallTool(False), nftables=FirewallTool(True, False)
        ),
    )
    failed, _ = failures(desired, {"node4": facts})
    assert [(r.check, r.node, r.subject, r.severity) for r in failed] == [("firewall.active", "node4", "ufw", severity)]


def test_firewall_leave_is_reported_skipped_once():
    from verify_cluster_facts import INVENTORY

    desired = desired_state(INVENTORY.replace("firewall: check", "firewall: leave"))
    results = [r for r in judge(desired) if r.check == "firewall.active"]
    assert [(r.status, r.node) for r in results] == [(Status.SKIPPED, None)]


def test_cabling_mismatch_names_both_ports(desired):
    moved = with_npu(
        healthy_facts(desired, "node1"), 2, lldp=LldpNeighbor(system_name="leaf-9", port_ifname="200GE1/0/7")
    )
    failed, _ = failures(desired, {"node1": moved})
    assert where(failed) == {("network.lldp", "node1", 2)}
    assert "leaf-9 200GE1/0/7" in failed[0].message and "leaf-3 200GE1/0/1" in failed[0].message


def test_a_check_that_crashes_fails_instead_of_passing(desired, monkeypatch):
    from ascendprep.verify.checks import registry

    broken = next(c for c in registry.CHECKS if c.id == "npu.count")
    monkeypatch.setattr(
        registry, "CHECKS", tuple(replace(c, run=lambda ctx: 1 / 0) if c is broken else c for c in registry.CHECKS)
    )
    failed, _ = failures(desired)
    assert {(r.check, r.node) for r in failed} == {("npu.count", f"node{i}") for i in range(1, 5)}
    assert all("ZeroDivisionError" in r.message for r in failed)


def test_lldp_refused_because_the_link_is_down_is_not_no_neighbour(desired):
    """hccn_tool answered "Link status is down" to -lldp -g: the check says LLDP was not read
    because of the link; a port that is up but hears no LLDP still says "no LLDP neighbour"."""
    down = with_npu(healthy_facts(desired, "node1"), 2, link="DOWN", lldp=None, lldp_link_down=True)
    failed, _ = failures(desired, {"node1": down})
    [lldp] = [r for r in failed if r.check == "network.lldp"]
    assert (lldp.node, lldp.npu) == ("node1", 2)
    assert lldp.message.startswith("LLDP not read: the link is down") and "no LLDP neighbour" not in lldp.message
    assert lldp.evidence["lldp_answer"] == "link down" and "bring the link up first" in lldp.fix
    silent = with_npu(healthy_facts(desired, "node1"), 2, lldp=None)
    [quiet] = [r for r in failures(desired, {"node1": silent})[0] if r.check == "network.lldp"]
    assert quiet.message == "no LLDP neighbour: the link is up but the switch port sends no LLDP"
