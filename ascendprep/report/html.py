"""``verify --html FILE``: the verdict as one self-contained HTML page an operator looks at.

Top to bottom: the verdict and the findings that block a job (with node, NPU and fix); a grid of
nodes x NPUs coloured by the worst finding, each cell a link to that node's evidence; the NPU
reachability matrix as a heat map; the all-reduce (bandwidth against message size, the line rate
and the ``--min-busbw`` gate, stragglers); grey failures (optical power per lane against the
module's thresholds, counter rates against theirs); the software stack across the fleet.

The page needs nothing when opened: the styles are inline and the charts are SVG drawn by the
Jinja2 template (``templates/verify.html.j2``) from the geometry this module computes; there is
no script at all. Every value from a host reaches the page through Jinja2's autoescape, and its
control characters are spelled out first (:func:`ascendprep.base.text.visible`).

A large fleet is folded, then listed: healthy nodes become host ranges, only nodes with findings
get a grid row and an evidence block (at most :data:`NODES_LISTED_MAX`), and the reachability
matrix groups nodes until it has at most :data:`MATRIX_CELLS_MAX` cells.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import jinja2
import markupsafe

from ascendprep.base.findings import Finding, Severity
from ascendprep.base.hostrange import compressed
from ascendprep.base.text import visible
from ascendprep.desired.state import DesiredState
from ascendprep.plan.planfile import PlanFile
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.counters import JUDGED
from ascendprep.verify.checks.hccs import node_pod
from ascendprep.verify.checks.model import COULD_NOT_CHECK, CheckResult, Status
from ascendprep.verify.checks.reachability import Baseline, baseline
from ascendprep.verify.mesh import PingPlan

#: Up to this many nodes every node has its grid row; above, healthy nodes are folded into ranges.
GRID_ALL_NODES_MAX = 256
#: Grid rows and evidence blocks listed at most (the rest are named as ranges).
NODES_LISTED_MAX = 400
#: Findings listed per node in its evidence block, while the page's budget lasts.
FINDINGS_PER_NODE_MAX = 40
#: Findings listed over all nodes; past it each node lists its worst few (the JSON has them all).
FINDINGS_LISTED_MAX = 1000
FINDINGS_PER_NODE_PAST_BUDGET = 2
#: Characters of a finding's evidence shown.
EVIDENCE_CHARS = 300
#: Groups of blocking findings shown under the verdict.
BLOCKERS_MAX = 25
#: Rows (and columns) of the reachability matrix at most, all planes together; above, nodes are grouped.
MATRIX_SIDE_MAX = 512
#: Cells drawn at most (a full mesh fills whole bands): nodes are grouped further until it holds.
MATRIX_CELLS_MAX = 6000
#: Failed pairs listed under the matrix.
PAIRS_LISTED_MAX = 200
#: A3 super-pods whose HCCS matrix is drawn, those with a failing pair first; every pod has its
#: row in the table above them.
HCCS_PODS_DRAWN_MAX = 4
#: Cells of the drawn HCCS matrices together, shared evenly: a pod's nodes are grouped until
#: its share holds (a 48-server pod of 16 dies fits 3,072 cells ungrouped).
HCCS_CELLS_MAX = 800
#: Failing HCCS pairs listed under the maps, all pods together.
HCCS_PAIRS_LISTED_MAX = 50
#: Optical lanes charted: those closest to their module's receive-power thresholds.
LANES_CHARTED = 40
#: Points of the per-rank time chart; above, each point is the slowest of consecutive ranks.
RANK_POINTS_MAX = 512
#: Straggler ranks listed under the per-rank chart.
RANK_STRAGGLERS_LISTED_MAX = 50
#: Counter results charted: the highest rate against its threshold.
COUNTERS_CHARTED = 40
#: Hosts of a plan listed with their changes, and changes listed over all of them (the plan file
#: has every one; ``ascendprep plan`` prints them).
PLAN_HOSTS_LISTED_MAX = 100
PLAN_CHANGES_LISTED_MAX = 300
#: Characters of a grid cell's tooltip: its worst finding's message, cut.
CELL_TIP_CHARS = 80
#: An evidence value longer than this is cut (a host can print megabytes).
VALUE_MAX_CHARS = 2000

_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}
#: Grid/matrix cell class per worst rank: ok, info, warning, error; ``x``: nothing gathered.
_CLASS = {0: "ok", 1: "info", 2: "warn", 3: "err"}
_COUNTERS_CHECK = "network.counters"
_HCCS_CHECK = "cluster.hccs"
#: A judged counter's metric name (as a passed result's evidence lists its rate) -> its threshold's name.
_THRESHOLD_OF = {judged.metric: judged.threshold for judged in JUDGED}
#: A judged pair of a heat map: plane, node, peer plane, peer node (indexes), level, its text.
Judged = Tuple[int, int, int, int, int, str]


@dataclass
class HtmlInput:
    """What the page is made of: a verify run's results and evidence, live or from a bundle."""

    desired: DesiredState
    results: Sequence[CheckResult]
    hosts: Mapping[str, HostEvidence]
    node_order: Sequence[str]
    pings: Optional[PingPlan]
    exit_code: int
    allreduce_doc: Optional[Dict[str, Any]] = None
    allreduce_findings: Sequence[Finding] = ()
    source: str = ""
    #: ``--plan FILE``: the saved plan whose changes the page lists, and the path it was given as.
    plan: Optional[PlanFile] = None
    plan_path: str = ""
    generated: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


