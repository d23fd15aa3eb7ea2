"""The lab's ``slow`` fault (tc tbf on node3's link; the simulated NPU ports wait out the shaper's
bucket) seen by verify: each of node3's pairs is a ``cluster.reachability`` warning with its round
trip in the JSON, and in the page's latency view, opened in headless Chromium, node3's row and
column are the slow colour while the other pairs stay on the fast end.
"""

from __future__ import annotations

import json
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


def test_a_slow_node_stands_out_in_the_latency_view(verify_lab: Lab, tmp_path: Path) -> None:
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
        with fault_injected(verify_lab, "node3", "slow"):
            outcome = CliRunner().invoke(
                verify_command,
                [str(verify_lab.inventory_path), "--only", "node,cluster", "--html", str(page), "--format", "json"],
            )
    finally:
        os.chdir(cwd)
    document = json.loads(outcome.stdout)
    reach = [c for c in document["checks"] if c["check"] == "cluster.reachability"]
    slow = [c for c in reach if c["status"] == "failed"]
    assert slow and all("node3" in c["subject"] and c["severity"] == "warning" for c in slow), slow
    assert all(c["evidence"]["rtt_avg_ms"] >= 10 for c in slow)
    fast = [c for c in reach if "node3" not in c["subject"]]
    assert fast and all(c["status"] == "passed" and c["evidence"]["rtt_avg_ms"] < 2 for c in fast)
    browser = cdp.Browser(binary)
    try:
        session = cdp.open_page(browser, page.as_uri())

        def js(expression: str):
            return cdp.evaluate(browser, session, expression)

        js("document.querySelector('label[for=\"view-latency\"]').click()")
        titles = js("[...document.querySelectorAll('#matrix rect.mcell.l3')].map(r => r.textContent)")
        assert titles and all("node3" in title for title in titles), titles
        assert js("getComputedStyle(document.querySelector('#matrix rect.mcell.l3')).fill") == "rgb(123, 44, 191)"
        # every cell that is not about node3 is on the fast end
        others = js(
            "[...document.querySelectorAll('#matrix rect.mcell')].filter(r => !r.classList.contains('l3'))"
            ".map(r => [r.getAttribute('class'), r.textContent])"
        )
        assert others and all("node3" not in text and "l0" in cls.split() for cls, text in others), others
        assert js("document.scripts.length") == 0
        assert cdp.console_errors(browser) == []
    finally:
        browser.close()
