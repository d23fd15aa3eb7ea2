"""Per-phase gather scripts: plan runs only the probes its diff reads, verify runs every probe,
and the plan's diff is the same from either script's facts."""

from __future__ import annotations

import sys

import pytest
import yaml
from test_probes_gather import _fake_host, _run  # the fake-tool host of the gather tests

from ascendprep.desired.state import build_desired
from ascendprep.facts.blockers import JobProbes
from ascendprep.facts.gather import parse_gather_output, render_gather_script, units_for_phase
from ascendprep.facts.ports import PortQuery
from ascendprep.facts.sections import parse_transcript
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import diff_host

JOBS = JobProbes(PortQuery(((60000, 60031), (29500, 29500))), "10.0.0.1")

#: Queries only verify judges: none may run in plan's script.
VERIFY_ONLY_CALLS = (
    "-optical",
    "-stat -g",
    "-lldp",
    "-link_stat",
    "-net_health",
    "-link -g",
    "-speed",
    "-duplex",
    "-fec",
    "-t health",
    "-t board",
    "ss ",
    "ip -o addr",
    "getent",
)
#: What plan's diff reads.
PLAN_CALLS = (
    "-ip -g",
    "-gateway -g",
    "-netdetect -g",
    "-tls -g",
    "cat /etc/hccn.conf",
    "/proc/sys/net/core/somaxconn",
    "sha256sum",
    "ufw status",
    "firewall-cmd --state",
)


def test_plan_script_does_not_call_verify_only_queries_and_verify_calls_them_all():
    plan = render_gather_script(8, "python3", job_probes=JOBS, sample_interval=5, phase="plan")
    verify = render_gather_script(8, "python3", job_probes=JOBS, sample_interval=5, phase="verify")
    for call in VERIFY_ONLY_CALLS:
        assert call not in plan, call
        assert call in verify, call
    for call in PLAN_CALLS:
        assert call in plan and call in verify, call
    assert render_gather_script(8, "python3").count("ap_hccn -i") == verify.count("ap_hccn -i")  # default: verify's


def test_plan_runs_four_hccn_queries_per_npu():
    plan_npu_units = [u.section for u in units_for_phase("plan") if u.scope == "npu"]
    assert plan_npu_units == ["hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls"]
    assert (
        len([u for u in units_for_phase("verify") if u.scope == "npu"]) == 14
    )  # twelve queries, -stat, and -vnic (A3 only)
    with pytest.raises(ValueError, match="phase must be one of"):
        units_for_phase("apply")


INVENTORY = {
    "name": "t",
    "product": "atlas-a2",
    "npus_per_node": 2,
    "device_network": {"subnet": "10.20.0.0/24", "tls": False, "detect": "gateway", "gateway": "10.20.0.1"},
    "nodes": [{"name": "n1", "host": "10.0.0.11"}],
    "sysctl": {"net.core.somaxconn": 65535},
}


def test_plan_script_on_a_host_gives_the_same_diff_with_fewer_tool_calls(tmp_path, fixtures_dir):
    home, env = _fake_host(tmp_path, fixtures_dir)
    desired = build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))
    outputs = {
        phase: _run("sh", render_gather_script(2, sys.executable, 5, ascend_home=str(home), phase=phase), env)
        for phase in ("plan", "verify")
    }
    plans = {phase: diff_host(desired, "n1", parse_gather_output(text)) for phase, text in outputs.items()}

    assert plans["plan"].changes == plans["verify"].changes and plans["plan"].changes
    assert plans["plan"].incomplete == plans["verify"].incomplete
    assert [f.message for f in plans["plan"].findings] == [f.message for f in plans["verify"].findings]
    hccn = {
        phase: [s for s in parse_transcript(text, "gather").sections if s.name.startswith("hccn.")]
        for phase, text in outputs.items()
    }
    assert len(hccn["plan"]) == 2 * 4 and len(hccn["verify"]) == 2 * 13
    plan_facts = parse_gather_output(outputs["plan"])
    assert plan_facts.npu_health == () and plan_facts.python is None  # not read at all, not failed
    assert not [e for e in plan_facts.errors if e.probe not in {"hccn.speed"}]