def _clean(value: Any) -> Any:
    """Jinja2's finalize: strings with control characters spelled out and cut; other values as they are."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):  # Markup: the template's own macros
        return visible(value, VALUE_MAX_CHARS)
    return value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ascendprep.report", "templates"),
        autoescape=True,
        finalize=_clean,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["gb"] = lambda v: "-" if v is None else f"{v:.4g}"
    env.filters["size"] = _size_label
    return env


def render_html(data: HtmlInput) -> str:
    """The whole page as text (UTF-8 when written)."""
    return _environment().get_template("verify.html.j2").render(page=page_model(data))


# --- the model the template draws -------------------------------------------------------------


def page_model(data: HtmlInput) -> Dict[str, Any]:
    failed = [r for r in data.results if r.status is Status.FAILED]
    counts = Counter(r.status.value for r in data.results)
    return {
        "title": f"ascendprep verify: {data.desired.inventory.name}",
        "inventory": data.desired.inventory.name,
        "product": data.desired.inventory.product.title,
        "generated": data.generated.strftime("%Y-%m-%d %H:%M UTC"),
        "source": data.source,
        "passed": data.exit_code == 0,
        "exit_code": data.exit_code,
        "nodes": len(data.node_order),
        "counts": {
            "passed": counts.get("passed", 0),
            "failed": counts.get("failed", 0),
            "skipped": counts.get("skipped", 0),
        },
        "blockers": _blockers(failed, data.allreduce_findings),
        "grid": _grid(data, failed),
        "matrix": _matrix(data),
        "hccs": _hccs(data),
        "allreduce": _allreduce(data),
        "optics": _optics(data),
        "counters": _counters(data.results),
        "versions": _versions(data),
        "plan": _plan(data),
    }


def _rank(result: CheckResult) -> int:
    return _RANK.get(result.severity, 1)


def _blockers(failed: Sequence[CheckResult], extra: Sequence[Finding]) -> Dict[str, Any]:
    """Failed results grouped by check and message, errors first, each with its nodes and fix."""
    groups: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
    rows: Iterable[Tuple[str, Severity, str, str, Optional[str], Optional[int]]] = [
        *((r.check, r.severity, r.message, r.fix, r.node, r.npu) for r in failed),
        *((f.id, f.severity, f.message, f.fix, f.node, f.npu) for f in extra),
    ]
    for check, severity, message, fix, node, npu in rows:
        group = groups.setdefault(
            (check, severity.value, message),
            {
                "check": check,
                "severity": severity.value,
                "rank": _RANK.get(severity, 1),
                "message": message,
                "fix": fix,
                "where": [],
            },
        )
        group["where"].append(node if npu is None else f"{node} npu {npu}" if node else f"npu {npu}")
    ordered = sorted(groups.values(), key=lambda g: (-g["rank"], -len(g["where"]), g["check"]))
    for group in ordered:
        where = [w for w in group["where"] if w]
        nodes = [w for w in where if " npu " not in w]
        npus = [w for w in where if " npu " in w]
        shown = ([compressed(nodes)] if nodes else []) + npus[:8]
        group["where"] = (", ".join(shown) + (f" and {len(npus) - 8} more NPUs" if len(npus) > 8 else "")) or "cluster"
        group["count"] = len(where) or 1
    return {"shown": ordered[:BLOCKERS_MAX], "more": max(0, len(ordered) - BLOCKERS_MAX)}


def _grid(data: HtmlInput, failed: Sequence[CheckResult]) -> Dict[str, Any]:
    """Per node: the worst finding of the node itself and of each NPU, and its findings."""
    by_node: Dict[str, List[CheckResult]] = {}
    for result in failed:
        if result.node is not None:
            by_node.setdefault(result.node, []).append(result)
    width = max((len(data.desired.nodes[n].hccn) for n in data.node_order if n in data.desired.nodes), default=0)
    rows: List[Dict[str, Any]] = []
    healthy: List[str] = []
    budget = FINDINGS_LISTED_MAX
    for index, name in enumerate(data.node_order):
        host = data.hosts.get(name)
        mine = by_node.get(name, [])
        gathered = host is not None and host.gathered
        if not mine and gathered and len(data.node_order) > GRID_ALL_NODES_MAX:
            healthy.append(name)
            continue
        npus = [h.npu for h in data.desired.nodes[name].hccn] if name in data.desired.nodes else []
        worst_npu: Dict[int, int] = {}
        node_worst = 0
        for result in mine:
            if result.npu is None:
                node_worst = max(node_worst, _rank(result))
            else:
                worst_npu[result.npu] = max(worst_npu.get(result.npu, 0), _rank(result))
        cells = []
        for npu in npus:
            found = [r for r in mine if r.npu == npu]
            cls = "x" if not gathered else _CLASS[max(worst_npu.get(npu, 0), 0)]
            # the worst finding, cut: a cell per NPU of every node listed (its evidence block has them all)
            worst = max(found, key=_rank) if found else None
            tip = (
                f"{worst.check}: {_short(worst.message, CELL_TIP_CHARS)}"
                + (f" (+{len(found) - 1} more)" if len(found) > 1 else "")
                if worst is not None
                else "not gathered"
                if not gathered
                else "no finding"
            )
            cells.append({"npu": npu, "cls": cls, "tip": f"{name} npu {npu}: {tip}"})
        ordered = sorted(mine, key=lambda r: (-_rank(r), r.npu if r.npu is not None else -1, r.check))
        listed = min(len(ordered), FINDINGS_PER_NODE_MAX if budget > 0 else FINDINGS_PER_NODE_PAST_BUDGET)
        budget -= listed
        rows.append(
            {
                "name": name,
                "anchor": f"node-{index}",
                "cls": "x" if not gathered else _CLASS[node_worst],
                "error": None if gathered or host is None else host.error,
                "cells": cells,
                "pad": width - len(cells),
                "findings": [_finding_row(r) for r in ordered[:listed]] if len(rows) < NODES_LISTED_MAX else [],
                "more_findings": len(ordered) - listed,
            }
        )
    shown, folded = rows[:NODES_LISTED_MAX], [r["name"] for r in rows[NODES_LISTED_MAX:]]
    return {
        "width": width,
        "rows": shown,
        "healthy": compressed(healthy) if healthy else "",
        "healthy_count": len(healthy),
        "not_listed": compressed(folded) if folded else "",
        "not_listed_count": len(folded),
    }


def _finding_row(result: CheckResult) -> Dict[str, Any]:
    evidence = _short(
        ", ".join(f"{key}={_short(value)}" for key, value in list(result.evidence.items())[:8]), EVIDENCE_CHARS
    )
    return {
        "check": result.check,
        "severity": result.severity.value,
        "cls": _CLASS[_rank(result)],
        "npu": result.npu,
        "subject": result.subject,
        "message": result.message,
        "fix": result.fix,
        "evidence": evidence,
    }


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _matrix(data: HtmlInput) -> Optional[Dict[str, Any]]:
    """The ping mesh as a heat map: one band per plane (NPU index), one row and column per node
    (or per group of nodes in a large fleet) within it; a cell is the worst loss between them."""
    if data.pings is None or not data.pings.pairs:
        return None
    nodes = list(data.node_order)
    position = {name: i for i, name in enumerate(nodes)}
    planes = sorted({p.a.npu for p in data.pings.pairs} | {p.b.npu for p in data.pings.pairs})
    plane_index = {npu: i for i, npu in enumerate(planes)}
    answers: Dict[Tuple[str, int, str], Any] = {}
    for name, host in data.hosts.items():
        for ping in host.pings or ():
            answers[(name, ping.npu, ping.target)] = ping
    typical = baseline(data.desired, answers.values())
    judged: List[Judged] = []
    latency: List[Optional[int]] = []
    bad: List[Dict[str, Any]] = []
    for pair in data.pings.pairs:
        if pair.a.node not in position or pair.b.node not in position:
            continue  # --hosts: a peer not shown
        average: Optional[float] = None
        if pair.source is None:
            loss, text = None, f"not pinged: {pair.blocked or 'neither end can ping'}"
        else:
            answer = answers.get((pair.source.node, pair.source.npu, pair.target.ip))
            if answer is None:
                loss, text = None, "no answer recorded"
            else:
                loss = answer.loss_percent if answer.loss_percent is not None else (0.0 if answer.ok else 100.0)
                text = f"{loss:g}% loss" + (f" ({answer.error})" if answer.error else "")
                average = answer.average_ms
                if average is not None:
                    text += f", round trip avg {average:.3g} ms" + (
                        f", max {answer.max_ms:.3g} ms" if answer.max_ms is not None else ""
                    )
        level = 4 if loss is None else 3 if loss >= 100 else 2 if loss > 0 else 0
        if level:
            bad.append({"pair": pair.subject, "text": text, "cls": _LEVEL_CLASS[level]})
        tip = f"{pair.subject}: {text}"
        judged.append(
            (plane_index[pair.a.npu], position[pair.a.node], plane_index[pair.b.npu], position[pair.b.node], level, tip)
        )
        latency.append(_latency_level(average, typical) if level < 3 else None)
    return {
        **_heat_map(judged, len(nodes), planes, MATRIX_SIDE_MAX, MATRIX_CELLS_MAX, latency),
        "latency": _latency_scale(typical),
        "mesh": data.pings.mesh,
        "pairs": len(data.pings.pairs),
        "bad": bad[:PAIRS_LISTED_MAX],
        "bad_count": len(bad),
        "first_node": nodes[0] if nodes else "",
        "last_node": nodes[-1] if nodes else "",
    }


#: The latency view's classes, fastest first: within 2x the mesh's typical round trip, within the
#: warning ratio, above it (but within the margin), and slow as ``cluster.reachability`` warns.
_LATENCY_CLASS = {0: "l0", 1: "l1", 2: "l2", 3: "l3"}


def _latency_level(average: Optional[float], typical: Optional[Baseline]) -> Optional[int]:
    """A pair's place on the latency scale; None when it has no round trip or the mesh no baseline."""
    if average is None or typical is None:
        return None
    if typical.slow(average):
        return 3
    if average > typical.ratio * typical.typical_ms:
        return 2
    return 1 if average > 2 * typical.typical_ms else 0


