"""verify's output: a summary for people (rich), and a JSON document for machines.

People see only what failed (the nodes, then the cluster, then the all-reduce), each with its
fix, the same finding on many nodes or NPUs as one row naming them as a range
(``node[0001-4096] npu[0-7]``), and one line counting the rest. Machines get every result,
passed and skipped included, with its evidence (``--format json``); the bundle's results.json is
the verdict document (:func:`bundle_document`): every result but the passed ones in full, the
passed ones counted per check.
"""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from rich.console import Console

from ascendprep.base.findings import Finding, Severity
from ascendprep.base.hostrange import compressed
from ascendprep.base.text import markup_safe
from ascendprep.report import SCHEMA_VERSION
from ascendprep.report.findings import findings_table
from ascendprep.report.jsondoc import Entries
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.model import CheckResult, Status

CLUSTER = "cluster"
ALLREDUCE = "all-reduce"


def summary(results: Sequence[CheckResult], extra: Iterable[Finding] = ()) -> Dict[str, int]:
    """Counts by status, and failed results (plus ``extra`` findings) by severity.

    The statuses are counted by ``list.count`` (identity first, in C), not a Counter: an Enum
    member hashes in Python, and there are ~170 results per host."""
    statuses = [r.status for r in results]
    failed = Status.FAILED
    severities = Counter([r.severity for r in results if r.status is failed] + [f.severity for f in extra])
    return {
        "passed": statuses.count(Status.PASSED),
        "failed": statuses.count(failed),
        "skipped": statuses.count(Status.SKIPPED),
        "errors": severities[Severity.ERROR],
        "warnings": severities[Severity.WARNING],
    }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(counts: Dict[str, int]) -> str:
    parts = [f"{_plural(counts['passed'], 'check')} passed"]
    if counts["failed"]:
        detail = ", ".join(
            p
            for p in (
                _plural(counts["errors"], "error") if counts["errors"] else "",
                _plural(counts["warnings"], "warning") if counts["warnings"] else "",
            )
            if p
        )
        parts.append(f"{counts['failed']} failed ({detail})" if detail else f"{counts['failed']} failed")
    if counts["skipped"]:
        parts.append(f"{counts['skipped']} skipped")
    return " · ".join(parts)


def grouped_findings(
    results: Sequence[CheckResult], node_order: Sequence[str], extra: Sequence[Finding] = ()
) -> Dict[str, List[Finding]]:
    """Failed results as findings, per node in inventory order, then cluster, then all-reduce."""
    groups: Dict[str, List[Finding]] = {name: [] for name in node_order}
    groups[CLUSTER] = []
    failed = Status.FAILED
    for result in results:
        if result.status is not failed:
            continue
        finding = result.finding()
        assert finding is not None
        key = CLUSTER if result.check.startswith("cluster.") or result.node not in groups else result.node
        groups[key].append(finding)
    if extra:
        groups[ALLREDUCE] = list(extra)
    return {name: findings for name, findings in groups.items() if findings}


def print_verify(
    console: Console,
    results: Sequence[CheckResult],
    hosts: Dict[str, HostEvidence],
    node_order: Sequence[str],
    extra: Sequence[Finding] = (),
    bundle: Optional[str] = None,
    counts: Optional[Dict[str, int]] = None,
) -> None:
    """The text report. ``counts``: :func:`summary` of ``results`` and ``extra`` when the caller
    has it already (verify's document holds it: one pass over ~170 results per host less)."""
    groups = grouped_findings(results, node_order, extra)
    on_nodes = [name for name in groups if name not in (CLUSTER, ALLREDUCE)]
    sections = [
        (f"nodes {compressed(on_nodes)}", [f for name in on_nodes for f in groups[name]]),
        ("cluster", groups.get(CLUSTER, [])),
        ("all-reduce", groups.get(ALLREDUCE, [])),
    ]
    for title, findings in sections:
        if findings:
            # One row per distinct finding, naming its hosts as a range (node[0001-4096]);
            # findings_table shows messages as plain text: tool output ("[/path/pair.cc:553]") is never markup.
            console.print(findings_table(findings, f"{markup_safe(title)}: {_plural(len(findings), 'failed check')}"))
    if counts is None:
        counts = summary(results, extra)
    console.print(summary_line(counts))
    if bundle:
        shown_path = markup_safe(bundle)
        console.print(
            f"Evidence saved in {shown_path} (re-check it offline with: ascendprep verify --from-bundle {shown_path})"
        )
    if counts["errors"]:
        console.print(f"[bold red]verify failed: {_plural(counts['errors'], 'error')}[/]")
    elif counts["warnings"]:
        console.print(f"[yellow]verify passed with {_plural(counts['warnings'], 'warning')}[/]")
    else:
        console.print("[green]verify passed[/]")


