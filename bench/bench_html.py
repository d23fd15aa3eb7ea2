"""verify --html at scale: the page's size and render time over simulated hosts.

For each size, ``verify --html`` runs over bench/scale_sim.py's simulated fleet (the real
gather parsing, checks and reports), then ``verify --from-bundle RUN --html`` re-renders the
saved bundle. ``render_html`` is timed where verify calls it. A converged fleet has no finding,
so each page is also rendered once more with every node failing (an error on every NPU, ten
findings about the node, long evidence, every ping lost, every HCCS pair of 48-server super-pods
lost, an all-reduce of 8 ranks per node with every 100th rank straggling, a plan changing every
NPU's address): the largest page the fleet can make.
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
                # no reply, so no reply time either (hccn_tool prints "recv time out seq=N")
                replace(
                    p,
                    ok=False,
                    received=0,
                    loss_percent=100.0,
                    error="3 of 3 packets lost",
                    average_ms=None,
                    max_ms=None,
                )
                for p in host.pings or ()
            ),
        )
        for name, host in data.hosts.items()
    }
    hosts, hccs = _hccs_all_failing(data.node_order, hosts)
    return replace(
        data,
        results=[*data.results, *failing, *hccs],
        hosts=hosts,
        exit_code=1,
        allreduce_doc=_allreduce_with_stragglers(data.node_order),
        plan=_plan_changing_everything(data.node_order),
        plan_path="plan.json",
    )


def half_slow(data):
    """``data`` with every ping of every other node's NPUs answered slowly (40 ms, no loss): about
    half the cells of the latency view are slow and carry a tooltip, the most it can have (when
    most pairs are slow, slow is typical)."""
    slow_nodes = set(data.node_order[1::2])
    hosts = {
        name: replace(host, pings=tuple(replace(p, average_ms=40.0, max_ms=52.0) for p in host.pings or ()))
        if name in slow_nodes
        else host
        for name, host in data.hosts.items()
    }
    return replace(data, hosts=hosts)


def _hccs_all_failing(nodes, hosts):
    """Super-pods of 48 servers (as A3's) and every HCCS pair of their ring failed: each die to the
    same die of the next server and to the next die of its plane."""
    from ascendprep.base.findings import Severity
    from ascendprep.facts.model import SuperPodDie
    from ascendprep.verify.checks.model import CheckResult, Status

    out = dict(hosts)
    results = []
    for i, node in enumerate(nodes):
        pod, index = divmod(i, 48)
        facts = hosts[node].facts
        if facts is not None:
            dies = {d: SuperPodDie(d // 2, d % 2, d, pod, index, 48) for d in range(8)}
            out[node] = replace(hosts[node], facts=replace(facts, superpod=dies))
        following = nodes[pod * 48 + (index + 1) % min(48, len(nodes) - pod * 48)]
        for die in range(8):
            for peer, peer_die in ((following, die), (node, (die + 2) % 8)):
                results.append(
                    CheckResult(
                        "cluster.hccs",
                        Status.FAILED,
                        Severity.ERROR,
                        f"HCCS {node} device {die} (NPU {die // 2} die {die % 2}, vNIC 192.{index}.2.{199 - die}) <-> "
                        f"{peer} device {peer_die}: 3 packets transmitted, 0 received, 100.00% packets loss",
                        peer,
                        peer_die,
                        subject=f"{node}:{die}<->{peer}:{peer_die}",
                        fix="check the HCCS link of both dies",
                        evidence={
                            "from": {"node": node, "device": die},
                            "to": {"node": peer, "device": peer_die},
                            "sent": 3,
                            "received": 0,
                            "loss_percent": 100.0,
                        },
                    )
                )
    return out, results


def _allreduce_with_stragglers(nodes):
    """An all-reduce over 8 ranks per node whose every 100th rank straggles at the largest size."""
    ranks = [[r, nodes[r // 8], 3000.0 if r % 100 == 7 else 1000.0 + r % 13] for r in range(8 * len(nodes))]
    sizes = [
        {
            "bytes": 1 << (10 + 4 * i),
            "time_us": 30.0 * 2**i,
            "algbw_GBps": 1.0 + i,
            "busbw_GBps": 2.0 + 2 * i,
            "median_us": 30.0 * 2**i,
            "slowest_rank": 7,
            "slowest_node": nodes[0],
        }
        for i in range(6)
    ]
    stragglers = [{"rank": r, "node": n, "sizes": [1 << 30], "worst_ratio": 3.0} for r, n, t in ranks if t == 3000.0]
    return {
        "run_id": "bench",
        "passed": False,
        "problems": [],
        "verdict": {
            "world_size": len(ranks),
            "backend": "hccl",
            "sizes": sizes,
            "stragglers": stragglers,
            "straggler_rule": {"ratio": 1.5, "floor_us": 100.0, "min_ranks": 3},
            "busbw_floor": {"min_busbw_GBps": 15.0},
            "rank_times": {"bytes": 1 << 30, "median_us": 1006.0, "ranks": ranks},
        },
    }


def _plan_changing_everything(nodes):
    """A saved plan setting every NPU's address and a sysctl on every node."""
    from ascendprep.plan.changes import SetNpuAddress, SetSysctl
    from ascendprep.plan.planfile import PlanFile, SavedHost

    return PlanFile(
        "/bench/inventory.yaml",
        "0" * 64,
        "bench",
        "2026-01-01T00:00:00+00:00",
        [
            SavedHost(
                node,
                f"10.{i // 256}.{i % 256}.1",
                True,
                [
                    *(
                        SetNpuAddress(
                            node,
                            {"device": None, "file": None},
                            npu,
                            f"10.{20 + npu}.{i // 256}.{i % 256}",
                            "255.255.0.0",
                        )
                        for npu in range(8)
                    ),
                    SetSysctl(node, "4096", "net.core.somaxconn", "65535"),
                ],
            )
            for i, node in enumerate(nodes)
        ],
    )


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

    from ascendprep.desired.state import build_desired
    from ascendprep.inventory.load import load_inventory
    from ascendprep.report import html
    from ascendprep.run import fanout
    from ascendprep.run import verify as flow
    from ascendprep.run.verify import run_verify
    from ascendprep.run.verify_run import VerifyOptions

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
            slow = real_render(half_slow(data))
            worst.update(slow_bytes=len(slow.encode()))
            (workdir / "slow.html").write_text(slow)
        return page

    flow.render_html = timed  # where verify calls it
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
        half_slow_bytes=worst["slow_bytes"],
        half_slow_open_s=open_seconds(workdir / "slow.html"),
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
