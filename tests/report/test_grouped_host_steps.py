"""NPU-stepped plan lines that consecutive hosts continue are one line for all of them
(``node[0001-4096] npu[0-7]: ip none → 10.20.0.[1-…]``), read in order; anything that breaks the
step keeps its own line with its own values."""

from __future__ import annotations

from rich.console import Console

from ascendprep.plan.changes import SetNpuAddress, SetSysctl
from ascendprep.plan.diff import HostPlan
from ascendprep.report.changes import changes_table
from ascendprep.report.grouping import Grouped, merge_host_steps


def _text(renderable) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(renderable)
    return console.export_text()


def _host(i: int, first: int, npus: int = 8, name: str = "") -> HostPlan:
    node = name or f"node{i:04d}"
    changes = [
        SetNpuAddress(node, {"device": None, "file": None}, npu, f"10.20.0.{first + npu}", "255.255.0.0")
        for npu in range(npus)
    ]
    changes.append(SetSysctl(node, "4096", "net.core.somaxconn", "65535"))
    return HostPlan(node, "10.0.0.1", reachable=True, changes=changes)


def _rows(plans) -> list[str]:
    return [line for line in _text(changes_table(plans)).splitlines() if "node" in line]


def test_consecutive_hosts_continuing_the_step_are_one_line():
    rows = _rows([_host(i, 1 + 8 * (i - 1)) for i in range(1, 25)])
    ip = [row for row in rows if " ip " in row]
    assert len(ip) == 1 and "node[0001-0024]" in ip[0] and " 24 " in ip[0]
    assert "npu[0-7]: ip none → 10.20.0.[1-192]/255.255.0.0" in ip[0]


def test_a_host_off_the_step_splits_the_run_and_shows_its_own_values():
    plans = [_host(i, 1 + 8 * (i - 1)) for i in range(1, 7)]
    plans[3] = _host(4, 100)  # node0004 does not continue node0003's .17-.24
    ip = [row for row in _rows(plans) if " ip " in row]
    assert any("node[0001-0003]" in row and "10.20.0.[1-24]/" in row for row in ip)
    assert any("node0004 " in row and "10.20.0.[100-107]/" in row for row in ip)
    assert any("node[0005-0006]" in row and "10.20.0.[33-48]/" in row for row in ip)
    assert len(ip) == 3


def test_an_unreachable_host_between_them_is_a_gap_not_merged_over():
    plans = [_host(1, 1), HostPlan("node0002", "10.0.0.2", reachable=False, error="refused"), _host(3, 9)]
    ip = [row for row in _rows(plans) if " ip " in row]
    assert len(ip) == 2 and any("node0001 " in row for row in ip) and any("node0003 " in row for row in ip)


def test_ranges_narrower_than_the_npus_or_different_text_do_not_merge():
    groups = [
        Grouped(("n1",), ("", "npu[0-7]: ip none → 10.0.0.[1-8]/16")),
        Grouped(("n2",), ("", "npu[0-7]: ip none → 10.0.0.[9-16]/24")),  # another mask
        Grouped(("n3",), ("", "npu[0-7]: gateway none → 10.0.0.[9-12]")),  # not as wide as the NPUs
        Grouped(("n4",), ("", "npu[0-7]: gateway none → 10.0.0.[13-16]")),
    ]
    assert merge_host_steps(groups, ["n1", "n2", "n3", "n4"]) == groups


def test_hosts_whose_range_would_expand_in_another_order_stay_apart():
    # Inventory order node10, node9: "node[9-10]" would read node9 first, so the values would pair wrongly.
    groups = [
        Grouped(("node10",), ("", "npu[0-1]: ip none → 10.0.0.[1-2]")),
        Grouped(("node9",), ("", "npu[0-1]: ip none → 10.0.0.[3-4]")),
    ]
    assert merge_host_steps(groups, ["node10", "node9"]) == groups
    ordered = merge_host_steps(list(reversed(groups)), ["node9", "node10"])
    assert ordered == list(reversed(groups))  # node9 .3-.4 then node10 .1-.2: not a continuation
