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
