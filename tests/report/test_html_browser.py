"""verify --html in a real browser: headless Chromium (Debian's package, installed by .ci/run
through scripts/setup.sh) opens a page rendered from evidence with faults; the DOM must show the
faulty pair marked, the faulty NPU red and the chart's points, and the page must raise no console
error. The screenshot is kept in $ASCENDPREP_ARTIFACTS (CI's artefacts) when set.

Without Chromium the test is skipped, except under CI=true, where it fails.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import cdp
import pytest
from html_evidence import FAULTY_NODE, FAULTY_NPU, HCCS_DEAD_DIE, LOST_PAIR, a3_input, faulty_input

from ascendprep.base.outputfile import write_file
from ascendprep.report.html import render_html


@pytest.fixture(scope="module")
def browser():
    binary = cdp.find_chromium()
    if binary is None:
        message = "no chromium on PATH (apt-get install chromium; scripts/setup.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    browser = cdp.Browser(binary)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_file(path, render_html(faulty_input()))
    session = cdp.open_page(browser, path.as_uri())
    # taken now: once another test opens its tab, this one is in the background and is not drawn
    shot = base64.b64decode(
        browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)[
            "data"
        ]
    )
    folder = Path(os.environ.get("ASCENDPREP_ARTIFACTS") or path.parent)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verify-html.png").write_bytes(shot)
    return browser, session


@pytest.fixture(scope="module")
def a3_page(browser, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("html") / "a3.html"
    write_file(path, render_html(a3_input()))
    return browser, cdp.open_page(browser, path.as_uri())


def js(page, expression: str):
    browser, session = page
    return cdp.evaluate(browser, session, expression)


def test_faulty_pair_is_marked_in_the_matrix(page) -> None:
    titles = js(page, "[...document.querySelectorAll('#matrix rect.mcell.bad')].map(r => r.textContent)")
    assert any(LOST_PAIR in title for title in titles)
    assert js(page, "getComputedStyle(document.querySelector('#matrix rect.mcell.err.bad')).fill") == "rgb(214, 40, 40)"


def test_faulty_npu_is_red_in_the_grid(page) -> None:
    cell = f'document.querySelector(\'#grid a.c[data-node="{FAULTY_NODE}"][data-npu="{FAULTY_NPU}"]\')'
    assert js(page, f"getComputedStyle({cell}).backgroundColor") == "rgb(214, 40, 40)"
    assert (
        js(
            page,
            'getComputedStyle(document.querySelector(\'#grid a.c[data-node="node1"][data-npu="0"]\')).backgroundColor',
        )
        == "rgb(82, 183, 136)"
    )
    assert js(page, f"{cell}.getAttribute('href')") == js(
        page, "'#' + document.querySelector('.node-ev h3').parentElement.id"
    )


def test_chart_has_its_points(page) -> None:
    assert js(page, "document.querySelectorAll('#busbw-chart circle.busbw.point').length") == 6
    assert js(page, "document.querySelectorAll('#busbw-chart circle.algbw.point').length") == 6
    assert js(
        page,
        "document.querySelector('#busbw-chart .gate') !== null && document.querySelector('#busbw-chart .line-rate') !== null",
    )


def test_the_straggler_rank_is_marked(page) -> None:
    titles = js(page, "[...document.querySelectorAll('#rank-times-chart circle.straggler')].map(c => c.textContent)")
    assert titles == ["rank 17 on node3: 1920 us, 2.00x the median"]
    assert (
        js(page, "getComputedStyle(document.querySelector('#rank-times-chart circle.straggler')).fill")
        == "rgb(214, 40, 40)"
    )
    assert js(page, "document.querySelectorAll('#rank-times-chart circle.rank.point.ok').length") == 31


def test_hostile_text_made_no_element_and_no_console_error(page) -> None:
    assert js(page, "document.scripts.length") == 0
    assert js(page, "document.images.length") == 0
    assert "<script>alert(1)</script>" in js(page, "document.querySelector('#versions').textContent")
    browser, _ = page
    assert cdp.console_errors(browser) == []


def test_faulty_hccs_pair_is_marked_in_its_pods_matrix(a3_page) -> None:
    node, devid = HCCS_DEAD_DIE
    pod = js(a3_page, "document.querySelector('#hccs-pods tr[data-pod]').dataset.pod")
    assert pod == "1"  # the pod with the failing pairs comes first
    titles = js(
        a3_page, "[...document.querySelectorAll('.hccs-pod[data-pod=\"1\"] rect.mcell.bad')].map(r => r.textContent)"
    )
    assert len(titles) == 4 and all(title.startswith(f"{node}:{devid}<->") for title in titles)
    assert (
        js(a3_page, "getComputedStyle(document.querySelector('.hccs-pod[data-pod=\"1\"] rect.mcell.err.bad')).fill")
        == "rgb(214, 40, 40)"
    )
    assert js(a3_page, "document.querySelectorAll('.hccs-pod[data-pod=\"0\"] rect.mcell.bad').length") == 0
    assert js(a3_page, "document.querySelectorAll('.hccs-pod[data-pod=\"0\"] rect.mcell.ok').length") == 16
    cell = f'document.querySelector(\'#grid a.c[data-node="{node}"][data-npu="{devid}"]\')'
    assert js(a3_page, f"getComputedStyle({cell}).backgroundColor") == "rgb(214, 40, 40)"
    browser, _ = a3_page
    assert cdp.console_errors(browser) == []


@pytest.fixture(scope="module")
def slow_page(browser, tmp_path_factory: pytest.TempPathFactory):
    from html_evidence import slow_input

    path = tmp_path_factory.mktemp("html") / "slow.html"
    write_file(path, render_html(slow_input()))
    return browser, cdp.open_page(browser, path.as_uri())


def test_latency_switch_colours_the_slow_node_and_keeps_loss_red(slow_page) -> None:
    from html_evidence import SLOW_NODE

    slow = "document.querySelector('#matrix rect.mcell.l3')"
    lost = "document.querySelector('#matrix rect.mcell.err.bad')"
    legend = "getComputedStyle(document.querySelector('.latency-legend')).display"
    # the loss view first: the slow pairs lost nothing, so they are green; the lost pair red
    assert js(slow_page, f"getComputedStyle({slow}).fill") == "rgb(82, 183, 136)"
    assert js(slow_page, legend) == "none"
    js(slow_page, "document.querySelector('label[for=\"view-latency\"]').click()")
    assert js(slow_page, "document.querySelector('#view-latency').checked") is True
    assert js(slow_page, f"getComputedStyle({slow}).fill") == "rgb(123, 44, 191)"
    assert js(slow_page, f"getComputedStyle({lost}).fill") == "rgb(214, 40, 40)"  # lost everything: still loss
    assert (
        js(slow_page, "getComputedStyle(document.querySelector('#matrix rect.mcell.l0')).fill") == "rgb(82, 183, 136)"
    )
    assert js(slow_page, legend) == "block"
    titles = js(slow_page, "[...document.querySelectorAll('#matrix rect.mcell.l3')].map(r => r.textContent)")
    assert titles and all(SLOW_NODE in title for title in titles)
    browser, _ = slow_page
    assert cdp.console_errors(browser) == []
