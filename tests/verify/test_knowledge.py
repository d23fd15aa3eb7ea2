"""The knowledge base (data/diagnose/knowledge.yaml) is well formed and points at real checks."""

from __future__ import annotations

import pytest

from ascendprep.verify.checks.registry import BY_ID
from ascendprep.verify.knowledge import KnowledgeError, knowledge, parse_knowledge

FAMILIES = {"HCCL", "HCCP", "Runtime", "Driver", "torch_npu", "Kernel", "NPU", "CANN"}


def test_every_check_an_entry_names_exists_in_the_registry():
    for entry in knowledge().entries:
        assert all(check in BY_ID for check in entry.checks), entry.key


def test_every_entry_says_cause_fix_and_source_and_the_families_are_covered():
    entries = knowledge().entries
    for entry in entries:
        assert entry.cause and entry.fix and entry.source, entry.key
    assert FAMILIES <= {entry.component for entry in entries}


def test_specific_hardware_and_network_faults_name_the_check_that_catches_them():
    by_key = knowledge().by_key
    assert "network.link_flaps" in by_key["hccl.cqe_error"].checks
    assert "npu.health" in by_key["npu.hbm_ecc"].checks
    assert "network.tls" in by_key["hccl.tls_inconsistent"].checks


def test_a_dangling_edge_or_an_unknown_check_field_is_refused():
    bad_edge = """
schema_version: 1
layers: [cann]
entries:
  - {key: a, title: t, match: [["x"]], component: HCCL, layer: cann, severity: error, cause: c, fix: f,
     checks: [], can_cause: [nowhere], source: s}
"""
    with pytest.raises(KnowledgeError, match="can_cause names no entry: nowhere"):
        parse_knowledge(bad_edge)
    with pytest.raises(KnowledgeError, match="unknown fields"):
        parse_knowledge(bad_edge.replace("source: s}", "source: s, colour: red}"))
    with pytest.raises(KnowledgeError, match="regex does not compile"):
        parse_knowledge(bad_edge.replace("can_cause: [nowhere]", "can_cause: [], regex: '('"))
