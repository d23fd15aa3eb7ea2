"""verify keeps one connection per host across its phases: the facts, then the pings, over the
same transport (a reconnect per phase would double the logins on a 4,096-node cluster)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import List

import yaml

from ascendprep.desired.state import build_desired
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.access import HostAccess
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.transport import Transport
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session

FAKE_TOOLS = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "fake_tools"

INVENTORY = {
    "name": "t",
    "product": "atlas-a2",
    "npus_per_node": 2,
    "device_network": {"subnet": "10.20.0.0/24", "tls": False},
    "nodes": [{"name": "n[1-3]", "host": "10.0.0.[11-13]"}],
}


def test_verify_gathers_and_pings_over_one_connection_per_host(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("hccn_tool", "npu-smi"):  # found on PATH: every "host" has the NPU tools
        shutil.copyfile(FAKE_TOOLS / tool, bin_dir / tool)
        (bin_dir / tool).chmod(stat.S_IRWXU)
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FIXTURES", str(FAKE_TOOLS.parent))
    monkeypatch.setenv("FAKE_STATE", str(tmp_path / "state"))

    connects: List[str] = []

    def connect(access: HostAccess) -> Transport:  # the hosts run on this machine, counted
        connects.append(access.name)
        return LocalTransport(access.name)

    desired = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))
    accesses = [HostAccess(name=node.name, address=node.host) for node in desired.inventory.nodes]
    with Session(accesses, forks=3, transport_factory=connect) as session:
        hosts, plan = collect(session, desired, "ring", with_pings=True)
        execs = session.exec_counts()

    assert all(host.facts is not None and host.facts.hccn_tool for host in hosts.values())
    assert plan is not None and plan.by_source(), "no pings were planned: the test would prove nothing"
    pinging = set(plan.by_source())
    assert {name: execs[name] for name in pinging} == {name: 2 for name in pinging}  # gather, then pings
    assert sorted(connects) == ["n1", "n2", "n3"]  # one connection each, kept across both phases
