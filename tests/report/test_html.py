"""verify --html: the page's content, read as text (the browser test reads its DOM)."""

from __future__ import annotations

import re

from html_evidence import FAULTY_NODE, FAULTY_NPU, HOSTILE, LOST_PAIR, faulty_input

from ascendprep.report.html import render_html


def test_hostile_host_text_is_escaped_never_markup() -> None:
    page = render_html(faulty_input())
    assert HOSTILE not in page
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "onerror=alert(2)&gt;" in page  # shown, as text
    assert "\x1b" not in page and "\x00" not in page and "\x07" not in page
    assert r"\x1b]0;pwn\x07\x00" in page  # control characters spelled out


def test_sections_top_to_bottom() -> None:
    page = render_html(faulty_input())
    order = [
        page.index(f'<section id="{name}">')
        for name in ("verdict", "grid", "reachability", "allreduce", "grey", "versions", "evidence")
    ]
    assert order == sorted(order)
    assert "FAIL: a training job" in page
    assert 'id="blockers"' in page and "network.link" in page


def test_faulty_pair_and_npu_are_marked() -> None:
    page = render_html(faulty_input())
    marked = re.findall(r'<rect class="mcell err bad"[^>]*><title>([^<]*)</title>', page)
    assert any(LOST_PAIR.replace("<", "&lt;").replace(">", "&gt;") in title for title in marked)
    assert re.search(
        rf'<a class="c err" href="#node-\d+" title="[^"]*" data-node="{FAULTY_NODE}" data-npu="{FAULTY_NPU}">', page
    )
    assert re.search(r'<a class="c ok" [^>]*data-node="node1" data-npu="0">', page)


def test_allreduce_chart_has_every_size_and_the_gates() -> None:
    page = render_html(faulty_input())
    assert page.count('<circle class="busbw point"') == 6 and page.count('<circle class="algbw point"') == 6
    assert "--min-busbw 15 GB/s" in page and "line rate" in page
    assert 'class="err straggler"' in page


def test_versions_name_the_odd_node() -> None:
    page = render_html(faulty_input())
    odd = re.findall(r'<tr class="warn odd">.*?</tr>', page)
    assert len(odd) == 1 and odd[0].endswith('<td class="mono">node3</td></tr>')


def test_large_fleet_folds_healthy_nodes() -> None:
    from dataclasses import replace

    data = faulty_input()
    names = [f"extra{i:04d}" for i in range(300)]
    healthy = data.hosts["node1"]
    hosts = {**data.hosts, **{name: replace(healthy, node=name) for name in names}}
    page = render_html(replace(data, hosts=hosts, node_order=[*data.node_order, *names], desired=data.desired))
    assert "nodes with no finding on the node or any NPU" in page and "extra[0000-0299]" in page


def test_hccs_matrix_per_super_pod_marks_the_dead_die() -> None:
    from html_evidence import HCCS_DEAD_DIE, a3_input

    node, devid = HCCS_DEAD_DIE
    page = render_html(a3_input())
    assert page.index('<section id="reachability">') < page.index('id="hccs"') < page.index('<section id="allreduce">')
    pods = re.findall(r'<tr class="([a-z]*)" data-pod="(\d)"><td>\d</td><td class="mono">([^<]*)</td>', page)
    assert pods == [("err", "1", "n[3-4] (2)"), ("", "0", "n[1-2] (2)")]
    one = page[page.index('<div class="hccs-pod" id="hccs-pod-0" data-pod="1">') : page.index('id="hccs-pod-1"')]
    marked = re.findall(r'<rect class="mcell err bad"[^>]*><title>([^<]*)</title>', one)
    # each failing pair drawn both ways: n3:1<->n4:1 and n3:1<->n3:3
    assert sorted(marked) == ["n3:1&lt;-&gt;n3:3: 100% loss"] * 2 + ["n3:1&lt;-&gt;n4:1: 100% loss"] * 2
    assert f"{node}:{devid}&lt;-&gt;" in marked[0]
    assert one.count('<rect class="mcell ok"') == 12
    assert "every HCCS pair of n3 device 1 failed" in one  # the failing pairs' list has the whole message


