"""The lab's Ascend 950 factory topology files and the faults that take them away (no root)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from ascendprep.facts import jobenv
from ascendprep.inventory.products import TOPO_DIR_950
from ascendprep.lab import topofaults
from ascendprep.lab.sim import topo950
from ascendprep.lab.sim.ub950 import peer_ports
from ascendprep.lab.system import LabError


def test_an_atlas_350_node_gets_the_three_files_of_its_product(tmp_path: Path) -> None:
    topo950.install_topology_files(tmp_path, "atlas-350")
    folder = tmp_path / TOPO_DIR_950.lstrip("/")
    assert sorted(p.name for p in folder.iterdir()) == ["atlas_350_1.json", "atlas_350_2.json", "atlas_350_3.json"]
    for name, cards in (("atlas_350_1.json", 1), ("atlas_350_2.json", 2), ("atlas_350_3.json", 4)):
        doc = json.loads((folder / name).read_text())
        assert doc["version"] == "2.0" and doc["peer_count"] == cards
        assert [p["local_id"] for p in doc["peer_list"]] == list(range(cards))
        assert len(doc["edge_list"]) == cards * (cards - 1) // 2


def test_the_four_card_mesh_names_the_ports_the_simulated_tool_links() -> None:
    doc = topo950.topology_document(4)
    sim = {"devices": [{}] * 4}
    for edge in doc["edge_list"]:
        a, b = edge["local_a"], edge["local_b"]
        assert edge["local_a_ports"] == [f"0/{p}" for p in peer_ports(sim, a, b)]
        assert edge["local_b_ports"] == [f"0/{p}" for p in peer_ports(sim, b, a)]
    used = {
        n: sorted(
            p for e in doc["edge_list"] for end in "ab" if e[f"local_{end}"] == n for p in e[f"local_{end}_ports"]
        )
        for n in range(4)
    }
    assert used == {n: ["0/4", "0/5", "0/6"] for n in range(4)}


def test_an_a2_node_gets_none(tmp_path: Path) -> None:
    topo950.install_topology_files(tmp_path, "atlas-a2")
    assert not (tmp_path / "usr").exists()


def test_the_gathers_probe_reads_the_installed_folder_as_the_check_wants(tmp_path: Path) -> None:
    topo950.install_topology_files(tmp_path, "atlas-350")
    folder = tmp_path / TOPO_DIR_950.lstrip("/")
    script = "set -f\n" + jobenv.topology_function().replace(TOPO_DIR_950, str(folder)) + 'ap_job_topology "$1"\n'
    out = subprocess.run(["sh", "-c", script, "sh", "atlas_350_3.json"], capture_output=True, text=True, check=True)
    topo = jobenv.parse_topology(out.stdout)
    sizes = {f.name: f.size for f in topo.files if f.state == "readable"}
    assert topo.present and set(sizes) == {"atlas_350_1.json", "atlas_350_2.json", "atlas_350_3.json"}
    assert sizes["atlas_350_3.json"] == len((folder / "atlas_350_3.json").read_bytes())


class _Lab:
    def __init__(self, product: str, npus: int) -> None:
        self.spec = SimpleNamespace(product=product)
        self.npus = npus
        self.ops: list[dict] = []

    def node(self, name: str):
        return SimpleNamespace(npus=self.npus)

    def node_op(self, node: str, request: dict) -> dict:
        self.ops.append(request)
        return {}


@pytest.mark.parametrize(
    "kind, npus, left",
    [("topo-missing", 4, None), ("topo-wrong-file", 4, "atlas_350_2.json"), ("topo-wrong-file", 2, "atlas_350_3.json")],
)
def test_the_faults_remove_the_files_and_heal_writes_them_back(kind: str, npus: int, left) -> None:
    lab = _Lab("atlas-350", npus)
    record = {"node": "node1", "kind": kind}
    topofaults.inject(lab, record, rate=None, version=None)  # type: ignore[arg-type]
    removed = sorted(op["path"].rsplit("/", 1)[1] for op in lab.ops if op["op"] == "remove")
    every = ["atlas_350_1.json", "atlas_350_2.json", "atlas_350_3.json"]
    assert removed == [name for name in every if name != left]
    lab.ops.clear()
    topofaults.heal(lab, record)  # type: ignore[arg-type]
    (op,) = lab.ops
    assert op["op"] == "write-tree" and sorted(p.rsplit("/", 1)[1] for p in op["files"]) == removed


def test_the_faults_need_an_ascend_950_lab() -> None:
    with pytest.raises(LabError, match="atlas-350"):
        topofaults.inject(_Lab("atlas-a2", 8), {"node": "node1", "kind": "topo-missing"}, rate=None, version=None)  # type: ignore[arg-type]
