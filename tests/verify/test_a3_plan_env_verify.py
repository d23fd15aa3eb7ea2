"""verify's superpod.hccl_env on an A3 cluster of 2 pods x 2 servers built as facts: agreeing settings
pass; a node that disagrees, a rule HCCL breaks on, and a logical pod that joins physical pods fail,
naming the nodes; other products skip it once."""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional

import pytest
import yaml
from verify_cluster_facts import TODAY, cluster_evidence, desired_state, healthy_facts

from ascendprep.facts.jobenv_model import ShellEnv
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

A3_INVENTORY = yaml.safe_dump(
    {
        "name": "a3",
        "product": "atlas-a3",
        "device_network": {"subnets": ["10.30.0.0/24", "10.31.0.0/24"], "tls": False},
        "nodes": [
            {"name": "p0s[1-2]", "host": "10.231.0.[11-12]", "super_pod": 0},
            {"name": "p1s[1-2]", "host": "10.231.0.[13-14]", "super_pod": 1},
        ],
        "env": {"HCCL_OP_RETRY_ENABLE": "L1:1,L2:1", "HCCL_OP_EXPANSION_MODE": "AI_CPU"},
    },
    sort_keys=False,
)

GOOD = {
    "HCCL_CONNECT_TIMEOUT": "1200",
    "RANK_TABLE_FILE": None,
    "HCCL_INTER_HCCS_DISABLE": None,
    "HCCL_LOGIC_SUPERPOD_ID": None,
    "HCCL_OP_RETRY_ENABLE": "L1:1,L2:1",
    "HCCL_OP_EXPANSION_MODE": "AI_CPU",
    "HCCL_INTRA_PCIE_ENABLE": None,
}


@pytest.fixture(scope="module")
def desired():
    return desired_state(A3_INVENTORY)


def results(desired, changes: Dict[str, Dict[str, Optional[str]]]):
    facts = {}
    for node in desired.inventory.nodes:
        base = healthy_facts(desired, node.name)
        launch = ShellEnv({**GOOD, **changes.get(node.name, {})}, sourced="/etc/ascendprep/set_env.sh")
        facts[node.name] = replace(base, job=replace(base.job, launch=launch))
    hosts, plan = cluster_evidence(desired, facts)
    return [
        r
        for r in run_checks(desired, hosts, plan, Selection.parse(only=["superpod.hccl_env"]), today=TODAY)
        if r.check == "superpod.hccl_env"
    ]


def test_agreeing_settings_pass(desired) -> None:
    (result,) = results(desired, {})
    assert result.status is Status.PASSED and "agree on 4 node(s)" in result.message


def test_a_node_that_disagrees_is_named(desired) -> None:
    (result,) = results(desired, {"p1s2": {"HCCL_OP_RETRY_ENABLE": "L1:0,L2:0"}})
    assert result.failed and result.subject == "HCCL_OP_RETRY_ENABLE"
    assert "'L1:1,L2:1' on p0s1, p0s2, p1s1; 'L1:0,L2:0' on p1s2" in result.message
    assert result.node == "p1s2"


def test_intra_pcie_on_a3_fails(desired) -> None:
    failed = [r for r in results(desired, {"p0s1": {"HCCL_INTRA_PCIE_ENABLE": "1"}}) if r.failed]
    assert any(
        "HCCL_INTRA_PCIE_ENABLE: is not supported on Atlas A3" in r.message and r.node == "p0s1" for r in failed
    ), failed


def test_retry_without_ai_cpu_everywhere_fails_once(desired) -> None:
    everywhere = {node.name: {"HCCL_OP_EXPANSION_MODE": "AIV"} for node in desired.inventory.nodes}
    failed = [r for r in results(desired, everywhere) if r.failed]
    assert len(failed) == 1 and "works only with HCCL_OP_EXPANSION_MODE=AI_CPU" in failed[0].message
    assert "p0s1, p0s2, p1s1, p1s2" in failed[0].message


def test_a_logical_pod_joining_physical_pods_fails(desired) -> None:
    changes = {"p0s2": {"HCCL_LOGIC_SUPERPOD_ID": "lp"}, "p1s1": {"HCCL_LOGIC_SUPERPOD_ID": "lp"}}
    failed = [r for r in results(desired, changes) if r.failed]
    assert any(
        "joins servers of 2 physical super-pods (physical pod 0: p0s2; physical pod 1: p1s1)" in r.message
        for r in failed
    ), failed


def test_logical_pods_inside_one_physical_pod_pass(desired) -> None:
    changes = {
        "p0s1": {"HCCL_LOGIC_SUPERPOD_ID": "lp-a"},
        "p0s2": {"HCCL_LOGIC_SUPERPOD_ID": "lp-a"},
        "p1s1": {"HCCL_LOGIC_SUPERPOD_ID": "lp-b"},
    }
    (result,) = results(desired, changes)
    assert result.status is Status.PASSED


def test_not_read_is_skipped_not_passed(desired) -> None:
    facts = {node.name: healthy_facts(desired, node.name) for node in desired.inventory.nodes}
    hosts, plan = cluster_evidence(desired, facts)
    (result,) = [
        r
        for r in run_checks(desired, hosts, plan, Selection.parse(only=["superpod.hccl_env"]), today=TODAY)
        if r.check == "superpod.hccl_env"
    ]
    assert result.status is Status.SKIPPED and "not read" in result.message


def test_other_products_skip_it() -> None:
    desired = desired_state()
    hosts, plan = cluster_evidence(desired)
    (result,) = [
        r
        for r in run_checks(desired, hosts, plan, Selection.parse(only=["superpod.hccl_env"]), today=TODAY)
        if r.check == "superpod.hccl_env"
    ]
    assert result.status is Status.SKIPPED and result.message == "atlas-a2 has no HCCS super-pod plane"