def test_hccs_draws_the_failing_pods_first_and_lists_every_pod() -> None:
    from dataclasses import replace

    from html_evidence import a3_input

    from ascendprep.report import html
    from ascendprep.verify.checks.model import CheckResult, Status

    data = a3_input()
    template = next(r for r in data.results if r.status is Status.PASSED)
    extra: list[CheckResult] = []
    hosts = dict(data.hosts)
    for pod in range(2, 12):
        a, b = f"p{pod}a", f"p{pod}b"
        for name in (a, b):
            facts = data.hosts["n1"].facts
            assert facts is not None and facts.superpod is not None
            superpod = {d: replace(die, super_pod_id=pod) for d, die in facts.superpod.items()}
            hosts[name] = replace(data.hosts["n1"], node=name, facts=replace(facts, superpod=superpod))
        extra.append(
            replace(
                template,
                subject=f"{a}:0<->{b}:0",
                evidence={"from": {"node": a, "device": 0}, "to": {"node": b, "device": 0}},
            )
        )
    model = html.page_model(replace(data, results=[*data.results, *extra], hosts=hosts))["hccs"]
    assert len(model["pods"]) == 12 and model["drawn"] == html.HCCS_PODS_DRAWN_MAX
    assert model["pods"][0]["pod"] == "1" and model["pods"][0]["drawn"]
    assert [p["drawn"] for p in model["pods"]].count(True) == html.HCCS_PODS_DRAWN_MAX


def test_a_large_super_pod_is_grouped_to_the_cell_budget() -> None:
    from ascendprep.report.html import HCCS_CELLS_MAX, MATRIX_SIDE_MAX, _heat_map

    # a 48-server pod of 16 dies: the ring's pairs (same die, next server; next die of the plane)
    judged = []
    for server in range(48):
        for die in range(16):
            judged.append((die, server, die, (server + 1) % 48, 3 if (server, die) == (7, 5) else 0, "t"))
            judged.append((die, server, (die + 2) % 16, server, 0, "t"))
    shown = _heat_map(judged, 48, list(range(16)), MATRIX_SIDE_MAX, HCCS_CELLS_MAX)
    assert len(shown["rects"]) <= HCCS_CELLS_MAX and shown["per_column"] >= 2
    assert sum(r["marked"] for r in shown["rects"]) in (1, 2)


def test_the_plans_changes_per_host_read_by_the_plan_loader(tmp_path) -> None:
    from dataclasses import replace

    from html_evidence import saved_plan

    from ascendprep.plan.planfile import read_plan, write_plan

    path = tmp_path / "plan.json"
    write_plan(saved_plan(), path)
    page = render_html(replace(faulty_input(), plan=read_plan(path, owned=False), plan_path=str(path)))
    assert page.index('<section id="versions">') < page.index('<section id="plan">') < page.index('id="evidence"')
    section = page[page.index('<section id="plan">') : page.index('<section id="evidence">')]
    assert "<b>Not applied</b>: what <span" in section and "2 changes on 4 hosts" in section
    assert "2 hosts with nothing to change" in section and "node[1,3]" in section
    rows = re.findall(r'<tr><td class="mono">([^<]*)</td><td class="mono">([^<]*)</td><td>([^<]*)</td></tr>', section)
    assert [(kind, target) for kind, target, _ in rows] == [("hccn.ip", "npu 3"), ("sysctl", "net.core.somaxconn")]
    assert "10.20.0.4" in rows[0][2] and "65535" in rows[1][2]
    # what a host printed (the kernel's old value, the reason it was not planned) is text, never markup
    assert HOSTILE not in section and "<script" not in section and "&lt;script&gt;alert(1)" in section
    assert "not planned: unreachable: &lt;script&gt;" in section and r"\x1b]0;pwn\x07\x00" in section


def test_no_plan_no_section_and_an_applied_plan_says_so() -> None:
    from dataclasses import replace

    from html_evidence import saved_plan

    assert '<section id="plan">' not in render_html(faulty_input())
    plan = saved_plan()
    plan.applied_at, plan.cluster = "2026-01-02T00:00:00+00:00", "other"
    page = render_html(replace(faulty_input(), plan=plan, plan_path="p.json"))
    assert "<b>Applied</b> 2026-01-02T00:00:00+00:00: what apply did" in page
    assert "This plan is of cluster other, not of the inventory verified here (unit)" in page


def test_every_ranks_time_with_the_straggler_marked() -> None:
    page = render_html(faulty_input())
    chart = page[page.index('<svg id="rank-times-chart"') : page.index("</svg>", page.index('id="rank-times-chart"'))]
    assert chart.count('<circle class="rank point') == 32
    marked = re.findall(r'<circle class="rank point err straggler"[^>]*><title>([^<]*)</title>', chart)
    assert marked == ["rank 17 on node3: 1920 us, 2.00x the median"]
    assert "straggler line 1440 us" in chart and "median 960 us" in chart
    assert re.search(r'<table id="straggler-ranks">.*?<td>17</td><td class="mono">node3</td>', page, re.S)


