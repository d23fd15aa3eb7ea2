"""Plan and verify judge the same facts the same way (issue 11: one judgement per setting).

Each case below is one host's facts with something off (or nothing). The same facts go to the
diff (plan) and to the checks (verify), and per managed item: a change ⇔ a failing verdict on
that item, and an item plan cannot judge ⇔ a verdict that could not check. A rule that lives in
one of the two only (the "at least" semantics, TLS without certificates, the persisted sysctl
file, a firewall's severity) breaks a case here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Dict, Set, Tuple

import pytest
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, healthy_facts, with_npu

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import FirewallTool, HccnConf, HostFacts, ManagedFile, ProbeError, SysctlFile, TlsState
from ascendprep.plan import drift
from ascendprep.plan.diff import diff_host
from ascendprep.verify.checks.model import COULD_NOT_CHECK
from ascendprep.verify.checks.runner import run_checks

NODE = "node2"
ENV = "/etc/ascendprep/env.sh"

#: check id → the item kind it judges (network.hccn_conf judges the file part of three kinds).
_DIRECT = {
    "network.ip": "hccn.ip",
    "network.gateway": "hccn.gateway",
    "network.netdetect": "hccn.netdetect",
    "network.tls": "hccn.tls",
}
_CONF_KEY_KIND = {"address": "hccn.ip", "netmask": "hccn.ip", "gateway": "hccn.gateway", "netdetect": "hccn.netdetect"}


def _conf(facts: HostFacts, npu: int, **values: str | None) -> HostFacts:
    devices = {n: dict(v) for n, v in facts.hccn_conf.devices.items()}
    for key, value in values.items():
        if value is None:
            devices[npu].pop(key, None)
        else:
            devices[npu][key] = value
    return replace(facts, hccn_conf=HccnConf(raw="(edited)", devices=devices))


def _sysctl(facts: HostFacts, **values: str) -> HostFacts:
    return replace(facts, sysctl={**facts.sysctl, **{k.replace("__", "."): v for k, v in values.items()}})


def _error(facts: HostFacts, probe: str, npu: int | None = None) -> HostFacts:
    return replace(facts, errors=(*facts.errors, ProbeError(probe, "timeout", f"{probe} timed out after 10s", npu)))


Case = Callable[[HostFacts], HostFacts]

CASES: Dict[str, Case] = {
    "converged": lambda f: f,
    "device address wrong": lambda f: with_npu(f, 2, ip="10.20.0.99"),
    "device address wrong, in a subnet that drops the gateway": lambda f: with_npu(
        f, 2, ip="10.9.0.5", gateway="10.9.0.254"
    ),
    "hccn.conf holds another address": lambda f: _conf(f, 2, address="10.20.0.98"),
    "hccn.conf missing": lambda f: replace(f, hccn_conf=None),
    "gateway wrong on the device": lambda f: with_npu(f, 1, gateway="10.20.0.1"),
    "gateway not in hccn.conf": lambda f: _conf(f, 1, gateway=None),
    "detect IP missing": lambda f: with_npu(f, 4, netdetect=None),
    "TLS on": lambda f: with_npu(f, 3, tls=TlsState(switch=1, preconfigured=1, certificates=True)),
    "TLS switch on but no certificates": lambda f: with_npu(f, 3, tls=TlsState(switch=None, certificates=False)),
    "somaxconn low": lambda f: _sysctl(f, net__core__somaxconn="4096"),
    "somaxconn higher than wanted (kept, and persisted)": lambda f: _sysctl(f, net__core__somaxconn="131072"),
    "reserved ports lost": lambda f: _sysctl(f, net__ipv4__ip_local_reserved_ports="8080"),
    "sysctl file missing": lambda f: replace(f, sysctl_file=None),
    "sysctl file edited": lambda f: replace(
        f, sysctl_file=SysctlFile(f.sysctl_file.raw + "# tuned by hand\n", dict(f.sysctl_file.values))
    ),
    "env.sh edited": lambda f: replace(f, managed_files={**f.managed_files, ENV: ManagedFile(ENV, True, "0" * 64)}),
    "env.sh missing": lambda f: replace(f, managed_files={**f.managed_files, ENV: ManagedFile(ENV, False)}),
    "ufw active": lambda f: replace(f, firewall=replace(f.firewall, ufw=FirewallTool(installed=True, active=True))),
    "nftables ruleset loaded": lambda f: replace(
        f, firewall=replace(f.firewall, nftables=FirewallTool(installed=True, active=True, detail="table inet filter"))
    ),
    # facts that cannot be judged
    "device address unknown": lambda f: _error(f, "hccn.ip", 2),
    "hccn.conf unreadable": lambda f: _error(replace(f, hccn_conf=None), "hccn_conf"),
    "TLS unknown": lambda f: _error(f, "hccn.tls", 5),
    "somaxconn unknown": lambda f: _error(f, "sysctl:net.core.somaxconn"),
    "env.sh not reported": lambda f: replace(f, managed_files={p: m for p, m in f.managed_files.items() if p != ENV}),
    "env.sh unreadable": lambda f: _error(f, f"file:{ENV}"),
    "ufw state unreadable": lambda f: replace(
        f, firewall=replace(f.firewall, ufw=FirewallTool(installed=True, active=None))
    ),
}


def _desired(policy: str) -> DesiredState:
    return desired_state(INVENTORY.replace("firewall: check", f"firewall: {policy}"))


def _verdicts(desired: DesiredState, facts: HostFacts) -> Tuple[Dict[str, Set[str]], Set[str], Dict[str, Severity]]:
    """(item → how its verdicts failed: "failed"/"could not check", NPUs/host parts with a
    could-not-check anywhere, firewall item → severity of its failure)."""
    hosts, pings = cluster_evidence(desired, {NODE: facts})
    results = [r for r in run_checks(desired, hosts, pings, today=TODAY) if r.node == NODE and r.failed]
    items: Dict[str, Set[str]] = {}
    unknown_places: Set[str] = set()
    severities: Dict[str, Severity] = {}

    def mark(item: str, result) -> None:
        items.setdefault(item, set()).add("could not check" if result.message.startswith(COULD_NOT_CHECK) else "failed")

    for result in results:
        cnc = result.message.startswith(COULD_NOT_CHECK)
        if cnc:
            unknown_places.add(f"npu {result.npu}" if result.npu is not None else "host")
        if result.check in _DIRECT:
            mark(f"{_DIRECT[result.check]}:{result.npu}", result)
        elif result.check == "network.hccn_conf":
            if cnc:
                mark(f"hccn.ip:{result.npu}", result)
            elif result.evidence.get("file") is None:  # no file at all: stale for all the device has
                for kind in set(_CONF_KEY_KIND.values()):
                    mark(f"{kind}:{result.npu}", result)
            else:
                for key, kind in _CONF_KEY_KIND.items():
                    if result.evidence["file"][key] != result.evidence["device"][key]:
                        mark(f"{kind}:{result.npu}", result)
        elif result.check == "sysctl.minimum":
            mark(f"sysctl:{result.subject}", result)
        elif result.check == "sysctl.reserved_ports":
            mark("sysctl:net.ipv4.ip_local_reserved_ports", result)
        elif result.check == "sysctl.persisted":
            mark("file:/etc/sysctl.d/90-ascendprep.conf", result)
        elif result.check == "files.managed":
            mark(f"file:{result.subject}", result)
        elif result.check == "firewall.active":
            mark(f"firewall:{result.subject}", result)
            severities[f"firewall:{result.subject}"] = result.severity
    return items, unknown_places, severities


def _tool(message: str) -> str:
    words = re.findall(r"[a-z]+", message.split(":", 1)[1])
    return next(tool for tool in drift.FIREWALLS if tool in words)


def _place(item: str) -> str:
    return f"npu {item.rsplit(':', 1)[1]}" if item.startswith("hccn.") else "host"


@pytest.mark.parametrize("policy", ["check", "disable"])
@pytest.mark.parametrize("case", list(CASES))
def test_plan_and_verify_agree_item_by_item(case: str, policy: str) -> None:
    desired = _desired(policy)
    _assert_agreement(case, desired, CASES[case](healthy_facts(desired, NODE)))


#: The inventory without its gateway (detect IPs are peers then): a gateway left on a port is one
#: plan removes and verify fails.
NO_GATEWAY = INVENTORY.replace("  gateway: 10.20.0.254\n  detect: gateway\n", "  detect: peer\n")
NO_GATEWAY_CASES: Dict[str, Case] = {
    "converged": lambda f: f,
    "a gateway the plan no longer has, on the device and in hccn.conf": lambda f: _conf(
        with_npu(f, 1, gateway="10.20.0.254", gateway_iface="eth1"), 1, gateway="10.20.0.254"
    ),
    "only hccn.conf still has it": lambda f: _conf(f, 1, gateway="10.20.0.254"),
    "only the device still has it": lambda f: with_npu(f, 1, gateway="10.20.0.254"),
}


@pytest.mark.parametrize("case", list(NO_GATEWAY_CASES))
def test_plan_and_verify_agree_on_a_gateway_the_inventory_dropped(case: str) -> None:
    desired = desired_state(NO_GATEWAY)
    assert all(s.gateway is None for s in desired.nodes[NODE].hccn)
    facts = NO_GATEWAY_CASES[case](healthy_facts(desired, NODE))
    _assert_agreement(case, desired, facts)
    changed = {c.key for c in diff_host(desired, NODE, facts).changes}
    assert changed == (set() if case == "converged" else {"hccn.gateway:1"})


def test_a_gateway_that_cannot_be_read_where_none_is_planned_is_unknown_to_both() -> None:
    """Whether a gateway is left to remove cannot be told: plan is incomplete there, verify could not check."""
    desired = desired_state(NO_GATEWAY)
    facts = _error(healthy_facts(desired, NODE), "hccn.gateway", 1)
    plan = diff_host(desired, NODE, facts)
    assert plan.changes == [] and plan.unknown == {"hccn.gateway:1"}
    assert plan.incomplete == ["npu 1: gateway unknown (hccn.gateway timed out after 10s)"]
    hosts, pings = cluster_evidence(desired, {NODE: facts})
    [verdict] = [
        r
        for r in run_checks(desired, hosts, pings, today=TODAY)
        if r.node == NODE and r.check == "network.gateway" and r.npu == 1
    ]
    assert verdict.failed and verdict.message.startswith(COULD_NOT_CHECK)


def _assert_agreement(case: str, desired: DesiredState, facts: HostFacts) -> None:
    plan = diff_host(desired, NODE, facts)
    verdicts, unknown_places, severities = _verdicts(desired, facts)
    changed = {c.key for c in plan.changes}
    # a firewall plan does not switch off is reported as a finding, or as one that could not check
    firewall_findings = {f"firewall:{_tool(f.message)}": f for f in plan.findings if f.id == "firewall.active"}
    reported = {item for item, f in firewall_findings.items() if "could not check" not in f.message}
    unknown = plan.unknown | {item for item, f in firewall_findings.items() if "could not check" in f.message}

    # a change (or, for a firewall plan only reports, a finding) ⇔ a failed verdict on its item
    for item in changed | reported:
        assert "failed" in verdicts.get(item, set()), f"{case}: plan changes {item}, verify passes it"
    for item, how in verdicts.items():
        if "failed" in how:
            assert item in changed | reported | unknown, (
                f"{case}: verify fails {item}, plan neither changes it nor says it is unknown"
            )
    # an item plan cannot judge ⇔ verify could not check there
    for item in unknown:
        assert _place(item) in unknown_places or "could not check" in verdicts.get(item, set()), (
            f"{case}: plan cannot judge {item}, verify judged it"
        )
    for item, how in verdicts.items():
        if "could not check" in how:
            assert item in unknown, f"{case}: verify could not check {item}, plan judged it"
    # a firewall finding of plan has verify's severity
    for item, finding in firewall_findings.items():
        assert finding.severity is severities[item], f"{case}: {item}"
    if case == "converged":
        assert changed == set() and plan.unknown == set() and verdicts == {}


def test_the_cases_cover_every_kind_of_item() -> None:
    """Guards the table above: each kind of change comes out of some case."""
    kinds = set()
    for policy in ("check", "disable"):
        desired = _desired(policy)
        for make in CASES.values():
            kinds |= {c.kind for c in diff_host(desired, NODE, make(healthy_facts(desired, NODE))).changes}
    assert kinds == {"hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls", "sysctl", "file", "firewall"}


def test_the_hccl_ports_come_from_compat_for_the_inventorys_cann() -> None:
    """CANN 8.2 reserves 16 ports (compat/hccl.py): the reserved ports, the firewall advice of
    plan and of verify all say 60000-60015, none the 32-port block of CANN 8.5+."""
    desired = _desired("check")
    assert desired.hccl_ports == (60000, 60015)
    facts = replace(
        healthy_facts(desired, NODE),
        firewall=replace(healthy_facts(desired, NODE).firewall, ufw=FirewallTool(installed=True, active=True)),
    )
    [finding] = [f for f in diff_host(desired, NODE, facts).findings if f.id == "firewall.active"]
    hosts, pings = cluster_evidence(desired, {NODE: facts})
    [verdict] = [
        r
        for r in run_checks(desired, hosts, pings, today=TODAY)
        if r.node == NODE and r.check == "firewall.active" and r.failed
    ]
    assert "60000-60015" in finding.fix and finding.fix == verdict.fix
    newer = desired_state(INVENTORY.replace("cann: 8.2.RC1", "cann: 8.5.0"))
    assert newer.hccl_ports == (60000, 60031) and "60000-60031" in drift.firewall_fix(newer, "nftables")
