"""Tool calls per node per command, counted on the lab's nodes (issue 12): plan reads only what
its diff needs, apply re-reads only the values its changes depend on, a converged re-plan reads
what plan reads.

Each node's ``hccn_tool`` and ``npu-smi`` are wrapped inside the node by a counter that logs its
arguments and then runs the lab's own tool, so every call any command makes is seen, whoever
makes it. The lab inventory plans a device IP and a detect IP per NPU, no gateway and no TLS
(plan still reads each gateway: one left on a port is removed).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from labsupport import own_lab  # noqa: F401  (this module's own "lab" fixture: plan/apply change it)
from test_plan_apply_lab import run_cli

from ascendprep.lab.lab import Lab
from ascendprep.lab.sim.tools import HCCN_TOOL_PATH, NPU_SMI_PATH

pytestmark = pytest.mark.lab

NODES = ("node1", "node2", "node3")
NPUS = 8
LOG = "/root/ascendprep-tool-calls.log"


def _wrap(lab: Lab, node: str, tool: str) -> None:
    """``tool`` logs ``<name> <args>`` to LOG, then runs the original (kept as ``tool.counted``)."""
    name = tool.rsplit("/", 1)[1]
    wrapper = f'#!/bin/sh\necho "{name} $*" >> {LOG}\nexec /{tool}.counted "$@"\n'
    script = f"[ -e /{tool}.counted ] || mv /{tool} /{tool}.counted; cat > /{tool}; chmod 755 /{tool}"
    lab.run_in_node(node, ["sh", "-c", script], input=wrapper)


@pytest.fixture(scope="module")
def counted(lab: Lab) -> Lab:
    for node in NODES:
        for tool in (HCCN_TOOL_PATH, NPU_SMI_PATH):
            _wrap(lab, node, tool)
    return lab


def calls(lab: Lab, node: str) -> Counter:
    """The calls ``node`` logged since the last look (the log is emptied), as (tool, query) → count."""
    text = lab.run_in_node(node, ["sh", "-c", f"cat {LOG} 2>/dev/null; : > {LOG}"]).stdout
    counted: Counter = Counter()
    for line in text.splitlines():
        words = line.split()
        if words[0] == "hccn_tool":  # hccn_tool -i N -QUERY -g|-s ...
            counted[("hccn_tool", f"{words[3]} {words[4]}")] += 1
        else:
            counted[("npu-smi", " ".join(words[1:3]))] += 1
    return counted


def test_plan_apply_replan_make_only_the_tool_calls_their_work_needs(counted: Lab, tmp_path: Path) -> None:
    lab = counted
    for node in NODES:
        calls(lab, node)  # start from an empty log
    # per NPU the address and the detect IP the inventory plans, and the gateway (one left on a port
    # is removed); the inventory gives the NPU count, so npu-smi is not asked for its list; no TLS,
    # link, optics, counters or health
    reads = Counter({("hccn_tool", "-ip -g"): NPUS, ("hccn_tool", "-netdetect -g"): NPUS})
    plan_reads = reads + Counter({("hccn_tool", "-gateway -g"): NPUS})

    plan = run_cli("plan", str(lab.inventory_path), "--detailed-exitcode", cwd=tmp_path)
    assert plan.returncode == 3, plan.stdout + plan.stderr
    for node in NODES:
        assert calls(lab, node) == plan_reads, node

    applied = run_cli("apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    sets = Counter({("hccn_tool", "-ip -s"): NPUS, ("hccn_tool", "-netdetect -s"): NPUS})
    for node in NODES:
        # re-read: the two values its changes set (the detect IP needs the address), then the sets
        assert calls(lab, node) == reads + sets, node

    again = run_cli("plan", str(lab.inventory_path), "--detailed-exitcode", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    for node in NODES:
        assert calls(lab, node) == plan_reads, node
