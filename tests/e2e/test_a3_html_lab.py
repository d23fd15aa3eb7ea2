"""verify --html --plan on an A3 lab of 4 servers in 2 super-pods with one die's HCCS link down
(node2 device 5), opened in headless Chromium: the HCCS map of node2's pod marks that die's
pairs, its grid cell is red, the applied plan's changes are listed, and the page raised no
console error; the page made again from the saved run marks the same cells. The screenshot goes
to $ASCENDPREP_ARTIFACTS."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Iterator

import cdp
import pytest
from click.testing import CliRunner
from labsupport import start_test_lab, verify_json

from ascendprep.commands.verify import verify_command
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected
from ascendprep.run.apply import run_apply
from ascendprep.run.plan import run_plan

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def a3_lab() -> Iterator[Lab]:
    lab = start_test_lab(nodes=4, product="atlas-a3", suffix="a3html", pod_servers=2)
    try:
        yield lab
    finally:
        lab.down()


def test_hccs_fault_and_the_applied_plan_in_a_browser(a3_lab: Lab, tmp_path: Path) -> None:
    binary = cdp.find_chromium()
    if binary is None:
        message = "no chromium on PATH (apt-get install chromium; scripts/setup.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    plan = tmp_path / "plan.json"
    assert run_plan(a3_lab.inventory_path, plan, "text", False, False, None) == 0
    assert run_apply(plan, False, None) == 0
    page = tmp_path / "report.html"
    with fault_injected(a3_lab, "node2", "hccs-link-down", npu=5):
        code, _ = verify_json(a3_lab, tmp_path, "--html", str(page), "--plan", str(plan))
    assert code == 1
    # the same page from the saved run (no host contacted): the same HCCS cells marked
    (run,) = (tmp_path / ".ascendprep" / "runs").iterdir()
    again = tmp_path / "again.html"
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(run), "--html", str(again), "--plan", str(plan)])
    assert outcome.exit_code == 1, outcome.output

    def marked(text: str) -> list:
        return sorted(re.findall(r'<rect class="mcell [a-z]+ bad"[^>]*><title>([^<]*)</title>', text))

    assert marked(again.read_text()) == marked(page.read_text()) != []
    browser = cdp.Browser(binary)
    try:
        session = cdp.open_page(browser, page.as_uri())

        def js(expression: str):
            return cdp.evaluate(browser, session, expression)

        pods = js("[...document.querySelectorAll('#hccs-pods tr[data-pod]')].map(r => r.dataset.pod)")
        assert pods == ["0", "1"]  # node1/node2 form pod 0, the one with failing pairs: first
        titles = js(
            "[...document.querySelectorAll('.hccs-pod[data-pod=\"0\"] rect.mcell.bad')].map(r => r.textContent)"
        )
        # its cross-server pair and its two in-server ring pairs, each drawn both ways
        assert len(titles) == 6 and all("node2:5<->" in t or "<->node2:5:" in t for t in titles), titles
        listed = js("document.querySelector('.hccs-pod[data-pod=\"0\"] .hccs-bad').textContent")
        assert listed.count("node2 device 5 (NPU 2 die 1") == 3
        assert js("document.querySelectorAll('.hccs-pod[data-pod=\"1\"] rect.mcell.bad').length") == 0
        cell = 'document.querySelector(\'#grid a.c[data-node="node2"][data-npu="5"]\')'
        assert js(f"getComputedStyle({cell}).backgroundColor") == "rgb(214, 40, 40)"
        assert js("document.querySelector('#plan').textContent").count("Applied") == 1
        assert js("document.querySelectorAll('#plan .plan-host').length") >= 1
        assert js("document.scripts.length") == 0
        assert cdp.console_errors(browser) == []
        shot = browser.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session
        )["data"]
        folder = Path(os.environ.get("ASCENDPREP_ARTIFACTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "verify-html-a3-lab.png").write_bytes(base64.b64decode(shot))
    finally:
        browser.close()
