"""verify --html on the virtual cluster with a fault injected (node2's NPU 3 link down), opened
in headless Chromium: the faulty NPU's grid cell is red, a matrix cell of its broken pairs is
marked, and the page raised no console error. The screenshot goes to $ASCENDPREP_ARTIFACTS.
"""

from __future__ import annotations

import os
from pathlib import Path

import cdp
import pytest
from click.testing import CliRunner

from ascendprep.commands.apply import run_apply
from ascendprep.commands.plan import run_plan
from ascendprep.commands.verify import verify_command
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import fault_injected

pytestmark = pytest.mark.lab


def test_html_report_of_a_lab_fault_in_a_browser(verify_lab: Lab, tmp_path: Path) -> None:
    binary = cdp.find_chromium()
    if binary is None:
        message = "no chromium on PATH (apt-get install chromium; scripts/setup.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        plan = tmp_path / "plan.json"
        assert run_plan(verify_lab.inventory_path, plan, "text", False, False, None) == 0
        assert run_apply(plan, False, None) == 0
        page = tmp_path / "report.html"
        with fault_injected(verify_lab, "node2", "link-down", npu=3):
            outcome = CliRunner().invoke(
                verify_command,
                [str(verify_lab.inventory_path), "--only", "network,node,npu,cluster", "--html", str(page)],
            )
        assert outcome.exit_code == 1, outcome.output
    finally:
        os.chdir(cwd)
    browser = cdp.Browser(binary)
    try:
        session = cdp.open_page(browser, page.as_uri())
        cell = 'document.querySelector(\'#grid a.c[data-node="node2"][data-npu="3"]\')'
        assert cdp.evaluate(browser, session, f"getComputedStyle({cell}).backgroundColor") == "rgb(214, 40, 40)"
        titles = cdp.evaluate(
            browser, session, "[...document.querySelectorAll('#matrix rect.mcell.bad')].map(r => r.textContent)"
        )
        assert any("node2:3" in title for title in titles), titles
        assert cdp.evaluate(browser, session, "document.scripts.length") == 0
        assert cdp.console_errors(browser) == []
        import base64

        shot = base64.b64decode(
            browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)[
                "data"
            ]
        )
        folder = Path(os.environ.get("ASCENDPREP_ARTIFACTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "verify-html-lab.png").write_bytes(shot)
    finally:
        browser.close()
