"""Plan's text at scale: the same change on many hosts (or NPUs) is one line naming a range."""

from __future__ import annotations

from rich.console import Console

from ascendprep.changes import SetNpuAddress, SetNpuTls, SetSysctl
from ascendprep.plan import HostPlan
from ascendprep.report.changes import changes_table
from ascendprep.report.grouping import collapse_npus, group_hosts, npu_label


def _text(renderable) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(renderable)
    return console.export_text()


def _host(i: int) -> HostPlan:
    node = f"node{i:04d}"
    changes = [SetNpuTls(node, 1, npu, 0) for npu in range(8)]
    changes += [SetNpuAddress(node, {"device": None, "file": None}, npu, f"10.{i // 256}.{i % 256}.{npu}", "255.255.0.0") for npu in range(2)]
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


def test_values_that_differ_per_host_or_npu_are_never_merged():
    text = _text(changes_table([_host(1), _host(2)]))
    # Every device IP still shows, each on the line of its own host and NPU.
    for host, address in (("node0001", "10.0.1.0"), ("node0001", "10.0.1.1"), ("node0002", "10.0.2.0"), ("node0002", "10.0.2.1")):
        assert any(host in line and address in line for line in text.splitlines()), (host, address)
    assert "npu[0-1]: ip" not in text
    assert "node[0001-0002]" in text and text.count("somaxconn") == 1


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
