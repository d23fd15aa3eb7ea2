"""A findings table, shared by plan and verify."""

from __future__ import annotations

from typing import Iterable

from rich.table import Table

from ascendprep.findings import Finding, Severity
from ascendprep.report.text import cell

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def findings_table(findings: Iterable[Finding], title: str = "Findings") -> Table:
    """Every cell is plain text (messages quote tool output and LLDP names); ``title`` is ours."""
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
        table.add_row(cell(finding.severity.value, STYLE[finding.severity]), cell(finding.id), cell(where), cell(finding.message), cell(finding.fix))
    return table
