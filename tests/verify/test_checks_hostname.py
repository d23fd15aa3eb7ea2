"""node.hostname: a hostname that leads to loopback, another node or nowhere is named, with the fix.

Facts are the healthy cluster's (verify_cluster_facts.py) with node2's hostname resolution
changed the way each real mistake shows up in ``getent ahosts``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Tuple

import pytest
from verify_cluster_facts import INVENTORY, desired_state, healthy_facts, judge

from ascendprep.base.findings import Severity
from ascendprep.desired.state import DesiredState
from ascendprep.facts.model import ProbeError
from ascendprep.verify.checks.model import Status


def _hostname_results(desired: DesiredState, resolves_to: Optional[Tuple[str, ...]], **changes: object):
    facts = replace(healthy_facts(desired, "node2"), hostname_addresses=resolves_to, **changes)
    results = judge(desired, {"node2": facts})
    return {r.node: r for r in results if r.check == "node.hostname"}, results


def test_a_hostname_that_resolves_to_the_node_itself_passes(desired):
    by_node, _ = _hostname_results(desired, ("10.231.0.12",))
    assert {node: r.status for node, r in by_node.items()} == {f"node{i}": Status.PASSED for i in range(1, 5)}
    assert "resolves to 10.231.0.12" in by_node["node2"].message


@pytest.mark.parametrize(
    "resolves_to, said, fix",
    [
        (
            ("127.0.1.1",),
            "resolves to 127.0.1.1 (loopback)",
            "replace the line '127.0.1.1 node2' with '10.231.0.12 node2'",
        ),
        (("::1",), "resolves to ::1 (loopback)", "replace the line '::1 node2' with '10.231.0.12 node2'"),
        ((), "does not resolve on node2", "add the line '10.231.0.12 node2' to /etc/hosts"),
        (
            ("10.231.0.13",),
            "resolves to 10.231.0.13 (node3's address)",
            "add the line '10.231.0.12 node2' to /etc/hosts",
        ),
        (("10.99.0.7",), "resolves to 10.99.0.7, which no interface of node2 holds", "'10.231.0.12 node2'"),
    ],
)
def test_each_bad_mapping_is_named_on_its_node_only_with_the_fix(desired, resolves_to, said, fix):
    by_node, results = _hostname_results(desired, resolves_to)
    failed = [r for r in results if r.failed]
    assert [(r.check, r.node) for r in failed] == [("node.hostname", "node2")], [r.message for r in failed]
    result = by_node["node2"]
    assert said in result.message
    assert fix in result.fix and "/etc/hosts" in result.fix
    # The inventory gives node2 by address, so set_env.sh and the all-reduce bind its NIC: a warning.
    assert result.severity is Severity.WARNING
    assert result.evidence["resolves_to"] == list(resolves_to)
    assert result.evidence["interface"] == "eth0"


def test_a_node_named_by_hostname_is_an_error_since_nothing_binds_its_nic():
    desired = desired_state(INVENTORY.replace("host: 10.231.0.[12-14]", "host: node[2-4].example"))
    facts = replace(healthy_facts(desired, "node2"), hostname_addresses=("127.0.1.1",))
    result = next(r for r in judge(desired, {"node2": facts}) if r.check == "node.hostname" and r.node == "node2")
    assert result.failed and result.severity is Severity.ERROR
    assert "nothing binds this node's interface" in result.message
    assert "map 'node2' to the node's own cluster address" in result.fix


def test_a_failed_lookup_is_could_not_check_and_old_facts_are_skipped(desired):
    error = ProbeError("hostname.resolve", "timeout", "getent ahosts $(uname -n) timed out after 10s and was killed")
    by_node, _ = _hostname_results(desired, None, errors=(error,))
    assert by_node["node2"].failed and "could not check" in by_node["node2"].message
    by_node, _ = _hostname_results(desired, None)
    assert by_node["node2"].status is Status.SKIPPED and "older ascendprep" in by_node["node2"].message
