"""The diagnosis of a failed job, for people (the answer first, in one block) and for machines
(``--format json``, with ``schema_version``).

The first block answers the operator's question: which rank(s), on which node, which NPU (device
id and device IP), what fault, what to do, which rule decided, and the evidence lines as
``file:line``; and which verify check would have caught the fault before the job. Where no rule
decided, it says so and lists the suspects. The rest follows: every fault found (root causes
first), the files skipped and why. Text from the logs reaches the terminal through base/text.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, TextIO

import jinja2
import markupsafe
from rich.console import Console

from ascendprep.base.text import markup_safe, visible
from ascendprep.diagnose.analyse import Diagnosis, JobDiagnosis
from ascendprep.diagnose.model import Cause, Culprit, Event, Verdict
from ascendprep.report import console as report_console
from ascendprep.report.jsondoc import write_json

SCHEMA_VERSION = 1
#: Evidence lines shown per verdict and per fault on the terminal (the JSON keeps all it has).
SHOWN_EVIDENCE = 4
#: Characters of one evidence line shown on the terminal.
SHOWN_LINE_CHARS = 240
#: Characters of one value from the logs on the --html page.
HTML_VALUE_MAX_CHARS = 2000


def _line(event: Event) -> str:
    text = event.text if len(event.text) <= SHOWN_LINE_CHARS else event.text[:SHOWN_LINE_CHARS] + " …"
    return f"  {markup_safe(event.where)}: {markup_safe(text)}"


def _culprits(culprits: List[Culprit]) -> str:
    return "; ".join(markup_safe(c.label) for c in culprits)


def _answer(console: Console, result: JobDiagnosis, many: bool) -> None:
    title = f"Job {markup_safe(result.job.name)}" if many else "Diagnosis"
    size = result.job.world_size
    console.print(f"[bold]{title}[/bold]" + (f" ({size} ranks)" if size else ""))
    verdict: Optional[Verdict] = result.verdict
    fault: Optional[Cause] = result.fault
    if verdict is None and not result.causes:
        console.print("No error in this job's logs that diagnose knows of.")
        return
    if verdict is not None:
        console.print(f"[bold red]Root cause[/bold red]: {_culprits(list(verdict.culprits))}")
    else:
        console.print("[bold yellow]No rule decided the root rank.[/bold yellow]")
        if result.suspects:
            console.print(
                f"Suspects: {_culprits(result.suspects[:16])}"
                + (f" and {len(result.suspects) - 16} more" if len(result.suspects) > 16 else "")
            )
    if fault is not None:
        console.print(f"Fault: {markup_safe(fault.title)} ({markup_safe(fault.component)}): {markup_safe(fault.cause)}")
        console.print(f"Fix: {markup_safe(fault.fix)}")
        if fault.vendor_level:
            console.print(f"Vendor's fault level: {markup_safe(fault.vendor_level)}")
        if fault.checks:
            console.print(f"Verify would have caught it before the job: {markup_safe(', '.join(fault.checks))}")
    if verdict is not None:
        console.print(f"Decided by rule [bold]{verdict.rule}[/bold]: {markup_safe(verdict.reason)}")
    for note in result.baseline:
        console.print(f"Baseline (verify before the job): {markup_safe(note.sentence())}", highlight=False)
    evidence = list(verdict.evidence if verdict is not None else ())
    if fault is not None:
        evidence += [e for e in fault.events if e not in evidence][:2]
    if evidence:
        console.print("Evidence:")
        for event in evidence[: SHOWN_EVIDENCE + 2]:
            console.print(_line(event), soft_wrap=True, highlight=False)


def _rest(console: Console, result: JobDiagnosis) -> None:
    if result.causes:
        console.print("\nFaults found (root causes first):")
        for cause in result.causes:
            mark = "root" if cause.root else "explained by " + ", ".join(cause.explained_by)
            places = sorted({e.node for e in cause.events})
            where = ", ".join(places[:6]) + (f" +{len(places) - 6}" if len(places) > 6 else "")
            console.print(
                f"  {markup_safe(cause.key)}: {markup_safe(cause.title)}, {cause.count} line(s) on {markup_safe(where)} ({markup_safe(mark)})",
                highlight=False,
            )
    undecided = [v for v in result.verdicts if not v.decided]
    for verdict in undecided:
        console.print(f"  rule {verdict.rule}: {markup_safe(verdict.reason)}", highlight=False)


def print_diagnosis(result: Diagnosis, console: Optional[Console] = None) -> None:
    out = console or report_console()
    many = len(result.jobs) > 1
    if many:
        out.print(
            f"[bold]{len(result.jobs)} jobs[/bold] in these logs (told apart by their communicators, diagnosed apart):"
        )
        for job in result.jobs:
            out.print(f"  {markup_safe(job.job.name)}: {len(job.job.processes)} plogs")
        out.print()
    for job in result.jobs:
        _answer(out, job, many)
        _rest(out, job)
        out.print()
    lines = sum(s.lines for s in result.stats.values())
    cut = sum(s.truncated_lines for s in result.stats.values())
    out.print(
        f"Read {len(result.files)} files, {lines:,} lines"
        + (f" ({cut} lines longer than the cap were cut)" if cut else "")
        + "."
    )
    cut_files = [log.path for log in result.files if log.cut]
    if cut_files:
        out.print(
            f"{len(cut_files)} file(s) were cut by collect (their oldest lines are missing): {markup_safe(', '.join(cut_files[:5]))}"
        )
    if result.skipped:
        out.print(f"Skipped {len(result.skipped)}:")
        for skipped in result.skipped[:20]:
            out.print(f"  {markup_safe(skipped.path)}: {markup_safe(skipped.reason)}", highlight=False)
        if len(result.skipped) > 20:
            out.print(f"  ... and {len(result.skipped) - 20} more (--format json lists all)")


def _verdict_dict(verdict: Verdict) -> Dict[str, Any]:
    return {
        "rule": verdict.rule,
        "decided": verdict.decided,
        "culprits": [c.to_dict() for c in verdict.culprits],
        "suspects": [c.to_dict() for c in verdict.suspects],
        "reason": verdict.reason,
        "evidence": [e.to_dict() for e in verdict.evidence],
    }


def _cause_dict(cause: Cause) -> Dict[str, Any]:
    return {
        "key": cause.key,
        "title": cause.title,
        "cause": cause.cause,
        "fix": cause.fix,
        "severity": cause.severity,
        "component": cause.component,
        "layer": cause.layer,
        "verify_checks": list(cause.checks),
        "source": cause.source,
        "root": cause.root,
        "vendor_level": cause.vendor_level,
        "explained_by": cause.explained_by,
        "count": cause.count,
        "evidence": [e.to_dict() for e in cause.events],
    }


def diagnosis_document(result: Diagnosis) -> Dict[str, Any]:
    """The JSON document of ``--format json`` (its schema: docs/when-a-job-fails.md)."""
    jobs = []
    for job in result.jobs:
        jobs.append(
            {
                "name": job.job.name,
                "ranks": job.job.world_size,
                "decided": job.verdict is not None,
                "root": _verdict_dict(job.verdict) if job.verdict else None,
                "fault": _cause_dict(job.fault) if job.fault else None,
                "suspects": [c.to_dict() for c in job.suspects],
                "baseline": [
                    {
                        "node": note.node,
                        "npu": note.npu,
                        "in_baseline": note.known,
                        "findings": [f.to_dict() for f in note.findings],
                        "drift": list(note.drift),
                        "compared": note.compared,
                    }
                    for note in job.baseline
                ],
                "rules": [_verdict_dict(v) for v in job.verdicts],
                "causes": [_cause_dict(c) for c in job.causes],
                "processes": [
                    {
                        "node": p.node,
                        "pid": p.pid,
                        "rank": p.rank,
                        "device": p.device,
                        "device_ip": p.device_ip,
                        "file": p.file,
                    }
                    for p in job.job.processes.values()
                ],
            }
        )
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "ascendprep-diagnosis",
        "decided": result.decided,
        "jobs": jobs,
        "files": [
            {
                "path": log.path,
                "node": log.node,
                "kind": log.kind,
                "cut": log.cut,
                "lines": result.stats[log.path].lines if log.path in result.stats else None,
                "truncated_lines": result.stats[log.path].truncated_lines if log.path in result.stats else None,
            }
            for log in result.files
        ],
        "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
    }


def _finalize(value: Any) -> Any:
    """Strings from the logs with control characters spelled out and cut (as verify's page does)."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return visible(value, HTML_VALUE_MAX_CHARS)
    return value


def render_html(result: Diagnosis, generated: Optional[datetime] = None) -> str:
    """The ``--html`` page: one self-contained file (inline CSS, no script), verify's page style."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ascendprep.report", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    doc = diagnosis_document(result)
    return env.get_template("diagnose.html.j2").render(doc=doc, title="ascendprep diagnose", generated=when)


def write_json_diagnosis(result: Diagnosis, stream: TextIO) -> None:
    write_json(diagnosis_document(result), stream)
    stream.write("\n")


__all__ = ["print_diagnosis", "write_json_diagnosis", "diagnosis_document", "render_html"]
