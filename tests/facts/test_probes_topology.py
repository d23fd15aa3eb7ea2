"""The ``job.topology`` probe: the 950 driver's factory topology folder, read by the gather's own
shell function on a real directory, and its parser's refusals."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ascendprep.facts import jobenv
from ascendprep.facts.gather import render_gather_script
from ascendprep.facts.jobenv_model import TopologyFile
from ascendprep.inventory.products import TOPO_DIR_950


def _run(folder: Path, wanted: str) -> str:
    function = jobenv.topology_function().replace(TOPO_DIR_950, str(folder))
    script = "set -f\n" + function + 'ap_job_topology "$1"\n'
    return subprocess.run(["sh", "-c", script, "sh", wanted], capture_output=True, text=True, check=True).stdout


def test_the_function_lists_each_json_file_with_its_state_and_size(tmp_path: Path) -> None:
    folder = tmp_path / "topo" / "950"
    folder.mkdir(parents=True)
    (folder / "atlas_350_3.json").write_text('{"version": "2.0"}')
    (folder / "atlas_350_2.json").write_text("")
    (folder / "atlas_350_1.json").mkdir()
    (folder / "atlas_850_1.json").symlink_to(tmp_path / "gone.json")
    (folder / "README").write_text("not a topology file")
    topo = jobenv.parse_topology(_run(folder, "atlas_350_3.json"))
    assert topo.present and topo.folder == str(folder) and topo.wanted == "atlas_350_3.json"
    assert set(topo.files) == {
        TopologyFile("atlas_350_3.json", "readable", 18),
        TopologyFile("atlas_350_2.json", "readable", 0),
        TopologyFile("atlas_350_1.json", "not_a_file", None),
        TopologyFile("atlas_850_1.json", "not_a_file", None),
    }


def test_a_folder_that_is_not_there_is_said_so(tmp_path: Path) -> None:
    topo = jobenv.parse_topology(_run(tmp_path / "driver" / "topo" / "950", "atlas_350_2.json"))
    assert not topo.present and topo.files == () and topo.wanted == "atlas_350_2.json"


def test_the_parser_refuses_output_without_the_folder_line_and_ignores_a_bad_wanted_name() -> None:
    with pytest.raises(ValueError, match="folder"):
        jobenv.parse_topology("want atlas_350_3.json\nfile readable 10 atlas_350_3.json\n")
    topo = jobenv.parse_topology("want ../../etc/passwd\nfolder present /x\nfile readable 12x a.json\n")
    assert topo.wanted is None and topo.files == (TopologyFile("a.json", "readable", None),)
    many = "folder present /x\n" + "".join(f"file readable 1 f{i}.json\n" for i in range(65))
    with pytest.raises(ValueError, match="more than 64"):
        jobenv.parse_topology(many)


def test_only_a_950_script_reads_the_folder_with_the_products_file_quoted() -> None:
    a950 = render_gather_script(4, "/usr/bin/python3", generation="950", topology_file="atlas_350_3.json")
    assert "ap_run job.topology '' ap_job_topology atlas_350_3.json" in a950
    a2 = render_gather_script(8, "/usr/bin/python3")
    assert "ap_run job.topology" not in a2
    with pytest.raises(ValueError, match="atlas_350_3.json"):
        render_gather_script(4, "/usr/bin/python3", generation="950", topology_file="x.json; rm -rf /")
