"""Rendering the desired state of an offline plan: rich tables for people, JSON for machines."""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Optional

from rich.console import Console, Group
from rich.table import Table

from ascendprep.base.findings import Severity
from ascendprep.base.paths import SYSCTL_FILE
from ascendprep.base.text import cell, markup_safe
from ascendprep.desired.state import DesiredState
from ascendprep.inventory.groups import FLAT, form_of
from ascendprep.inventory.sysctl import format_port_ranges
from ascendprep.report import SCHEMA_VERSION
from ascendprep.report.findings import findings_table
from ascendprep.report.jsondoc import json_chunks


@functools.lru_cache(maxsize=64)
def _sha256(text: str) -> str:
    """Cached: the cluster-wide files (the rank table of a large cluster is megabytes) are the
    same string object on every node and must be hashed once, not once per node."""
    return hashlib.sha256(text.encode()).hexdigest()


def desired_document(desired: DesiredState, mode: str = "offline") -> dict[str, Any]:
    """The offline plan as a JSON-ready document (``schema_version`` versioned)."""
    inventory = desired.inventory
    plan = desired.ipplan
    first = next(iter(desired.nodes.values()))
    cluster_files = {f.path: f for f in first.files if f.scope == "cluster"}
    errors = sum(1 for f in desired.findings if f.severity is Severity.ERROR)
    warnings = sum(1 for f in desired.findings if f.severity is Severity.WARNING)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "plan",
        "mode": mode,
        "cluster": {
            "name": inventory.name,
            "product": inventory.product.id,
            "nodes": len(inventory.nodes),
            "npus": sum(n.npus for n in inventory.nodes),
            "master": inventory.master.name,
            "layout": plan.layout,
            "detect_policy": plan.detect_policy,
            "planes": [
                {
                    "subnet": str(p.network),
                    "gateway": str(p.gateway) if p.gateway else None,
                    "group": plan.groups[p.group].name if _grouped(desired) else None,
                    "rail": p.rail,
                }
                for p in plan.planes
            ],
            "firewall": desired.firewall,
        },
        "software": desired.software,
        "sysctl": {"minimums": first.sysctl_minimums, "reserved_ports": format_port_ranges(first.reserved_ports)},
        "cluster_files": [
            {"path": f.path, "sha256": _sha256(f.content), "content": f.content} for f in cluster_files.values()
        ],
        "nodes": [
            {
                "name": nd.node.name,
                "host": nd.node.host,
                "first_rank": nd.rank,
                "npus": nd.nproc,
                "labels": nd.node.labels,
                "group": _group_name(desired, nd.node.name),
                "torchrun": nd.torchrun,
                "npu": [
                    {
                        "npu": h.npu,
                        "ip": h.ip,
                        "netmask": h.netmask,
                        "gateway": h.gateway,
                        "detect": h.netdetect,
                        "tls": h.tls,
                    }
                    for h in nd.hccn
                ],
                "files": [
                    {
                        "path": f.path,
                        "sha256": _sha256(f.content),
                        **({"content": f.content} if f.scope == "node" else {}),
                    }
                    for f in nd.files
                ],
            }
            for nd in desired.nodes.values()
        ],
        "findings": [f.to_dict() for f in desired.findings],
        "summary": {"errors": errors, "warnings": warnings},
    }


def render_json(desired: DesiredState) -> str:

    return "".join(json_chunks(desired_document(desired)))  # compact: the indenting encoder is pure Python