def _latency_scale(typical: Optional[Baseline]) -> Optional[Dict[str, Any]]:
    """The latency view's legend: each class's round trip in milliseconds."""
    if typical is None:
        return None
    return {
        "typical": f"{typical.typical_ms:.3g}",
        "double": f"{2 * typical.typical_ms:.3g}",
        "ratio": f"{typical.ratio:g}",
        "above": f"{typical.ratio * typical.typical_ms:.3g}",
        "margin": f"{typical.margin_ms:g}",
    }


def _heat_map(
    judged: Sequence[Judged],
    node_count: int,
    planes: Sequence[int],
    side_max: int,
    cells_max: int,
    latency: Optional[Sequence[Optional[int]]] = None,
) -> Dict[str, Any]:
    """The cells of a reachability heat map: one band per plane, the nodes in order within it, a
    cell the worst level of its pairs (drawn both ways). Nodes are grouped (2, 4, ... per row and
    column) until the picture has at most ``side_max`` rows and ``cells_max`` cells.

    ``latency``: per judged pair its latency level (:func:`_latency_level`; None for a pair that
    lost everything or has no times). A cell's latency class is its slowest pair's, which the
    page shows instead of the loss colours when its latency view is chosen; a cell with a pair
    that lost everything keeps its loss colour there."""
    per_column = max(1, math.ceil(node_count * len(planes) / side_max))
    while True:
        columns = math.ceil(node_count / per_column)
        cells: Dict[Tuple[int, int], Dict[str, Any]] = {}
        for index, (plane_a, node_a, plane_b, node_b, level, tip) in enumerate(judged):
            slow = latency[index] if latency is not None else None
            a, b = plane_a * columns + node_a // per_column, plane_b * columns + node_b // per_column
            for key in ((a, b), (b, a)) if a != b else ((a, b),):
                cell = cells.setdefault(key, {"level": 0, "pairs": 0, "bad": 0, "tip": tip, "slow": None})
                cell["pairs"] += 1
                if level:
                    cell["bad"] += 1
                if level > cell["level"]:
                    cell["level"], cell["tip"] = level, tip
                if slow is not None and (cell["slow"] is None or slow > cell["slow"]):
                    cell["slow"] = slow
                    if cell["level"] == 0:  # an answered cell's tip names its slowest pair
                        cell["tip"] = tip
        if len(cells) <= cells_max or per_column >= node_count:
            break
        per_column *= 2
    size = columns * len(planes)
    step = max(1.5, min(14.0, 720.0 / max(size, 1)))
    rects = [
        {
            "x": round(x * step, 2),
            "y": round(y * step, 2),
            "cls": _LEVEL_CLASS[c["level"]],
            "marked": c["level"] > 0 or bool(c["slow"]),
            # lost everything or not pinged: the loss colour stays in the latency view too
            "lat": _LATENCY_CLASS[c["slow"]] if c["slow"] is not None and c["level"] < 3 else "",
            "tip": c["tip"] if c["pairs"] == 1 else f"{c['pairs']} pairs, {c['bad']} failing; e.g. {c['tip']}",
        }
        for (x, y), c in sorted(cells.items())
    ]
    bands = [
        {"npu": npu, "at": round(i * columns * step, 2), "mid": round((i + 0.5) * columns * step, 2)}
        for i, npu in enumerate(planes)
    ]
    return {
        "step": round(step, 2),
        "side": round(size * step, 2),
        "rects": rects,
        "bands": bands,
        "per_column": per_column,
    }


