"""Plan changes and apply results, as tables for people and documents for machines.

Every value in a table comes from an inventory, a plan file or a host, so it is escaped: a tool
message such as ``[/home/x/ip.c:553]`` is text, never rich markup.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from rich.markup import escape
from rich.table import Table

from ascendprep.plan import Change, HostPlan


def changes_table(plans: Iterable[HostPlan]) -> Table:
    """One row per change, grouped by host; unreachable and incomplete hosts say so."""
    table = Table(title="Changes", title_justify="left")
    table.add_column("host")
    table.add_column("change", overflow="fold")
    for plan in plans:
        if not plan.reachable:
            table.add_row(f"[red]{escape(plan.node)}[/]", f"[red]not planned: {escape(str(plan.error))}[/]")
            continue
        for change in plan.changes:
            table.add_row(escape(plan.node), escape(change.summary))
        for reason in plan.incomplete:
            table.add_row(f"[yellow]{escape(plan.node)}[/]", f"[yellow]incomplete: {escape(reason)}[/]")
        if not plan.changes and not plan.incomplete:
            table.add_row(escape(plan.node), "[green]no changes[/]")
    return table


def plan_document(plans: list[HostPlan], plan_path: Optional[str], schema_version: int) -> dict[str, Any]:
    return {
        "schema_version": schema_version,
        "kind": "plan",
        "mode": "online",
        "plan_file": plan_path,
        "complete": all(p.reachable and not p.incomplete for p in plans),
        "changes": sum(len(p.changes) for p in plans),
        "hosts": [
            {
                "node": p.node,
                "address": p.address,
                "reachable": p.reachable,
                "error": p.error,
                "incomplete": p.incomplete,
                "changes": [{k: v for k, v in c.to_dict().items() if k != "action"} for c in p.changes],
                "findings": [f.to_dict() for f in p.findings],
            }
            for p in plans
        ],
    }


def outcome_label(rc: int) -> str:
    if rc == 0:
        return "[green]ok[/]"
    if rc == -1:
        return "[yellow]skipped[/]"
    return f"[red]failed (rc {rc})[/]"


def apply_table(rows: list[tuple[str, Change, Optional[int], str]]) -> Table:
    """``rows``: (host, change, rc or None when the step never ran, the tool's message)."""
    table = Table(title="Apply", title_justify="left")
    table.add_column("host")
    table.add_column("change", overflow="fold")
    table.add_column("result")
    table.add_column("message", overflow="fold")
    for host, change, rc, message in rows:
        table.add_row(escape(host), escape(change.summary), outcome_label(rc) if rc is not None else "[red]did not run[/]", escape(message))
    return table
