"""plan → apply → verify on a mixed-generation lab: node2 speaks the legacy driver, the others the current one.

The legacy node prints nothing for an unset ``-ip -g``, ``[device N]`` link_stat lines without a
down count, the old ``-tls -g`` layout, LLDP without a System Name, and refuses ``-speed``;
the whole pipeline must still configure it and verify it clean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from labsupport import start_test_lab, verify_json

from ascendprep.facts.gather import parse_gather_output
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.bundle import read_bundle
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def mixed_lab() -> Iterator[Lab]:
    lab = start_test_lab(
        nodes=3, product="atlas-a2", suffix="mixeddrv", npus=4, node_driver_profiles=(("node2", "legacy"),)
    )
    try:
        yield lab
    finally:
        lab.down()


def _verify(lab: Lab, workdir: Path) -> tuple[int, Dict[str, Any]]:
    return verify_json(lab, workdir)


def test_plan_apply_verify_passes_on_mixed_driver_generations(mixed_lab: Lab, tmp_path: Path) -> None:
    assert [(n.name, n.driver_profile) for n in mixed_lab.spec.node_list()] == [
        ("node1", "current"),
        ("node2", "legacy"),
        ("node3", "current"),
    ]
    plan = tmp_path / "plan.json"
    assert run_plan(mixed_lab.inventory_path, plan, "text", False, False, None) == 0
    changes = {host["node"]: host["changes"] for host in json.loads(plan.read_text())["hosts"]}
    # the legacy node's empty `-ip -g` read as "no IP": its addresses are planned like the others'
    assert len(changes["node2"]) == len(changes["node1"]) > 0
    assert run_apply(plan, False, None) == 0

    code, doc = _verify(mixed_lab, tmp_path)
    errors = [c["message"] for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "error"]
    assert code == 0 and errors == []
    warnings = {c["check"] for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "warning"}
    assert warnings <= {"cluster.compat"}
    # every per-NPU network check ran (passed) on the legacy node too
    legacy_network = [c for c in doc["checks"] if c["node"] == "node2" and c["check"].startswith("network.")]
    assert {
        c["status"]
        for c in legacy_network
        if c["check"] in ("network.ip", "network.tls", "network.lldp", "network.link_flaps")
    } == {"passed"}
    # the legacy driver's short -stat -g form: its two RoCE error counters sampled and judged (issue 20)
    (counters,) = [c for c in legacy_network if (c["check"], c["npu"]) == ("network.counters", 0)]
    assert counters["status"] == "passed" and counters["evidence"]["form"].startswith("short")
    assert set(counters["evidence"]["rates_per_s"]) == {"npu_chip_roce_rx_err_pkt_num", "npu_chip_roce_tx_err_pkt_num"}

    saved = read_bundle(tmp_path / doc["bundle"])  # the raw transcripts, gzip'd (facts.json only where a check failed)
    facts = {node: parse_gather_output(saved.hosts[node].gather_stdout).to_dict() for node in ("node1", "node2")}
    old, new = facts["node2"]["npus"]["0"], facts["node1"]["npus"]["0"]
    assert (old["link_stat"]["down_count"], new["link_stat"]["down_count"]) == (None, 0)
    assert (old["tls"]["preconfigured"], new["tls"]["preconfigured"]) == (None, 1)
    assert old["lldp"]["system_name"] is None and new["lldp"]["system_name"] == "leaf-1"
    assert old["speed_mbps"] is None and new["speed_mbps"] == 200000
    kinds = {(e["probe"], e["kind"]) for e in facts["node2"]["errors"]}
    assert kinds == {("hccn.speed", "unsupported"), ("hccn.duplex", "unsupported")}
    assert facts["node1"]["errors"] == []


def test_no_lldp_neighbour_on_the_legacy_node_names_the_switch_side_fix(mixed_lab: Lab, tmp_path: Path) -> None:
    """The old driver answers `Command execute failed!`: verify says "no LLDP neighbour", not "could not check"."""
    with fault_injected(mixed_lab, "node2", "lldp-empty", npu=1):
        code, doc = _verify(mixed_lab, tmp_path)
    failed = [
        (c["check"], c["node"], c["npu"]) for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "error"
    ]
    assert code == 1 and failed == [("network.lldp", "node2", 1)]
    (lldp,) = [c for c in doc["checks"] if (c["check"], c["node"], c["npu"]) == ("network.lldp", "node2", 1)]
    assert lldp["message"] == "no LLDP neighbour: the link is up but the switch port sends no LLDP"
    assert lldp["fix"].startswith("enable LLDP on the switch port")


def test_npu_smi_failure_is_reported_on_its_own_and_the_ports_still_checked(mixed_lab: Lab, tmp_path: Path) -> None:
    with fault_injected(mixed_lab, "node3", "npu-smi-dcmi"):
        code, doc = _verify(mixed_lab, tmp_path)
    failed = {
        (c["check"], c["node"], c["npu"]) for c in doc["checks"] if c["status"] == "failed" and c["severity"] == "error"
    }
    assert code == 1
    # npu.busy cannot read npu-smi's process table either: could not check, never a pass (issue 17).
    assert failed == {("npu.count", "node3", None)} | {
        (check, "node3", npu) for check in ("npu.health", "npu.busy") for npu in range(4)
    }
    assert all(
        c["message"].startswith("could not check: npu-smi info failed: dcmi")
        for c in doc["checks"]
        if (c["check"], c["node"]) == ("npu.busy", "node3")
    )
    (count,) = [c for c in doc["checks"] if (c["check"], c["node"]) == ("npu.count", "node3")]
    assert count["message"] == (
        "could not check: npu-smi info -l failed: dcmi model initialized failed, because the device is used. ret is -8020 "
        "(the NPUs are held by another container or process (DCMI is exclusive))"
    )
    node3_ports = [
        c
        for c in doc["checks"]
        if c["node"] == "node3" and c["check"] in ("network.ip", "network.link", "network.lldp")
    ]
    assert len(node3_ports) == 3 * 4 and {c["status"] for c in node3_ports} == {"passed"}