def _hccs_level(result: CheckResult) -> int:
    """A pair's level as the RoCE matrix colours it: answered, some loss, no answer, not pinged."""
    if result.status is Status.PASSED:
        return 0
    if result.message.startswith(COULD_NOT_CHECK):
        return 4
    loss, received = result.evidence.get("loss_percent"), result.evidence.get("received")
    if isinstance(loss, (int, float)) and loss < 100 and isinstance(received, int) and received > 0:
        return 2
    return 3


def _hccs_outcome(result: CheckResult, level: int) -> str:
    """A cell's few words: the pair's loss, or why it was not pinged (the list says more)."""
    if level == 4:
        return _short(result.message[len(COULD_NOT_CHECK) :], 80)
    loss = result.evidence.get("loss_percent")
    return f"{loss:g}% loss" if isinstance(loss, (int, float)) else "answered" if level == 0 else "failed"


def _die_end(value: Any) -> Optional[Tuple[str, int]]:
    """``(node, device id)`` of a ``cluster.hccs`` result's ``from``/``to`` evidence, or None."""
    if not isinstance(value, dict):
        return None
    node, device = value.get("node"), value.get("device")
    if isinstance(node, str) and isinstance(device, int) and not isinstance(device, bool):
        return node, device
    return None


def _hccs(data: HtmlInput) -> Optional[Dict[str, Any]]:
    """The A3 HCCS plane per super-pod: the ``cluster.hccs`` pairs (each die to the same die of the
    next server of its pod, and to the next die of its plane in its own server) as one heat map
    per pod, drawn like the RoCE matrix (a band per device id, the pod's nodes in inventory order
    within it). Every pod gets a row of the overview; the pods with failing pairs are drawn
    first, at most :data:`HCCS_PODS_DRAWN_MAX`, each grouped down to :data:`HCCS_CELLS_MAX` cells."""
    pairs: List[Tuple[Tuple[str, int], Tuple[str, int], CheckResult]] = []
    for result in data.results:
        if result.check != _HCCS_CHECK or result.subject is None:
            continue
        source, target = _die_end(result.evidence.get("from")), _die_end(result.evidence.get("to"))
        if source is not None and target is not None:
            pairs.append((source, target, result))
    if not pairs:
        return None
    position = {name: i for i, name in enumerate(data.node_order)}

    def pod_of(node: str) -> Optional[int]:
        host = data.hosts.get(node)
        return node_pod(host.facts) if host is not None else None

    by_pod: Dict[Optional[int], List[Tuple[Tuple[str, int], Tuple[str, int], CheckResult]]] = {}
    for source, target, result in pairs:
        by_pod.setdefault(pod_of(source[0]), []).append((source, target, result))
    pods: List[Dict[str, Any]] = []
    for pod, members in by_pod.items():
        nodes = sorted({end[0] for s, t, _ in members for end in (s, t)}, key=lambda n: position.get(n, len(position)))
        index = {name: i for i, name in enumerate(nodes)}
        planes = sorted({end[1] for s, t, _ in members for end in (s, t)})
        plane_index = {devid: i for i, devid in enumerate(planes)}
        judged: List[Judged] = []
        bad: List[Dict[str, Any]] = []
        for source, target, result in members:
            level = _hccs_level(result)
            if level:
                bad.append(
                    {"pair": result.subject, "text": _short(result.message, EVIDENCE_CHARS), "cls": _LEVEL_CLASS[level]}
                )
            judged.append(
                (
                    plane_index[source[1]],
                    index[source[0]],
                    plane_index[target[1]],
                    index[target[0]],
                    level,
                    f"{result.subject}: {_hccs_outcome(result, level)}",
                )
            )
        pods.append(
            {
                "pod": "?" if pod is None else str(pod),
                "nodes": compressed(nodes),
                "node_count": len(nodes),
                "pairs": len(members),
                "bad": bad,
                "bad_count": len(bad),
                "worst": _LEVEL_CLASS[max((j[4] for j in judged), default=0)],
                "judged": judged,
                "planes": planes,
            }
        )
    pods.sort(key=lambda p: (-p["bad_count"], p["pod"] == "?", int(p["pod"]) if p["pod"] != "?" else 0))
    listed = 0
    share = HCCS_CELLS_MAX // min(len(pods), HCCS_PODS_DRAWN_MAX)
    for rank, pod_row in enumerate(pods):
        judged, planes = pod_row.pop("judged"), pod_row.pop("planes")
        pod_row["anchor"] = f"hccs-pod-{rank}"
        pod_row["drawn"] = rank < HCCS_PODS_DRAWN_MAX
        if pod_row["drawn"]:
            pod_row["map"] = _heat_map(judged, pod_row["node_count"], planes, MATRIX_SIDE_MAX, share)
        shown = pod_row["bad"][: max(0, HCCS_PAIRS_LISTED_MAX - listed)]
        listed += len(shown)
        pod_row["bad"] = shown
    return {
        "pods": pods,
        "pairs": len(pairs),
        "bad_count": sum(p["bad_count"] for p in pods),
        "drawn": sum(1 for p in pods if p["drawn"]),
    }


