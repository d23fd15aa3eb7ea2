"""Plan's text at scale: the same change on many hosts (or NPUs) is one line naming a range."""

from __future__ import annotations

from rich.console import Console

from ascendprep.plan.changes import SetNpuAddress, SetNpuTls, SetSysctl
from ascendprep.plan.diff import HostPlan
from ascendprep.report.changes import changes_table
from ascendprep.report.grouping import collapse_npu_lines, collapse_npus, group_hosts, npu_label


def _text(renderable) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(renderable)
    return console.export_text()


def _host(i: int) -> HostPlan:
    node = f"node{i:04d}"
    changes = [SetNpuTls(node, 1, npu, 0) for npu in range(8)]
    changes += [
        SetNpuAddress(node, {"device": None, "file": None}, npu, f"10.{i // 256}.{i % 256}.{npu}", "255.255.0.0")
        for npu in range(2)
    ]
    changes.append(SetSysctl(node, "4096", "net.core.somaxconn", "65535"))
    return HostPlan(node, f"10.0.0.{i % 250}", reachable=True, changes=changes)


def test_the_same_change_on_every_host_and_npu_is_one_line():
    plans = [_host(i) for i in range(1, 4097)]
    plans[6] = HostPlan("node0007", "10.0.0.7", reachable=False, error="connection refused")
    rows = [line for line in _text(changes_table(plans)).splitlines() if "node" in line]
    sysctl = [row for row in rows if "somaxconn" in row]
    assert len(sysctl) == 1 and "node[0001-0006,0008-4096]" in sysctl[0] and "4095" in sysctl[0]
    assert "4096 → 65535" in sysctl[0]
    tls = [row for row in rows if "tls switch" in row]
    assert len(tls) == 1 and "npu[0-7]: tls switch 1 → 0" in tls[0]
    refused = [row for row in rows if "not planned" in row]
    assert len(refused) == 1 and "node0007 " in refused[0]


def test_values_that_differ_per_host_are_never_merged_and_npu_steps_show_their_pattern():
    text = _text(changes_table([_host(1), _host(2)]))
    # Each host's device IPs run in step with the NPU: one line per host, the range pairs in order.
    assert any(
        "node0001" in line and "npu[0-1]: ip none → 10.0.1.[0-1]/255.255.0.0" in line for line in text.splitlines()
    )
    assert any(
        "node0002" in line and "npu[0-1]: ip none → 10.0.2.[0-1]/255.255.0.0" in line for line in text.splitlines()
    )
    assert "node[0001-0002]" in text and text.count("somaxconn") == 1


def test_an_npu_that_breaks_the_step_keeps_every_value_visible():
    plan = _host(1)
    plan.changes[9] = SetNpuAddress("node0001", {"device": None, "file": None}, 1, "10.9.9.9", "255.255.0.0")
    text = _text(changes_table([plan]))
    assert "npu 0: ip none → 10.0.1.0/255.255.0.0" in text and "npu 1: ip none → 10.9.9.9/255.255.0.0" in text
    assert "[0-1]/" not in text


def test_group_hosts_keeps_first_seen_order_and_each_host_once():
    groups = group_hosts([("n2", "a"), ("n1", "b"), ("n1", "a"), ("n2", "a")])
    assert [(g.key, g.hosts, g.where) for g in groups] == [("a", ("n2", "n1"), "n[1-2]"), ("b", ("n1",), "n1")]


def test_collapse_npus_merges_only_equal_lines():
    lines = [(0, "tls 1 → 0"), (1, "tls 1 → 0"), (3, "tls 1 → 0"), (2, "tls unknown → 0"), (None, "sysctl x")]
    assert collapse_npus(lines) == [("npu[0-1,3]", "tls 1 → 0"), ("npu 2", "tls unknown → 0"), (None, "sysctl x")]
    assert npu_label([5]) == "npu 5"


def test_apply_results_merge_only_when_change_result_and_message_agree():
    from ascendprep.report.changes import apply_table

    rows = []
    for i in range(1, 65):
        node = f"node{i:02d}"
        rows += [(node, SetNpuTls(node, 1, npu, 0), 0, "ok") for npu in range(8)]
        rows.append((node, SetSysctl(node, "4096", "net.core.somaxconn", "65535"), 0, "ok"))
    rows[8 * 9 + 3] = ("node09", SetNpuTls("node09", 1, 3, 0), 1, "hccn_tool is busy [/x.c:1]")
    text = _text(apply_table(rows))
    lines = text.splitlines()
    assert any("node[01-08,10-64]" in line and "npu[0-7]: tls switch 1 → 0" in line for line in lines)
    assert any("node09" in line and "npu[0-2,4-7]: tls switch" in line for line in lines)
    failed = [line for line in lines if "failed (rc 1)" in line]
    assert len(failed) == 1 and "node09" in failed[0] and "npu 3:" in failed[0] and "[/x.c:1]" in failed[0]
    assert any("node[01-64]" in line and "somaxconn" in line for line in lines)


def test_lockstep_lines_expand_back_to_every_npu_and_value():
    from ascendprep.base.hostrange import expand

    lines = [(npu, f"netdetect none → 10.20.{npu + 8}.254") for npu in range(8)]
    [(label, text)] = collapse_npu_lines(lines)
    assert (label, text) == ("npu[0-7]", "netdetect none → 10.20.[8-15].254")
    assert list(zip(expand("npu[0-7]"), expand(text))) == [
        (f"npu{n}", f"netdetect none → 10.20.{n + 8}.254") for n in range(8)
    ]
    # Two numbers that vary, or a gap in the values: not merged.
    assert len(collapse_npu_lines([(n, f"ip 1.1.1.{n} → 2.2.2.{n}") for n in range(3)])) == 3
    assert len(collapse_npu_lines([(0, "gw 1.1.1.1"), (1, "gw 1.1.1.3")])) == 2