def test_a_large_world_is_drawn_as_the_slowest_of_each_run_of_ranks() -> None:
    from ascendprep.report.html import RANK_POINTS_MAX, _rank_chart

    world = 65536  # 4,096 A3 servers, 16 dies each
    ranks = [[r, f"n{r // 16}", 2500.0 if r == 40000 else 1000.0] for r in range(world)]
    verdict = {
        "rank_times": {"bytes": 1 << 30, "median_us": 1000.0, "ranks": ranks},
        "stragglers": [{"rank": 5}],
    }
    chart = _rank_chart(verdict, {"ratio": 1.5, "floor_us": 100.0, "min_ranks": 3})
    assert chart is not None and len(chart["points"]) <= RANK_POINTS_MAX and chart["per_point"] == 128
    assert [p["cls"] for p in chart["points"]].count("err straggler") == 1
    assert chart["points"][0]["cls"] == "warn"  # rank 5 straggled at another size
    assert "slowest rank 40000 on n2500" in next(p["tip"] for p in chart["points"] if p["cls"] == "err straggler")
    assert chart["slow"] == [{"rank": 40000, "node": "n2500", "time_us": 2500.0, "ratio": 2.5}]
    # hostile shapes are skipped, never a crash
    assert _rank_chart({"rank_times": {"ranks": [["x"], 5], "median_us": 1.0}}, {}) is None


def test_hostile_text_in_an_hccs_result_is_escaped() -> None:
    from dataclasses import replace

    from html_evidence import a3_input

    from ascendprep.verify.checks.model import Status

    data = a3_input()
    results = [
        replace(r, message=f"HCCS {HOSTILE}", evidence={**r.evidence, "error": HOSTILE})
        if r.status is Status.FAILED
        else r
        for r in data.results
    ]
    page = render_html(replace(data, results=results))
    assert HOSTILE not in page and "<script" not in page.lower()
    assert "HCCS &lt;script&gt;alert(1)&lt;/script&gt;" in page and r"\x1b]0;pwn\x07\x00" in page


def test_latency_view_marks_the_slow_node_and_keeps_the_lost_pair_as_loss() -> None:
    from html_evidence import SLOW_NODE, slow_input

    from ascendprep.report import html

    data = slow_input()
    page = render_html(data)
    assert 'id="view-latency"' in page and 'class="legend latency-legend"' in page
    matrix = page[page.index('<svg id="matrix"') : page.index("</svg>", page.index('<svg id="matrix"'))]
    slow = re.findall(r'<rect class="mcell ok l3"[^>]*><title>([^<]*)</title>', matrix)
    # every slow cell names a pair with the slow node, and its times
    assert slow and all(SLOW_NODE in title and "round trip avg 40 ms, max 52 ms" in title for title in slow)
    # the pair that lost everything stays a loss cell in the latency view: no latency class
    lost = re.findall(r'<rect class="mcell err bad"[^>]*><title>([^<]*)</title>', matrix)
    assert lost and all("100% loss" in title for title in lost)
    # the healthy pairs are on the scale's fast end
    assert matrix.count('<rect class="mcell ok l0"') > 0
    # node3's row in every band: each cell of node3's row holding a pair is slow (ring: 8 planes)
    model = html.page_model(data)["matrix"]
    assert model["latency"]["typical"] == "0.497"
    step, columns = model["step"], 4
    row = [r for r in model["rects"] if round(r["y"] / step) % columns == 2]
    assert row and all(r["lat"] == "l3" for r in row)


def test_aggregated_latency_cell_takes_the_slowest_pair_and_loss_wins() -> None:
    from ascendprep.report.html import MATRIX_CELLS_MAX, _heat_map

    # two nodes per row and column: pairs (0,1) fast, (0,2) slow, (1,3) lost everything
    judged = [(0, 0, 0, 1, 0, "fast"), (0, 0, 0, 2, 0, "slow"), (0, 1, 0, 3, 3, "lost"), (0, 2, 0, 3, 0, "fast")]
    shown = _heat_map(judged, 4, [0], 2, MATRIX_CELLS_MAX, [0, 3, None, 1])
    assert shown["per_column"] == 2
    cells = {(round(r["x"] / shown["step"]), round(r["y"] / shown["step"])): r for r in shown["rects"]}
    assert cells[(0, 0)]["lat"] == "l0"
    assert cells[(0, 1)]["lat"] == "" and cells[(0, 1)]["cls"] == "err"  # slow and lost: loss wins
    assert cells[(1, 1)]["lat"] == "l1"
    assert "lost" in cells[(0, 1)]["tip"]