_LEVEL_CLASS = {0: "ok", 2: "warn", 3: "err", 4: "x"}


def _log_axis(low: float, high: float, width: float) -> Tuple[Any, List[Dict[str, Any]]]:
    """x(value) on a log2 scale over [low, high] and the ticks of powers of 4."""
    lo, hi = math.log2(low), math.log2(max(high, low * 2))

    def x(value: float) -> float:
        return round((math.log2(value) - lo) / (hi - lo) * width, 2)

    ticks = []
    exponent = math.ceil(lo)
    while exponent <= hi:
        if exponent % 2 == 0:
            ticks.append({"x": x(2**exponent), "label": _size_label(2**exponent)})
        exponent += 1
    return x, ticks


def _size_label(value: float) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def _allreduce(data: HtmlInput) -> Optional[Dict[str, Any]]:
    doc = data.allreduce_doc
    if doc is None:
        return None
    verdict = doc.get("verdict") or {}
    sizes = [row for row in verdict.get("sizes") or [] if row.get("bytes")]
    line_rate = data.desired.inventory.product.roce_port_mbps
    line_GBps = line_rate / 8000 if line_rate else None
    floor = verdict.get("busbw_floor") or None
    gate = floor.get("min_busbw_GBps") if floor else None
    chart = None
    width, height = 640.0, 260.0
    if sizes:
        x, ticks = _log_axis(min(r["bytes"] for r in sizes), max(r["bytes"] for r in sizes), width)
        top = (
            max([r["busbw_GBps"] for r in sizes] + [r["algbw_GBps"] for r in sizes] + [line_GBps or 0, gate or 0]) * 1.1
            or 1.0
        )

        def y(value: float) -> float:
            return round(height - value / top * height, 2)

        def series(key: str) -> List[Dict[str, Any]]:
            return [
                {"x": x(r["bytes"]), "y": y(r[key]), "tip": f"{_size_label(r['bytes'])}: {r[key]:.4g} GB/s"}
                for r in sizes
            ]

        chart = {
            "width": width,
            "height": height,
            "ticks": ticks,
            "yticks": [{"y": y(top * i / 4), "label": f"{top * i / 4:.3g}"} for i in range(5)],
            "busbw": series("busbw_GBps"),
            "algbw": series("algbw_GBps"),
            "line": None if line_GBps is None else {"y": y(line_GBps), "label": f"line rate {line_GBps:g} GB/s"},
            "gate": None if gate is None else {"y": y(gate), "label": f"--min-busbw {gate:g} GB/s"},
        }
    ratios = [
        {
            "size": _size_label(r["bytes"]),
            "slowest": r.get("slowest_rank"),
            "node": r.get("slowest_node"),
            "ratio": (r["time_us"] / r["median_us"]) if r.get("median_us") else None,
            "time_us": r["time_us"],
            "median_us": r.get("median_us"),
        }
        for r in sizes
    ]
    rule = verdict.get("straggler_rule") or {}
    top_ratio = max([r["ratio"] for r in ratios if r["ratio"]] + [float(rule.get("ratio", 1.5)) * 1.2, 1.0])
    bars = [
        {
            **r,
            "w": round((r["ratio"] or 0) / top_ratio * 400, 1),
            "straggler": bool(
                r["ratio"]
                and r["ratio"] >= float(rule.get("ratio", 1.5))
                and (r["time_us"] or 0) >= float(rule.get("floor_us", 0))
            ),
        }
        for r in ratios
    ]
    return {
        "passed": bool(doc.get("passed")),
        "run_id": doc.get("run_id"),
        "world_size": verdict.get("world_size"),
        "backend": verdict.get("backend"),
        "reasons": list(verdict.get("reasons") or []) + list(doc.get("problems") or []),
        "chart": chart,
        "rows": sizes,
        "bars": bars,
        "rule_x": round(float(rule.get("ratio", 1.5)) / top_ratio * 400, 1),
        "rule": rule,
        "stragglers": verdict.get("stragglers") or [],
        "floor": floor,
        "per_rank": _rank_chart(verdict, rule),
    }


