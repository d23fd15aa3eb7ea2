"""``job.topology_file``: the Ascend 950 factory topology file where the job runs. The fault cases
are data (tests/fixtures/checks/job.topology_file/); here: the wording a user reads, the fix for a
container against a bare host, the skip on A2/A3 and the "could not check" cases."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from ascendprep.facts.jobenv_model import JobEnv, TopologyFile, TopologyFolder
from ascendprep.inventory.products import PRODUCTS, TOPO_DIR_950
from ascendprep.verify.checks import jobenv, registry
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.registry import Selection

ONLY = Selection.parse(only=["job.topology_file"])


def _lifted(monkeypatch) -> None:
    lifted = tuple(replace(c, applies=None) if c.id == "job.topology_file" else c for c in registry.CHECKS)
    monkeypatch.setattr(registry, "CHECKS", lifted)


def _judge(verify_cluster, topology, host_visible=True):
    facts = verify_cluster.healthy("node2")
    job = replace(facts.job, topology=topology)
    if not host_visible:
        job = replace(job, host_visible=None)
    results = verify_cluster.judge({"node2": replace(facts, job=job)}, selection=ONLY)
    (result,) = [r for r in results if r.check == "job.topology_file" and r.node == "node2"]
    return result


def test_on_an_a2_inventory_it_is_skipped_once_saying_why(verify_cluster) -> None:
    results = [r for r in verify_cluster.judge(selection=ONLY) if r.check == "job.topology_file"]
    assert len(results) == 1 and results[0].status is Status.SKIPPED
    assert results[0].message == (
        "atlas-a2 uses rank table 1.0/1.2, which reads no factory topology file (Ascend 950 only)"
    )


def test_a_container_without_the_topo_folder_is_told_to_mount_the_whole_driver(verify_cluster, monkeypatch) -> None:
    _lifted(monkeypatch)
    result = _judge(verify_cluster, TopologyFolder(TOPO_DIR_950, False, "atlas_350_3.json"))
    assert result.failed and result.severity.value == "error"
    assert result.message.startswith(f"{TOPO_DIR_950} is not there where the job runs (docker exec trainer)")
    assert "EI0014" in result.message
    assert "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in result.fix
    assert f"{TOPO_DIR_950}/atlas_350_3.json" in result.fix


def test_on_the_host_itself_the_fix_is_the_driver_package(verify_cluster, monkeypatch) -> None:
    _lifted(monkeypatch)
    topo = TopologyFolder(TOPO_DIR_950, True, "atlas_350_3.json", (TopologyFile("atlas_350_2.json", "readable", 9),))
    result = _judge(verify_cluster, topo, host_visible=False)
    assert result.failed and "holds only atlas_350_2.json" in result.message and "(the host)" in result.message
    assert "reinstall the driver" in result.fix


def test_the_readable_file_passes_with_its_size(verify_cluster, monkeypatch) -> None:
    _lifted(monkeypatch)
    topo = TopologyFolder(TOPO_DIR_950, True, "atlas_350_2.json", (TopologyFile("atlas_350_2.json", "readable", 1894),))
    result = _judge(verify_cluster, topo)
    assert result.status is Status.PASSED and "(1894 bytes)" in result.message


def _ctx(topology, product="atlas-350"):
    desired = SimpleNamespace(inventory=SimpleNamespace(product=PRODUCTS[product]))
    return SimpleNamespace(desired=desired, facts=SimpleNamespace(job=JobEnv(topology=topology)))


@pytest.mark.parametrize(
    "topology, words",
    [
        (None, "was not read"),
        (TopologyFolder(TOPO_DIR_950, True, None), "set npus on the node to 1, 2 or 4"),
    ],
)
def test_on_a_950_inventory_what_was_not_read_is_could_not_check(topology, words) -> None:
    verdict = jobenv.topology_file(_ctx(topology))  # type: ignore[arg-type]
    assert verdict.status is Status.FAILED and verdict.message.startswith(COULD_NOT_CHECK)
    assert words in verdict.message
