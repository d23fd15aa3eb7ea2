"""collect on the virtual cluster: a lab job fails, collect fetches every node's logs and NPU state,
and the bundle holds the fault's lines on the right node, the NPU state that agrees with them,
and names a node that could not be read."""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest
from click.testing import CliRunner
from labsupport import start_test_lab

from ascendprep.commands.collect import collect_command
from ascendprep.lab.job import run_job
from ascendprep.lab.lab import Lab

pytestmark = pytest.mark.lab

IN_NODE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def collect_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=3, product="atlas-a2", suffix="collect", npus=4)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture
def healed(collect_lab: Lab) -> Iterator[Lab]:
    yield collect_lab
    collect_lab.heal()
    for node in collect_lab.nodes:  # the next test's job starts with no logs of this one
        collect_lab.run_in_node(node.name, ["rm", "-rf", "/root/ascend/log", "/root/jobs"])


def collect(lab: Lab, out: Path, job: Dict[str, Any], *extra: str) -> Tuple[int, str, Dict[str, Any]]:
    outcome = CliRunner().invoke(
        collect_command,
        [str(lab.inventory_path), "--out", str(out), "--console", job["console_glob"], *extra],
    )
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.output
    manifest = json.loads((out / "manifest.json").read_text())
    return outcome.exit_code, outcome.output, manifest


def node_text(out: Path, node: str, folder: str) -> str:
    return "".join(p.read_text() for p in sorted((out / "nodes" / node / folder).rglob("*")) if p.is_file())


def test_a_port_down_job_is_collected_with_its_cqe_lines_and_the_link_down_state(healed: Lab, tmp_path: Path):
    job = run_job(healed, "portdown", ["port-down:node2:1"])
    fault = job["faults"][0]
    code, output, manifest = collect(healed, tmp_path / "run", job)
    assert code == 0, output
    assert manifest["kind"] == "ascendprep-collect" and set(manifest["nodes"]) == {"node1", "node2", "node3"}
    assert all(entry["status"] == "ok" for entry in manifest["nodes"].values())
    plogs = node_text(tmp_path / "run", "node2", "plog")
    assert f"rank[{fault['rank']}], server[" in plogs and f"deviceIp[{fault['device_ip']}]" in plogs
    assert "event_id=0x81078603" in node_text(tmp_path / "run", "node2", "device")
    assert f"(PID:{fault['pid']}, Device:1, RankID:{fault['rank']}) ERR02200" in node_text(
        tmp_path / "run", "node2", "console"
    )
    for node in ("node1", "node3"):  # the ring neighbours name node2's NPU 1 as their CQE peer
        assert f"remoteIP:[{fault['device_ip']}]" in node_text(tmp_path / "run", node, "plog")
    state = json.loads((tmp_path / "run" / "nodes" / "node2" / "state.json").read_text())
    npus = {str(k): v for k, v in state["npus"].items()}
    assert npus["1"]["link"].upper() == "DOWN" and npus["0"]["link"].upper() == "UP"
    kinds = {f["kind"] for f in manifest["nodes"]["node2"]["files"]}
    assert {"state", "plog", "device", "console"} <= kinds


def test_an_unreachable_node_is_named_and_the_others_still_collected(healed: Lab, tmp_path: Path):
    job = run_job(healed, "killed", ["rank-killed:node1:2"])
    healed.fault("node3", "sshd-down")
    code, output, manifest = collect(healed, tmp_path / "run", job)
    assert code == 1
    assert manifest["nodes"]["node3"]["status"] == "failed" and manifest["nodes"]["node3"]["error"]
    assert "node3" in output and "failed" in output
    for node in ("node1", "node2"):
        assert manifest["nodes"][node]["status"] == "ok"
    # the killed rank (node1 NPU 2) left no error; its successor names it as the rank it waited on
    assert "remote rank:[2]" in node_text(tmp_path / "run", "node1", "plog")


def test_collect_local_inside_a_node_as_a_slurm_epilog_would(healed: Lab):
    job = run_job(healed, "oom", ["npu-oom:node2:3"])
    shared = Path(tempfile.mkdtemp(dir=healed.shared_dir))
    out = shared / "node2"
    python = healed.python
    command = (
        f"PYTHONPATH={shlex.quote(str(python.package_root))} {shlex.quote(python.executable)} -m ascendprep collect "
        f"{shlex.quote(str(healed.inventory_path))} --local --out {shlex.quote(str(out))} "
        f"--console {shlex.quote(job['console_glob'])}"
    )
    done = healed.ssh("node2", command, timeout=IN_NODE_TIMEOUT_S)
    assert done.returncode == 0, done.stderr + done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["nodes"]) == ["node2"]
    assert "EL0004: Failed to allocate memory." in node_text(out, "node2", "plog")
    assert "NPU out of memory" in node_text(out, "node2", "console")


#: Per lab job fault: the line the faulty rank's own files hold (plog, device or console).
OWN_LINE = {
    "port-down": ("device", "event_id=0x81078603"),
    "port-taken": ("plog", "is already bound"),
    "wrong-if-ip": ("plog", "is not found in the nic list"),
    "tls-mismatch": ("plog", "tlsStatus are inconsistent"),
    "stale-ranktable": ("plog", "[check][ip]fail"),
    "hbm-ecc": ("device", "Event id=0x80e01801"),
    "npu-oom": ("console", "NPU out of memory"),
}


@pytest.mark.parametrize(
    "faults",
    [[f"{kind}:node{1 + i % 3}:{i % 4}"] for i, kind in enumerate(OWN_LINE)]
    + [["port-down:node1:0", "hbm-ecc:node3:2"], ["port-taken:node2:1", "wrong-if-ip:node3:3"]],
    ids=lambda faults: "+".join(f.split(":")[0] for f in faults),
)
def test_each_fault_lands_on_its_node_and_no_other(healed: Lab, tmp_path: Path, faults):
    job = run_job(healed, "each", faults)
    code, output, manifest = collect(healed, tmp_path / "run", job)
    assert code == 0, output
    for fault in job["faults"]:
        folder, line = OWN_LINE[fault["kind"]]
        assert line in node_text(tmp_path / "run", fault["node"], folder)
        others = {"node1", "node2", "node3"} - {f["node"] for f in job["faults"] if f["kind"] == fault["kind"]}
        assert all(line not in node_text(tmp_path / "run", node, folder) for node in others)
        console = node_text(tmp_path / "run", fault["node"], "console")
        assert f"rank {fault['rank']} of 12 starting on {fault['node']}" in console
