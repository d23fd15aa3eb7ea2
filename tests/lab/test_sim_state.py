"""State dir lifecycle, cabling, validation and concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascendprep.lab.sim import state


def small_lab(tmp_path, nodes=("node1",), npus=8, product="atlas-a2"):
    cabling = state.default_cabling(product, list(nodes), npus)
    return {
        "name": "lab",
        "product": product,
        "state_dir": str(tmp_path),
        "nodes": [{"name": n, "mgmt_ip": "10.231.0.11", "npus": npus, "cabling": cabling[n]} for n in nodes],
    }


def test_default_cabling_is_rail_optimised():
    cabling = state.default_cabling("atlas-a2", ["node1", "node2"], 8)
    assert cabling["node1"]["0"] == {"switch": "leaf-1", "port": "200GE1/0/1"}
    assert cabling["node2"]["0"] == {"switch": "leaf-1", "port": "200GE1/0/2"}
    assert cabling["node2"]["7"] == {"switch": "leaf-8", "port": "200GE1/0/2"}


def test_default_cabling_atlas800_follows_four_planes():
    cabling = state.default_cabling("atlas-800", ["a", "b"], 8)
    assert cabling["a"]["0"]["switch"] == cabling["a"]["4"]["switch"] == "leaf-1"
    assert cabling["a"]["3"]["switch"] == "leaf-4"
    ports = {p["switch"] + p["port"] for node in cabling.values() for p in node.values()}
    assert len(ports) == 16  # no two NPU ports share a switch port
    assert cabling["a"]["0"]["port"].startswith("100GE")


def test_default_cabling_rejects_bad_counts():
    with pytest.raises(ValueError, match="npus=9 is not valid for atlas-a2"):
        state.default_cabling("atlas-a2", ["n"], 9)
    with pytest.raises(ValueError, match="unknown product"):
        state.default_cabling("atlas-b9", ["n"], 8)


def test_init_state_creates_fresh_devices(tmp_path):
    lab = small_lab(tmp_path)
    state.init_state(tmp_path, lab)
    assert json.loads((tmp_path / "lab.json").read_text()) == lab
    doc = state.read_node(tmp_path, "node1")
    device = doc["devices"][3]
    assert (device["ip"], device["gateway"], device["netdetect"], device["tls_enable"]) == (None, None, None, 0)
    assert state.link_is_up(doc, 3)
    assert device["lldp"] == {"switch": "leaf-4", "port": "200GE1/0/1"}
    assert doc["faults"] == []


def test_init_state_keeps_existing_unless_reset(tmp_path):
    lab = small_lab(tmp_path)
    state.init_state(tmp_path, lab)
    with state.edit_node(tmp_path, "node1") as doc:
        doc["devices"][0]["ip"] = "10.0.0.1"
    state.init_state(tmp_path, lab)
    assert state.read_node(tmp_path, "node1")["devices"][0]["ip"] == "10.0.0.1"
    state.init_state(tmp_path, lab, reset=True)
    assert state.read_node(tmp_path, "node1")["devices"][0]["ip"] is None


def test_init_state_refuses_changed_node_shape_without_reset(tmp_path):
    state.init_state(tmp_path, small_lab(tmp_path))
    with pytest.raises(state.LabStateError, match="reset=True"):
        state.init_state(tmp_path, small_lab(tmp_path, npus=4))
    state.init_state(tmp_path, small_lab(tmp_path, npus=4), reset=True)
    assert len(state.read_node(tmp_path, "node1")["devices"]) == 4


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda lab: lab.update(product="atlas-x"), "lab.product"),
        (lambda lab: lab.update(nodes=[]), "non-empty list"),
        (lambda lab: lab["nodes"][0].update(name="../evil"), "node name"),
        (lambda lab: lab["nodes"].append(dict(lab["nodes"][0])), "duplicate node name"),
        (lambda lab: lab["nodes"][0].update(npus=0), r"lab.nodes\[0\]: npus=0"),
        (lambda lab: lab["nodes"][0]["cabling"].update({"9": {"switch": "s", "port": "p"}}), "cabling"),
    ],
)
def test_validate_lab_names_the_problem(tmp_path, mutate, message):
    lab = small_lab(tmp_path)
    mutate(lab)
    with pytest.raises(state.LabStateError, match=message):
        state.init_state(tmp_path, lab)


def test_edit_node_writes_nothing_on_error(tmp_path):
    state.init_state(tmp_path, small_lab(tmp_path))
    with pytest.raises(RuntimeError):
        with state.edit_node(tmp_path, "node1") as doc:
            doc["devices"][0]["ip"] = "10.0.0.1"
            raise RuntimeError("abort")
    assert state.read_node(tmp_path, "node1")["devices"][0]["ip"] is None


def test_parallel_sets_on_one_node_lose_nothing(lab):
    """Eight hccn_tool processes configuring one node at once (as a parallel apply script does)."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-S",
                "-m",
                "ascendprep.lab.sim.hccn_tool",
                "-i",
                str(devid),
                "-ip",
                "-s",
                "address",
                f"10.20.0.{10 + devid}",
                "netmask",
                "255.255.255.0",
            ],
            env=lab.env("node1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for devid in range(8)
    ]
    assert [p.wait(timeout=30) for p in procs] == [0] * 8
    for proc in procs:
        proc.stdout.close()
        proc.stderr.close()
    ips = [device["ip"] for device in lab.doc("node1")["devices"]]
    assert ips == [f"10.20.0.{10 + devid}" for devid in range(8)]
    conf = lab.conf("node1")
    assert sorted(line for line in conf.splitlines() if line.startswith("address_")) == sorted(
        f"address_{devid}=10.20.0.{10 + devid}" for devid in range(8)
    )


def test_tool_without_identity_fails_cleanly(lab, tmp_path):
    env = lab.env("node1") | {"ASCENDPREP_LAB_NODE_FILE": str(tmp_path / "missing.json")}
    result = subprocess.run(
        [sys.executable, "-S", "-m", "ascendprep.lab.sim.hccn_tool", "-i", "0", "-ip", "-g"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 1
    assert "missing.json: not found" in result.stderr and "Traceback" not in result.stderr
