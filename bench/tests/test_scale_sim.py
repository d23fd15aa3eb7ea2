"""The scale benchmark's simulated hosts (bench/scale_sim.py) must make the controller do the
work a real healthy atlas-a2 node makes it do: their transcripts parse into the facts the lab's
own transcript gives, with each host's own addresses, and the real diff and checks accept them."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import scale_sim  # noqa: E402

from ascendprep.desired.state import build_desired  # noqa: E402
from ascendprep.facts.gather import parse_gather_output, render_gather_script  # noqa: E402
from ascendprep.facts.ping import parse_ping_output, render_ping_script  # noqa: E402
from ascendprep.facts.units import UNITS  # noqa: E402
from ascendprep.inventory.load import inventory_from_text, load_inventory  # noqa: E402
from ascendprep.plan.diff import diff_host  # noqa: E402

PYTHON = "/root/.pyenv/versions/3.11.7/bin/python3"


def _capture_desired():
    capture = scale_sim.json.loads((scale_sim.DATA / "capture.json").read_text())
    return build_desired(inventory_from_text(yaml.safe_dump(capture["inventory"]), base_dir=scale_sim.DATA))


@pytest.fixture(scope="module")
def scale_desired(tmp_path_factory):
    return build_desired(load_inventory(scale_sim.write_scale_inventory(tmp_path_factory.mktemp("scale"), 300)))


@pytest.mark.parametrize("state", [scale_sim.FRESH, scale_sim.CONVERGED])
def test_the_recorded_node_replayed_gives_exactly_the_labs_facts(state):
    fleet = scale_sim.SimulatedFleet(_capture_desired(), state, host_prefix=24)
    recorded = parse_gather_output((scale_sim.DATA / f"a2-{state}.gather.txt").read_text())
    replayed = parse_gather_output(fleet.transcript("node1", render_gather_script(8, PYTHON)))
    assert replayed.errors == ()
    assert replayed.to_dict() == recorded.to_dict()
    assert len(replayed.npus) == 8 and replayed.hostname == "node1"


def test_another_host_gets_its_own_values_and_is_converged(scale_desired):
    fleet = scale_sim.SimulatedFleet(scale_desired, scale_sim.CONVERGED)
    recorded = parse_gather_output((scale_sim.DATA / "a2-converged.gather.txt").read_text())
    transcript = fleet.transcript("node0257", render_gather_script(8, PYTHON))
    facts = parse_gather_output(transcript)
    planned = scale_desired.nodes["node0257"]
    # env.sh of a 300-node fleet raises HCCL_CONNECT_TIMEOUT to 300 + 5 x 300 s: its login shell says so
    assert "ascendprep-env\tHCCL_CONNECT_TIMEOUT\t1\t1800\n" in transcript
    assert facts.errors == ()
    assert facts.hostname == "node0257"
    assert [(n.ip, n.netdetect) for n in facts.npus.values()] == [(p.ip, p.netdetect) for p in planned.hccn]
    # Everything not per host is the lab's: the same link, optics, counters, firmware...
    per_host = ("ip", "netdetect", "netmask")
    for devid, npu in facts.npus.items():
        mine = {k: v for k, v in dataclasses.asdict(npu).items() if k not in per_host}
        lab = {k: v for k, v in dataclasses.asdict(recorded.npus[devid]).items() if k not in per_host}
        assert mine == lab and len(mine) > 10
    assert facts.versions == recorded.versions and facts.sysctl == recorded.sysctl
    assert diff_host(scale_desired, "node0257", facts).changes == []


def test_a_fresh_host_has_every_setting_pending(scale_desired):
    fleet = scale_sim.SimulatedFleet(scale_desired, scale_sim.FRESH)
    facts = parse_gather_output(fleet.transcript("node0002", render_gather_script(8, PYTHON)))
    assert facts.errors == ()
    changes = diff_host(scale_desired, "node0002", facts).changes
    assert len(changes) >= 8  # at least one per NPU (its address), plus sysctl and files


def test_only_the_sections_the_script_runs_come_back(scale_desired):
    fleet = scale_sim.SimulatedFleet(scale_desired, scale_sim.CONVERGED)
    fewer = [u for u in UNITS if not u.section.startswith("hccn.optical")]
    text = fleet.transcript("node0001", render_gather_script(8, PYTHON, units=fewer))
    assert "begin hccn.optical" not in text and "begin hccn.ip" in text


def test_pings_answer_every_pair_the_script_asks_for(scale_desired):
    fleet = scale_sim.SimulatedFleet(scale_desired, scale_sim.CONVERGED)
    pairs = [(npu, scale_desired.nodes["node0002"].hccn[npu].ip) for npu in range(8)]
    results = parse_ping_output(fleet.transcript("node0001", render_ping_script(pairs, 15)))
    assert [(r.npu, r.target, r.ok) for r in results] == [(npu, ip, True) for npu, ip in pairs]


def _by_substitution(fleet, name, script, nonce):
    """What a host prints, as the chain of substitutions the module doc describes, applied to the
    whole recorded text: the reference that the simulator's joins of pieces must equal."""
    import re

    addresses, hashes = scale_sim._host_values(fleet.desired, name)
    old_to_new = {old: addresses[key] for key, old in fleet._recorded_addresses.items() if key in addresses}
    text = fleet.gather.asked(script).replace(fleet.gather.nonce, nonce)
    text = scale_sim._IPV4.sub(lambda m: old_to_new.get(m.group(0), m.group(0)), text)
    text = re.sub(rf"(?<![\w-]){re.escape(fleet.recorded_node)}(?![\w-])", name, text)
    text = text.replace("/24 scope global eth0", f"/{fleet.host_prefix} scope global eth0")
    master, own = fleet.desired.inventory.master.host, addresses["host"]
    route = (
        f"local {own} dev lo src {own} uid 0 \n    cache <local> \n"
        if master == own
        else f"{master} dev eth0 src {own} uid 0 \n    cache \n"
    )
    route += "\n" if fleet.gather.version >= 2 else ""
    section = re.compile(rf"(@@{nonce} begin net.route dest=)\S+\n.*?(?=@@{nonce} stderr)", re.S)
    text = section.sub(lambda m: f"{m.group(1)}{master}\n{route}", text, count=1)
    text = scale_sim._CONNECT_TIMEOUT.sub(lambda m: m.group(1) + fleet.connect_timeout, text)
    return scale_sim._SHA_LINE.sub(
        lambda m: hashes[m.group(2)] + m.group(1) if m.group(2) in hashes else m.group(0), text
    )


@pytest.mark.parametrize("state", [scale_sim.FRESH, scale_sim.CONVERGED])
@pytest.mark.parametrize("prefix", [16, 24])
def test_each_hosts_transcript_is_the_recording_with_its_own_values(scale_desired, state, prefix):
    """The simulator joins pieces cut once from the recording; every host gets exactly what the
    substitutions would make of the whole text: the master and others, any script's sections."""
    fleet = scale_sim.SimulatedFleet(scale_desired, state, host_prefix=prefix)
    fewer = render_gather_script(
        8, PYTHON, units=[u for u in UNITS if not u.section.startswith(("hccn.optical", "net."))]
    )
    master = scale_desired.inventory.master.name
    for name in (master, "node0002", "node0199", "node0200", "node0201", "node0300"):
        for script in (render_gather_script(8, PYTHON), fewer):
            nonce = scale_sim._HEADER.search(script).group(3)
            assert fleet.transcript(name, script) == _by_substitution(fleet, name, script, nonce)
    mine = fleet.transcript("node0201", render_gather_script(8, PYTHON))
    assert "node0201" in mine and "node1\n" not in mine and f"/{prefix} scope global eth0" in mine