def _summary(desired: DesiredState) -> Table:
    inventory = desired.inventory
    plan = desired.ipplan
    first = next(iter(desired.nodes.values()))
    table = Table(title=f"Cluster {markup_safe(inventory.name)}", title_justify="left", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    table.add_row("product", cell(inventory.product.title))
    table.add_row("nodes / NPUs", f"{len(inventory.nodes)} / {sum(n.npus for n in inventory.nodes)}")
    table.add_row(
        "master", cell(f"{inventory.master.name} ({inventory.master.host}:{inventory.model.training.master_port})")
    )
    if _grouped(desired):
        kind = "planes" if inventory.product.planes else "rails"
        table.add_row(
            "device groups",
            cell(
                f"{len(plan.groups)} groups ({plan.groups[0].name} … {plan.groups[-1].name}), {plan.plane_count} {kind} each: {len(plan.planes)} subnets (table below)"
            ),
        )
    else:
        planes = ", ".join(f"{p.network}" + (f" via {p.gateway}" if p.gateway else "") for p in plan.planes)
        table.add_row("device subnets", cell(planes))
    table.add_row("layout / detect", cell(f"{plan.layout} / {plan.detect_policy}"))
    for key, value in first.sysctl_minimums.items():
        table.add_row(cell(f"sysctl {key}"), cell(f">= {value}"))
    table.add_row(
        "sysctl net.ipv4.ip_local_reserved_ports", cell(f"host's ranges + {format_port_ranges(first.reserved_ports)}")
    )
    table.add_row("firewall", cell(desired.firewall))
    versions = ", ".join(f"{k} {v}" for k, v in desired.software.items() if v) or "none given"
    table.add_row("expected software", cell(versions))
    table.add_row("python on nodes", cell(inventory.model.software.python_path))
    return table


def _grouped(desired: DesiredState) -> bool:
    """The inventory uses address groups (device_network.groups or rule), even a single one."""
    return form_of(desired.inventory.model.device_network) != FLAT


def _group_name(desired: DesiredState, node: str) -> Optional[str]:
    group = desired.ipplan.group_of(node)
    return group.name if group is not None and _grouped(desired) else None


def _groups_table(desired: DesiredState) -> Table:
    """One row per address group: its nodes and its subnet (and gateway) per rail or plane."""
    plan = desired.ipplan
    kind = "plane" if desired.inventory.product.planes else "rail"
    table = Table(title="Device address groups", title_justify="left")
    table.add_column("group")
    table.add_column("nodes", justify="right")
    table.add_column(f"subnet via gateway, per {kind} 0-{plan.plane_count - 1}")
    for group in plan.groups:
        subnets = ", ".join(
            f"{s}" + (f" via {g}" if g is not None else "") for s, g in zip(group.subnets, group.gateways)
        )
        table.add_row(cell(group.name), str(len(group.nodes)), subnets)
    return table


def _node_table(desired: DesiredState, name: str) -> Table:
    nd = desired.nodes[name]
    group = _group_name(desired, name)
    in_group = f" group {group}" if group else ""
    table = Table(
        title=markup_safe(f"{name} ({nd.node.host}){in_group} ranks {nd.rank}-{nd.rank + nd.nproc - 1}"),
        title_justify="left",
    )
    for column in ("npu", "device ip", "netmask", "gateway", "detect ip", "tls"):
        table.add_column(column)
    for h in nd.hccn:
        table.add_row(
            *(
                cell(v)
                for v in (h.npu, h.ip, h.netmask, h.gateway or "-", h.netdetect or "-", "-" if h.tls is None else h.tls)
            )
        )
    table.caption = cell(f"torchrun: {nd.torchrun}")
    table.caption_justify = "left"
    return table


def _files_table(desired: DesiredState) -> Table:
    first = next(iter(desired.nodes.values()))
    table = Table(title="Files written on every node", title_justify="left")
    table.add_column("path")
    table.add_column("scope")
    table.add_column("sha256 (first node)")
    for f in first.files:
        table.add_row(
            cell(f.path), "identical on every node" if f.scope == "cluster" else "per node", _sha256(f.content)[:16]
        )
    table.add_row(SYSCTL_FILE, "per node (merged with the host's reserved ports)", "-")
    return table


def print_plan(console: Console, desired: DesiredState, node_limit: Optional[int] = None) -> None:
    """Print the offline plan for people; ``node_limit`` caps the per-node tables shown."""
    parts: list[Any] = [_summary(desired)]
    if _grouped(desired):
        parts.append(_groups_table(desired))
    names = list(desired.nodes)
    shown = names if node_limit is None else names[:node_limit]
    parts.extend(_node_table(desired, name) for name in shown)
    if len(shown) < len(names):
        parts.append(f"[dim]… {len(names) - len(shown)} more nodes (use --nodes all or --format json)[/]")
    parts.append(_files_table(desired))
    if desired.findings:
        parts.append(findings_table(desired.findings))
    else:
        parts.append("[green]No rule violations.[/]")
    console.print(Group(*parts))
