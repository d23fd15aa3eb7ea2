"""A findings table, shared by plan and verify."""

from __future__ import annotations

from typing import Iterable

from rich.markup import escape
from rich.table import Table

from ascendprep.findings import Finding, Severity

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def findings_table(findings: Iterable[Finding], title: str = "Findings") -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("severity")
    table.add_column("id")
    table.add_column("where")
    table.add_column("finding", overflow="fold")
    table.add_column("fix", overflow="fold")
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    for finding in sorted(findings, key=lambda f: (order[f.severity], f.node or "", f.npu if f.npu is not None else -1, f.id)):
        where = finding.node or "cluster"
        if finding.npu is not None:
            where += f" npu {finding.npu}"
        table.add_row(f"[{STYLE[finding.severity]}]{finding.severity.value}[/]", escape(finding.id), escape(where), escape(finding.message), escape(finding.fix))
    return table
