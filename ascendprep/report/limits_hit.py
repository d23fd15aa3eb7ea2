"""Which limits a run hit, as data: the ``limits_hit`` list of ``--format json`` output.

A limit that was hit is never silent: its host's result already says so in words ("timed out in
gathering facts", "could not read ...: output over 256 KB"); this list names the limit itself
(as the README's "Limits" table does) so that a script can tell a sick host from a limit set too
low, and which knob to turn.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from ascendprep.base import limits
from ascendprep.facts.failures import OVER_CAP_KIND
from ascendprep.facts.model import HostFacts

#: Name of the node-side per-call output cap in ``limits_hit`` entries.
REMOTE_CALL_OUTPUT_CAP_NAME = "remote_call_output_cap"


def output_cap_hits(
    facts_by_host: Mapping[str, Optional[HostFacts]], cap: int = limits.REMOTE_CALL_OUTPUT_CAP
) -> List[Dict[str, Any]]:
    """One entry per host whose tool output the node cut, naming the probes."""
    hits = []
    for host, facts in facts_by_host.items():
        if facts is None:
            continue
        cut = [e for e in facts.errors if e.kind == OVER_CAP_KIND]
        if cut:
            hits.append(
                {
                    "limit": REMOTE_CALL_OUTPUT_CAP_NAME,
                    "bytes": cap,
                    "override": limits.REMOTE_CALL_OUTPUT_CAP_ENV,
                    "host": host,
                    "probes": [{"probe": e.probe, "npu": e.npu} for e in cut],
                }
            )
    return hits


def collect_limits_hit(
    session_hits: Iterable[Dict[str, Any]],
    facts_by_host: Mapping[str, Optional[HostFacts]],
    cap: int = limits.REMOTE_CALL_OUTPUT_CAP,
) -> List[Dict[str, Any]]:
    """The session's own hits (the command deadline) followed by the per-host output cuts."""
    return [dict(hit) for hit in session_hits] + output_cap_hits(facts_by_host, cap)
