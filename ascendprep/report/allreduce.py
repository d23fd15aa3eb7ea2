"""How an all-reduce run looks to a person: a table per message size, then what went wrong.

The columns are nccl-tests': size, time of the slowest rank, algorithm and bus bandwidth, and
the count of wrong elements; the slowest rank is named so that a straggler has an address.
Like nccl-tests the table ends with two lines, wrong elements and average busbw, OK or FAIL.
"""

from __future__ import annotations

import statistics
from typing import Tuple

from rich.console import Console
from rich.table import Table

from ascendprep.base.text import markup_safe as escape
from ascendprep.base.text import visible
from ascendprep.verify.allreduce.gates import BUSBW, RANK_TABLE, WRONG_ELEMENTS, complete_rows
from ascendprep.verify.allreduce.outcome import AllreduceOutcome
from ascendprep.verify.allreduce.results import AllreduceVerdict
from ascendprep.verify.allreduce.sizes import format_size


def sizes_table(verdict: AllreduceVerdict, title: str = "") -> Table:
    """One row per message size, as every rank measured it (the slowest rank's time)."""
    table = Table(title=title or None, title_justify="left")
    table.add_column("size", justify="right")
    table.add_column("time (us)", justify="right")
    table.add_column("algbw (GB/s)", justify="right")
    table.add_column("busbw (GB/s)", justify="right")
    table.add_column("#wrong", justify="right")
    table.add_column("ranks", justify="right")
    table.add_column("slowest rank")
    for row in verdict.sizes:
        wrong = f"[bold red]{row.wrong_elements}[/]" if row.wrong_elements else "0"
        table.add_row(
            format_size(row.bytes),
            f"{row.time_us:.1f}",
            f"{row.algbw_GBps:.4g}",
            f"{row.busbw_GBps:.4g}",
            wrong,
            str(row.ranks_reporting),
            f"{row.slowest_rank} ({row.slowest_node})",
        )
    return table


def print_allreduce(console: Console, outcome: AllreduceOutcome) -> None:
    """Everything a person needs: the per-size table, failures, each failed node's last log lines."""
    verdict = outcome.verdict
    settings = outcome.settings
    if settings is not None and verdict is not None:
        nodes = len(settings.nproc_by_node)
        title = (
            f"All-reduce: {verdict.world_size} ranks on {nodes} node{'s' if nodes != 1 else ''}, "
            f"backend {verdict.backend or '?'} (run {outcome.run_id})"
        )
        if verdict.sizes:
            console.print(sizes_table(verdict, title))
        else:
            console.print(f"{escape(title)}: no message size was measured")
        # nccl-tests' closing lines: wrong elements, then the average bus bandwidth.
        for line in footer_lines(verdict):
            console.print(escape(line), soft_wrap=True)
        for warning in verdict.warnings:
            console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
        for reason in verdict.reasons:
            console.print(f"[red]failed:[/] {escape(reason)}", soft_wrap=True)
    for problem in outcome.problems:
        console.print(f"[bold red]error:[/] {escape(problem)}", soft_wrap=True)
    for node in outcome.nodes:
        if node.problem is None:
            continue
        console.print(f"[bold red]{escape(node.node)}:[/] {escape(node.problem.message)}", soft_wrap=True)
        if node.problem.fix:
            console.print(f"  fix: {escape(node.problem.fix)}", soft_wrap=True)
        if node.log_tail:
            console.print(f"  last lines of {escape(node.node)}'s torchrun log:", soft_wrap=True)
            for line in node.log_tail.splitlines():
                console.print(visible(f"    {node.node}| {line}"), markup=False, highlight=False, soft_wrap=True)
    if outcome.bisect is not None:
        console.print(f"bisect: {escape(outcome.bisect.note)}", soft_wrap=True)
        for name, why in outcome.bisect.suspects.items():
            console.print(f"  [bold]{escape(name)}[/]: {escape(why)}", soft_wrap=True)
    state = "[green]all-reduce passed[/]" if outcome.passed else "[bold red]all-reduce failed[/]"
    console.print(f"{state} in {outcome.seconds:.1f}s")


def footer_lines(verdict: "AllreduceVerdict") -> Tuple[str, ...]:
    """nccl-tests' closing two lines, ours: the wrong-element count and the average busbw,
    each with OK or FAIL and, on FAIL, the reason; then, where a rank table is in use, a third:
    whether every rank found itself in it (the ``rank_table`` gate).

    The average is over the sizes every rank measured, as nccl-tests averages over its sizes;
    the floor is judged at the largest of them (small sizes measure latency, not the fabric).
    """
    wrong = verdict.gate_named(WRONG_ELEMENTS)
    first = f"wrong elements: {wrong.figure} " + ("OK" if wrong.ok else f"FAIL ({wrong.reason})")
    busbw = verdict.gate_named(BUSBW)
    complete = complete_rows(verdict.sizes, verdict.world_size)
    if complete:
        average = statistics.fmean(row.busbw_GBps for row in complete)
        measured = f"{average:.4g} GB/s over {len(complete)} size{'' if len(complete) == 1 else 's'}"
    else:
        measured = "none (no size was measured by every rank)"
    floor = verdict.busbw_floor
    if floor is None:
        second = f"avg busbw: {measured} (no floor set: --min-busbw)"
    elif busbw.ok:
        second = f"avg busbw: {measured} OK ({busbw.figure}, floor {floor.min_busbw_GBps:g} GB/s)"
    else:
        second = f"avg busbw: {measured} FAIL ({busbw.reason})"
    table = verdict.gate_named(RANK_TABLE)
    if table.ok and table.figure == "not in use":
        return first, second
    return first, second, f"rank table: {table.figure} " + ("OK" if table.ok else f"FAIL ({table.reason})")
