"""Plan changes and apply results, as tables for people and documents for machines.

Every value in a table comes from an inventory, a plan file or a host, so it is escaped: a tool
message such as ``[/home/x/ip.c:553]`` is text, never rich markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from rich.table import Table
from rich.text import Text

from ascendprep import sysctl as sysctl_rules
from ascendprep.changes import Change, DisableFirewall, SetNpuAddress, SetNpuGateway, SetNpuNetdetect, SetNpuTls, SetSysctl, WriteFile
from ascendprep.probes.paths import HCCN_CONF
from ascendprep.report.text import cell

if TYPE_CHECKING:
    from ascendprep.plan import HostPlan


def _seen(before: Any, part: str) -> Optional[str]:
    """One source of an NPU change's ``before`` (``device``/``file``); a hand-edited plan may
    hold anything there, so only text counts."""
    value = before.get(part) if isinstance(before, dict) else None
    return value if isinstance(value, str) else None


def _address(change: SetNpuAddress) -> str:
    device, file = _seen(change.before, "device"), _seen(change.before, "file")
    shown = device if device and not device.startswith("/") else "none"
    file_ip = file.split("/")[0] if file else None
    device_ip = device.split("/")[0] if device else None
    if file_ip and file_ip != device_ip:
        note = f" ({HCCN_CONF} says {file_ip})"
    elif device_ip == change.address:
        note = f" (not in {HCCN_CONF})"
    else:
        note = ""
    return f"npu {change.npu}: ip {shown}{note} → {change.after}"


def describe(change: Change) -> str:
    """The line for people about one change (tables, the plan file's ``text``, stale notes)."""
    if isinstance(change, SetNpuAddress):
        return _address(change)
    if isinstance(change, SetNpuGateway):
        return f"npu {change.npu}: gateway {_seen(change.before, 'device') or 'none'} → {change.after}"
    if isinstance(change, SetNpuNetdetect):
        return f"npu {change.npu}: netdetect {_seen(change.before, 'device') or 'none'} → {change.after}"
    if isinstance(change, SetNpuTls):
        return f"npu {change.npu}: tls switch {'unknown' if change.before is None else change.before} → {change.after}"
    if isinstance(change, SetSysctl):
        note = "" if sysctl_rules.is_allowed_key(change.name) else " (opt-in: outside the HCCL allow-list)"
        return f"sysctl {change.name} {change.before or '(empty)'} → {change.value}{note}"
    if isinstance(change, WriteFile):
        return f"{change.path}: {'create' if change.before is None else 'update'}"
    if isinstance(change, DisableFirewall):
        return f"firewall {change.tool}: active → disabled"
    return change.key


def change_entry(change: Change) -> dict[str, Any]:
    """A change as JSON for people and tools: kind, target, values before and after, and the line."""
    return {**change.to_dict(), "text": describe(change)}


def changes_table(plans: Iterable["HostPlan"]) -> Table:
    """One row per change, grouped by host; unreachable and incomplete hosts say so."""
    table = Table(title="Changes", title_justify="left")
    table.add_column("host")
    table.add_column("change", overflow="fold")
    for plan in plans:
        if not plan.reachable:
            table.add_row(cell(plan.node, "red"), cell(f"not planned: {plan.error}", "red"))
            continue
        for change in plan.changes:
            table.add_row(cell(plan.node), cell(describe(change)))
        for reason in plan.incomplete:
            table.add_row(cell(plan.node, "yellow"), cell(f"incomplete: {reason}", "yellow"))
        if not plan.changes and not plan.incomplete:
            table.add_row(cell(plan.node), cell("no changes", "green"))
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
                "changes": [{**change_entry(c), "key": c.key} for c in p.changes],
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
        table.add_row(cell(host), cell(describe(change)), outcome_label(rc) if rc is not None else cell("did not run", "red"), cell(message))
    return table
