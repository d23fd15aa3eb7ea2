"""verify --html at scale: the page's size and render time over simulated hosts.

For each size, ``verify --html`` runs over bench/scale_sim.py's simulated fleet (the real
gather parsing, checks and reports), then ``verify --from-bundle RUN --html`` re-renders the
saved bundle. ``render_html`` is timed where verify calls it. A converged fleet has no finding,
so each page is also rendered once more with every node failing (an error on every NPU, ten
findings about the node, long evidence, every ping lost): the largest page the fleet can make.
With Chromium on PATH, the seconds it takes to load each page are measured too.

    PYTHONPATH=. python3 bench/bench_html.py --sizes 1024,4096
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))


def everything_failing(data):
    """``data`` with every node failing: an error on every NPU and ten about the node, each with
    long evidence, and every ping lost (the largest page this fleet can make)."""
    from ascendprep.base.findings import Severity
    from ascendprep.verify.checks.model import CheckResult, Status

    evidence = {"reading": "x" * 500, "expected": "y" * 500}
    failing = [
        CheckResult(
            "network.link",
            Status.FAILED,
            Severity.ERROR,
            f"link status is DOWN on NPU {npu}",
            node,
            npu,
            fix="check the cable and the switch port",
            evidence=evidence,
        )
        for node in data.node_order
        for npu in range(8)
    ]
    failing += [
        CheckResult(
            f"node.fault{i}",
            Status.FAILED,
            Severity.WARNING,
            "a node-level finding " + "z" * 150,
            node,
            fix="fix it",
            evidence=evidence,
        )
        for node in data.node_order
        for i in range(10)
    ]
    hosts = {
        name: replace(
            host,
            pings=tuple(
                replace(p, ok=False, received=0, loss_percent=100.0, error="3 of 3 packets lost")
                for p in host.pings or ()
            ),
        )
        for name, host in data.hosts.items()
    }
    return replace(data, results=[*data.results, *failing], hosts=hosts, exit_code=1)


def open_seconds(page: Path):
    """Seconds headless Chromium takes to load ``page`` (None without Chromium)."""
    sys.path[:0] = [str(BENCH.parent / "tests")]
    import cdp

    binary = cdp.find_chromium()
    if binary is None:
        return None
    browser = cdp.Browser(binary)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Page.enable", session=session)
        started = time.perf_counter()
        browser.send("Page.navigate", {"url": page.as_uri()}, session=session)
        browser.wait_event("Page.loadEventFired", timeout=120)
        cdp.evaluate(browser, session, "document.body.getBoundingClientRect().height")  # layout done
        return round(time.perf_counter() - started, 2)
    finally:
        browser.close()


def run(hosts: int, workdir: Path) -> dict:
    import scale_sim

    from ascendprep.commands.verify import run_verify
    from ascendprep.commands.verify_run import VerifyOptions
    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.load import load_inventory
    from ascendprep.report import html
    from ascendprep.run import fanout

    inventory = scale_sim.write_scale_inventory(workdir, hosts)
    fleet = scale_sim.SimulatedFleet(build_desired(load_inventory(inventory)), scale_sim.CONVERGED)
    fanout.Session._connect_ssh = lambda self, access: fleet.transport_for(access)  # type: ignore[method-assign]
    timings: list = []
    worst: dict = {}
    real_render = html.render_html

    def timed(data: html.HtmlInput) -> str:
        started = time.process_time()
        page = real_render(data)
        timings.append((time.process_time() - started, len(page.encode())))
        if not worst:
            started = time.process_time()
            text = real_render(everything_failing(data))
            worst.update(seconds=time.process_time() - started, bytes=len(text.encode()))
            (workdir / "worst.html").write_text(text)
        return page

    html.render_html = timed
    os.chdir(workdir)
    out = {"hosts": hosts}
    with open(workdir / "report.out", "w") as sink, contextlib.redirect_stdout(sink):
        code = run_verify(
            VerifyOptions(inventory=inventory, forks=256, runs_dir=workdir / "runs", html=workdir / "live.html")
        )
        bundle = next((workdir / "runs").iterdir())
        code2 = run_verify(VerifyOptions(inventory=None, from_bundle=bundle, html=workdir / "bundle.html"))
    out.update(
        exit=code,
        exit_from_bundle=code2,
        live_render_s=round(timings[0][0], 2),
        live_bytes=timings[0][1],
        bundle_render_s=round(timings[1][0], 2),
        bundle_bytes=timings[1][1],
        all_faulty_render_s=round(worst["seconds"], 2),
        all_faulty_bytes=worst["bytes"],
        file_mode=oct((workdir / "live.html").stat().st_mode & 0o777),
        open_s=open_seconds(workdir / "live.html"),
        all_faulty_open_s=open_seconds(workdir / "worst.html"),
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1024,4096")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="ap-html-") as tmp:
            print(json.dumps(run(size, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
