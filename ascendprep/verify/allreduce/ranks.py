"""Rank lists as people read them: ``0-3, 7, 9-10`` rather than a thousand numbers."""

from __future__ import annotations

from typing import Iterable, List, Sequence


def compress_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` -> ``'0-3, 7, 9-10'``: readable for a thousand ranks."""
    ordered = sorted(set(ranks))
    spans: List[str] = []
    start = previous = None
    for rank in ordered + [None]:
        if rank is not None and previous is not None and rank == previous + 1:
            previous = rank
            continue
        if start is not None:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = rank
    return ", ".join(spans)


def short_list(items: Sequence[str], limit: int = 8) -> str:
    """The first ``limit`` items and how many more."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
