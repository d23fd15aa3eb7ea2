"""The README's picture of ``verify --html``: the page rendered from the test evidence with faults
(tests/html_evidence.py: a link down, a lost pair, an unreachable node, a straggler, a
hostile version string), opened in headless Chromium, its top captured to docs/verify-html.png.

    PYTHONPATH=. python3 scripts/html_screenshot.py [OUT.png]
"""

from __future__ import annotations

import base64
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]

import cdp  # noqa: E402
from html_evidence import faulty_input  # noqa: E402

from ascendprep.base.outputfile import write_file  # noqa: E402
from ascendprep.report.html import render_html  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "verify-html.png"
    binary = cdp.find_chromium()
    if binary is None:
        sys.exit("no chromium on PATH (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        write_file(page, render_html(faulty_input()))
        browser = cdp.Browser(binary)
        try:
            session = cdp.open_page(browser, page.as_uri())
            browser.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1100, "height": 1700, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            shot = browser.send(
                "Page.captureScreenshot",
                {"format": "png", "clip": {"x": 0, "y": 0, "width": 1100, "height": 1700, "scale": 0.75}},
                session=session,
            )
        finally:
            browser.close()
    out.write_bytes(base64.b64decode(shot["data"]))
    print(out)


if __name__ == "__main__":
    main()
