"""Plan changes and apply results, as tables for people and documents for machines.

Every value in a table comes from an inventory, a plan file or a host, so it is escaped: a tool
message such as ``[/home/x/ip.c:553]`` is text, never rich markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from rich.table import Table
from rich.text import Text

from ascendprep.base.text import cell
from ascendprep.plan.changes import Change
from ascendprep.report.grouping import collapse_npu_lines, group_hosts, merge_host_steps

if TYPE_CHECKING:
    from ascendprep.plan.diff import HostPlan


def _without_npu(change: Change) -> str:
    """:meth:`Change.describe` less its ``npu N: `` lead, so equal changes on several NPUs can merge."""
    text = change.describe()
    lead = f"npu {change.npu}: "
    return text[len(lead) :] if change.npu is not None and text.startswith(lead) else text


def _host_lines(plan: "HostPlan") -> list[tuple[str, str]]:
    """One host's lines as (style, text): the same change on NPUs 0-7 is one ``npu[0-7]`` line, and
    addresses that follow the plan in step with the NPU one ``npu[0-7]: ip none → 10.20.0.[1-8]``."""
    if not plan.reachable:
        return [("red", f"not planned: {plan.error}")]
    lines = [
        ("", f"{label}: {rest}" if label else rest)
        for label, rest in collapse_npu_lines((c.npu, _without_npu(c)) for c in plan.changes)
    ]
    lines.extend(("yellow", f"incomplete: {reason}") for reason in plan.incomplete)
    if not plan.changes and not plan.incomplete:
        lines.append(("green", "no changes"))
    return lines


def changes_table(plans: Iterable["HostPlan"]) -> Table:
    """One row per distinct change line, naming the hosts it applies to as a range
    (``node[0001-4096]``); unreachable and incomplete hosts say so. Lines that differ in any
    character (a device IP) stay apart, so no host's value is hidden, except NPU-stepped lines
    that consecutive hosts continue (``merge_host_steps``: one range of values, read in order)."""
    table = Table(title="Changes", title_justify="left")
    table.add_column("hosts", overflow="fold")
    table.add_column("count", justify="right")
    table.add_column("change", overflow="fold")
    plans = list(plans)
    grouped = group_hosts((plan.node, line) for plan in plans for line in _host_lines(plan))
    for group in merge_host_steps(grouped, [plan.node for plan in plans]):
        style, text = group.key  # type: ignore[misc]
        host_style = style if style in ("red", "yellow") else ""
        table.add_row(cell(group.where, host_style), str(len(group.hosts)), cell(text, style))
    return table


def plan_document(plans: list["HostPlan"], plan_path: Optional[str], schema_version: int) -> dict[str, Any]:
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
                "changes": [{**c.entry(), "key": c.key} for c in p.changes],
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

    Rows equal in result and message merge as the plan's changes do: NPUs of a host into
    ``npu[0-7]`` (equal changes, or addresses in step with the NPU index: ``npu[0-7]: ip none →
    10.20.0.[1-8]``), then hosts into a range (``node[0001-4096]``), NPU-stepped lines that
    consecutive hosts continue included, so a clean apply of a large cluster is a few lines (and
    costs no table row per change to print) and a failure stands out with its own message.
    Every cell is plain text: the tool's message is whatever the host printed."""
    by_host: dict[str, dict[tuple[Optional[int], str], list[tuple[Optional[int], str]]]] = {}
    for host, change, rc, message in rows:
        by_host.setdefault(host, {}).setdefault((rc, message), []).append((change.npu, _without_npu(change)))
    pairs = []
    for host, outcomes in by_host.items():
        for outcome, lines in outcomes.items():
            for label, text in collapse_npu_lines(lines):
                pairs.append((host, (outcome, f"{label}: {text}" if label else text)))
    table = Table(title="Apply", title_justify="left")
    table.add_column("hosts", overflow="fold")
    table.add_column("count", justify="right")
    table.add_column("change", overflow="fold")
    table.add_column("result")
    table.add_column("message", overflow="fold")
    for group in merge_host_steps(group_hosts(pairs), list(by_host)):
        (rc, message), text = group.key  # type: ignore[misc]
        table.add_row(
            cell(group.where),
            str(len(group.hosts)),
            cell(text),
            outcome_label(rc) if rc is not None else cell("did not run", "red"),
            cell(message),
        )
    return table
