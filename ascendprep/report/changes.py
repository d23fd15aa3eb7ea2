"""Plan changes and apply results, as tables for people and documents for machines.

Every value in a table comes from an inventory, a plan file or a host, so it is escaped: a tool
message such as ``[/home/x/ip.c:553]`` is text, never rich markup.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from rich.table import Table
from rich.text import Text

from ascendprep.plan import Change, HostPlan
from ascendprep.report.text import cell


def changes_table(plans: Iterable[HostPlan]) -> Table:
    """One row per change, grouped by host; unreachable and incomplete hosts say so."""
    table = Table(title="Changes", title_justify="left")
    table.add_column("host")
    table.add_column("change", overflow="fold")
    for plan in plans:
        if not plan.reachable:
            table.add_row(cell(plan.node, "red"), cell(f"not planned: {plan.error}", "red"))
            continue
        for change in plan.changes:
            table.add_row(cell(plan.node), cell(change.summary))
        for reason in plan.incomplete:
            table.add_row(cell(plan.node, "yellow"), cell(f"incomplete: {reason}", "yellow"))
        if not plan.changes and not plan.incomplete:
            table.add_row(cell(plan.node), cell("no changes", "green"))
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


def outcome_label(rc: int) -> Text:
    if rc == 0:
        return cell("ok", "green")
    if rc == -1:
        return cell("skipped", "yellow")
    return cell(f"failed (rc {rc})", "red")


def apply_table(rows: list[tuple[str, Change, Optional[int], str]]) -> Table:
    """``rows``: (host, change, rc or None when the step never ran, the tool's message).

    Every cell is plain text: the tool's message is whatever the host printed."""
    table = Table(title="Apply", title_justify="left")
    table.add_column("host")
    table.add_column("change", overflow="fold")
    table.add_column("result")
    table.add_column("message", overflow="fold")
    for host, change, rc, message in rows:
        table.add_row(cell(host), cell(change.summary), outcome_label(rc) if rc is not None else cell("did not run", "red"), cell(message))
    return table