def verify_document(
    *,
    inventory: Dict[str, Any],
    results: Sequence[CheckResult],
    hosts: Dict[str, HostEvidence],
    ssh_execs: Dict[str, int],
    mesh: str,
    selection: Dict[str, List[str]],
    exit_code: int,
    extra: Sequence[Finding] = (),
    allreduce: Optional[Dict[str, Any]] = None,
    bundle: Optional[str] = None,
    from_bundle: Optional[str] = None,
    lazy_checks: bool = False,
) -> Dict[str, Any]:
    """The ``--format json`` document (``schema_version``); the bundle saves its verdict
    (:func:`bundle_document`).

    ``lazy_checks``: ``"checks"`` is a :class:`~ascendprep.report.jsondoc.Entries` whose dicts are
    made only while :func:`~ascendprep.report.jsondoc.json_chunks` writes them (verify itself:
    ~43 KB per host not held); without it a plain list, for any JSON encoder."""
    failed = Status.FAILED
    findings = [r.finding() for r in results if r.status is failed]
    if lazy_checks:
        checks: Any = Entries(results, CheckResult.to_dict)
    else:
        checks = [r.to_dict() for r in results]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "verify",
        "inventory": inventory,
        "exit_code": exit_code,
        "summary": summary(results, extra),
        "mesh": mesh,
        "selection": selection,
        "hosts": {
            name: {
                "address": host.address,
                "reachable": host.facts is not None,
                "error": host.error,
                "error_kind": host.error_kind,
                "gather_seconds": round(host.seconds, 3),
                "pings": None if host.pings is None else len(host.pings),
                "ping_error": host.ping_error,
                "ping_seconds": round(host.ping_seconds, 3),
                "ssh_execs": ssh_execs.get(name),
            }
            for name, host in hosts.items()
        },
        "checks": checks,
        "findings": [f.to_dict() for f in findings if f is not None] + [f.to_dict() for f in extra],
        "allreduce": allreduce,
        "bundle": bundle,
        "from_bundle": from_bundle,
    }


#: results.json's key naming the command that gives every result, passed ones with their evidence.
FULL_KEY = "full"


def passed_by_check(results: Iterable[CheckResult]) -> Dict[str, Dict[str, Any]]:
    """The passed results per check id, in the order the ids first appear: how many, and on which
    nodes as a host range (``{"count": 8192, "nodes": "node[0001-1024]"}``). A result about no node
    in particular (a cluster check, a ping pair) is named :data:`CLUSTER` among the nodes."""
    passed = Status.PASSED
    counts: Counter = Counter()
    nodes: Dict[str, Dict[str, None]] = {}  # per check, its nodes in order, each once
    for result in results:
        if result.status is passed:
            counts[result.check] += 1
            nodes.setdefault(result.check, {})[CLUSTER if result.node is None else result.node] = None
    ranges: Dict[Tuple[str, ...], str] = {}  # most checks pass on the same nodes (all): one range each
    counted: Dict[str, Dict[str, Any]] = {}
    for check, on in nodes.items():
        key = tuple(on)
        if key not in ranges:
            ranges[key] = compressed(key)
        counted[check] = {"count": counts[check], "nodes": ranges[key]}
    return counted


def bundle_document(document: Dict[str, Any], results: Sequence[CheckResult]) -> Dict[str, Any]:
    """The bundle's results.json: the verdict of ``document`` (:func:`verify_document` over
    ``results``, with what the caller added), with its keys in their order, except that ``"checks"``
    holds only the results that did not pass (failed, skipped: each in full, as in ``document``),
    followed by ``"passed"`` (:func:`passed_by_check`) and ``"full"``, the command that re-derives
    every result with its evidence from the bundle's transcripts.

    Why not the whole document: ~170 results per host, nearly all passed with their evidence, were
    ~70 KB of JSON per host to encode and gzip that nobody asked for in
    text mode, and that ``verify --from-bundle DIR --format json`` gives back exactly. Passed
    results are never made into dicts here; the others are made while json_chunks writes them."""

    passed = Status.PASSED
    verdict: Dict[str, Any] = {}
    for key, value in document.items():
        if key != "checks":
            verdict[key] = value
            continue
        verdict["checks"] = Entries([r for r in results if r.status is not passed], CheckResult.to_dict)
        verdict["passed"] = passed_by_check(results)
        where = document.get("bundle")
        verdict[FULL_KEY] = (
            f"ascendprep verify --from-bundle {shlex.quote(where) if where else '<bundle folder>'} --format json"
        )
    return verdict
