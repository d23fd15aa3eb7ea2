"""A findings table, shared by plan and verify.

The same finding on many hosts (or NPUs) is one row naming them as a range, as
:mod:`ascendprep.report.grouping` does for changes: at 4,096 nodes a rule broken everywhere is one
line, not 4,096. Only findings equal in severity, id, message and fix merge, so a message that
quotes a host's own value stays on its own row. ``--format json`` keeps every finding.
"""

from __future__ import annotations

from typing import Iterable

from rich.table import Table

from ascendprep.base.findings import Finding, Severity
from ascendprep.base.text import cell
from ascendprep.report.grouping import collapse_npus, group_hosts

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
#: Where a finding about no node in particular is said to be.
CLUSTER = "cluster"


def grouped_rows(findings: Iterable[Finding]) -> list[tuple[Severity, str, str, str, str]]:
    """(severity, id, where, message, fix) rows, most severe first, then first-seen order.

    ``where`` is ``node[01-64] npu[0-7]``: the NPUs of one node merge when everything else is
    equal, then nodes with the same row merge."""
    by_node: dict[str, list[Finding]] = {}
    for finding in findings:
        by_node.setdefault(finding.node or CLUSTER, []).append(finding)
    pairs = []
    for node, found in by_node.items():
        for npus, (severity, fid, message, fix) in collapse_npus(
            (f.npu, (f.severity, f.id, f.message, f.fix)) for f in found
        ):
            pairs.append((node, (severity, fid, npus, message, fix)))
    rows = []
    for group in group_hosts(pairs):
        severity, fid, npus, message, fix = group.key  # type: ignore[misc]
        rows.append((severity, fid, f"{group.where} {npus}" if npus else group.where, message, fix))
    return sorted(rows, key=lambda row: ORDER[row[0]])


def findings_table(findings: Iterable[Finding], title: str = "Findings") -> Table:
    """Every cell is plain text (messages quote tool output and LLDP names); ``title`` is ours."""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("severity")
    table.add_column("id")
    table.add_column("where", overflow="fold")
    table.add_column("finding", overflow="fold")
    table.add_column("fix", overflow="fold")
    for severity, fid, where, message, fix in grouped_rows(findings):
        table.add_row(cell(severity.value, STYLE[severity]), cell(fid), cell(where), cell(message), cell(fix))
    return table