def _rank_chart(verdict: Mapping[str, Any], rule: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """Every rank's time at the largest message size against the median, the straggler rule's
    line drawn (``ratio`` x the median and at least ``floor_us`` above it, with ``min_ranks``
    measuring) and the ranks over it marked; ranks the rule flagged at other sizes are marked too.
    A large world is drawn as the slowest rank of each run of consecutive ranks, so a straggler
    stays a visible point."""
    times = verdict.get("rank_times")
    if not isinstance(times, dict) or not isinstance(times.get("ranks"), list) or not times["ranks"]:
        return None
    entries = [
        (rank, node, float(time_us))
        for rank, node, time_us in (e for e in times["ranks"] if isinstance(e, list) and len(e) == 3)
        if isinstance(rank, int) and isinstance(node, str) and isinstance(time_us, (int, float))
    ]
    median = times.get("median_us")
    if not entries or not isinstance(median, (int, float)) or median <= 0:
        return None
    ratio, floor_us = float(rule.get("ratio", 1.5)), float(rule.get("floor_us", 100.0))
    judged = len(entries) >= int(rule.get("min_ranks", 3))
    line = max(ratio * median, median + floor_us)
    elsewhere = {s.get("rank") for s in verdict.get("stragglers") or [] if isinstance(s, dict)}

    def straggles(time_us: float) -> bool:
        return judged and time_us > ratio * median and time_us - median >= floor_us

    per_point = max(1, math.ceil(len(entries) / RANK_POINTS_MAX))
    width, height = 640.0, 200.0
    top = max(max(t for _, _, t in entries), line) * 1.1
    count = math.ceil(len(entries) / per_point)
    points = []
    for index in range(count):
        run = entries[index * per_point : (index + 1) * per_point]
        rank, node, time_us = max(run, key=lambda e: e[2])
        slow = straggles(time_us)
        cls = "err straggler" if slow else "warn" if any(e[0] in elsewhere for e in run) else "ok"
        who = (
            f"rank {rank} on {node}"
            if per_point == 1
            else f"ranks {run[0][0]}-{run[-1][0]}, slowest rank {rank} on {node}"
        )
        points.append(
            {
                "x": round((index + 0.5) * width / count, 2),
                "y": round(height - time_us / top * height, 2),
                "cls": cls,
                "tip": f"{who}: {time_us:.4g} us, {time_us / median:.2f}x the median",
            }
        )
    slow_ranks = [
        {"rank": rank, "node": node, "time_us": time_us, "ratio": time_us / median}
        for rank, node, time_us in entries
        if straggles(time_us)
    ]
    return {
        "size": _size_label(int(times.get("bytes") or 0)),
        "ranks": len(entries),
        "per_point": per_point,
        "width": width,
        "height": height,
        "points": points,
        "median": {"y": round(height - median / top * height, 2), "label": f"median {median:.4g} us"},
        "line": {"y": round(height - line / top * height, 2), "label": f"straggler line {line:.4g} us"},
        "yticks": [
            {"y": round(height - top * i / 4 / top * height, 2), "label": f"{top * i / 4:.0f}"} for i in range(5)
        ],
        "slow": slow_ranks[:RANK_STRAGGLERS_LISTED_MAX],
        "slow_count": len(slow_ranks),
        "judged": judged,
    }


def _dbm(mw: Optional[float]) -> Optional[float]:
    return None if mw is None or mw <= 0 else 10 * math.log10(mw)


def _optics(data: HtmlInput) -> Optional[Dict[str, Any]]:
    """Receive power of every lane against its module's own low/high thresholds, closest first."""
    lanes: List[Dict[str, Any]] = []
    for name in data.node_order:
        host = data.hosts.get(name)
        if host is None or host.facts is None:
            continue
        for npu, facts in sorted(host.facts.npus.items()):
            info = facts.optics
            if info is None or not info.lanes:
                continue
            low, high = _dbm(info.thresholds.rx_power_low_mw), _dbm(info.thresholds.rx_power_high_mw)
            for reading in info.lanes:
                power = _dbm(reading.rx_power_mw)
                if power is None or low is None:
                    continue
                margin = power - low
                lanes.append(
                    {
                        "where": f"{name} npu {npu} lane {reading.lane if reading.lane is not None else 0}",
                        "dbm": power,
                        "low": low,
                        "high": high,
                        "margin": margin,
                    }
                )
    if not lanes:
        return None
    lanes.sort(key=lambda lane: lane["margin"])
    shown = lanes[:LANES_CHARTED]
    lo = min(min(lane["low"] for lane in shown), min(lane["dbm"] for lane in shown)) - 1
    hi = (
        max(
            max((lane["high"] if lane["high"] is not None else lane["dbm"]) for lane in shown),
            max(lane["dbm"] for lane in shown),
        )
        + 1
    )
    width = 400.0

    def x(value: float) -> float:
        return round((value - lo) / (hi - lo) * width, 1)

    for lane in shown:
        lane.update(
            x=x(lane["dbm"]),
            xlow=x(lane["low"]),
            xhigh=None if lane["high"] is None else x(lane["high"]),
            cls="err"
            if lane["margin"] < 0 or (lane["high"] is not None and lane["dbm"] > lane["high"])
            else "warn"
            if lane["margin"] < 2
            else "ok",
            text=f"{lane['dbm']:.2f} dBm (low {lane['low']:.2f}"
            + ("" if lane["high"] is None else f", high {lane['high']:.2f}")
            + ")",
        )
    return {"lanes": shown, "total": len(lanes), "width": width, "lo": round(lo, 1), "hi": round(hi, 1)}


def _counters(results: Sequence[CheckResult]) -> Optional[Dict[str, Any]]:
    """Port error and pause counter growth per second against the threshold it was judged by."""
    rows = []
    for result in results:
        if result.check != _COUNTERS_CHECK:
            continue
        evidence = result.evidence
        if result.status is Status.FAILED and "rate_per_s" in evidence:
            limit = (evidence.get("threshold") or {}).get("value")
            rows.append(
                (result.node, result.npu, evidence.get("counter") or result.subject, evidence["rate_per_s"], limit)
            )
        elif result.status is Status.PASSED:
            thresholds = evidence.get("thresholds") or {}
            for metric, rate in (evidence.get("rates_per_s") or {}).items():
                shown = thresholds.get(_THRESHOLD_OF.get(metric, ""))
                if rate and isinstance(shown, dict):
                    rows.append((result.node, result.npu, metric, rate, shown.get("value")))
    if not rows:
        return None
    judged = [
        {
            "where": f"{node} npu {npu}",
            "counter": counter,
            "rate": rate,
            "limit": limit,
            "ratio": (rate / limit) if limit else 0.0,
        }
        for node, npu, counter, rate, limit in rows
    ]
    judged.sort(key=lambda r: -r["ratio"])
    shown = judged[:COUNTERS_CHARTED]
    top = max([r["ratio"] for r in shown] + [1.25])
    for row in shown:
        row.update(
            w=round(min(row["ratio"], top) / top * 400, 1),
            cls="err" if row["ratio"] > 1 else "warn" if row["ratio"] > 0.5 else "ok",
        )
    return {"rows": shown, "total": len(judged), "limit_x": round(400 / top, 1)}


def _versions(data: HtmlInput) -> Dict[str, Any]:
    """One row per distinct software stack, the most common first; the other rows name their nodes."""
    stacks: Dict[Tuple[Optional[str], ...], List[str]] = {}
    for name in data.node_order:
        host = data.hosts.get(name)
        facts = host.facts if host is not None else None
        if facts is None:
            continue
        packages = facts.python.packages if facts.python is not None else {}
        key = (
            facts.versions.driver_version,
            facts.versions.firmware_version,
            facts.versions.cann_version,
            facts.python.python_version if facts.python is not None else None,
            packages.get("torch"),
            packages.get("torch_npu"),
        )
        stacks.setdefault(key, []).append(name)
    rows = sorted(stacks.items(), key=lambda item: -len(item[1]))
    wanted = data.desired.software
    return {
        "columns": ["driver", "firmware", "CANN", "python", "torch", "torch_npu"],
        "wanted": [wanted.get(k) for k in ("driver", "firmware", "cann", "python", "torch", "torch_npu")],
        "rows": [
            {"stack": list(key), "count": len(names), "nodes": compressed(names), "odd": i > 0}
            for i, (key, names) in enumerate(rows)
        ],
    }


def _plan(data: HtmlInput) -> Optional[Dict[str, Any]]:
    """``--plan FILE``: the saved plan's changes per host, each as the line its own kind writes
    (:meth:`Change.describe`, the text ``plan`` printed and ``apply`` confirms), hosts without a
    change folded into a range. The plan file says whether ``apply`` has carried it out."""
    saved = data.plan
    if saved is None:
        return None
    rows: List[Dict[str, Any]] = []
    quiet: List[str] = []
    budget = PLAN_CHANGES_LISTED_MAX
    for host in saved.hosts:
        if not host.changes and host.reachable and not host.incomplete and host.error is None:
            quiet.append(host.node)
            continue
        listed = host.changes[: max(0, budget)] if len(rows) < PLAN_HOSTS_LISTED_MAX else []
        budget -= len(listed)
        rows.append(
            {
                "node": host.node,
                "address": host.address,
                "reachable": host.reachable,
                "error": host.error,
                "incomplete": host.incomplete[:20],
                "changes": [
                    {"kind": change.kind, "target": change.target, "text": change.describe()} for change in listed
                ],
                "count": len(host.changes),
                "more": len(host.changes) - len(listed),
            }
        )
    shown = rows[:PLAN_HOSTS_LISTED_MAX]
    return {
        "path": data.plan_path,
        "cluster": saved.cluster,
        "other_cluster": saved.cluster != data.desired.inventory.name,
        "created_at": saved.created_at,
        "applied_at": saved.applied_at,
        "changes": saved.change_count,
        "complete": saved.complete,
        "hosts": shown,
        "hosts_count": len(saved.hosts),
        "not_listed": compressed([r["node"] for r in rows[PLAN_HOSTS_LISTED_MAX:]]),
        "not_listed_count": max(0, len(rows) - PLAN_HOSTS_LISTED_MAX),
        "quiet": compressed(quiet) if quiet else "",
        "quiet_count": len(quiet),
    }
