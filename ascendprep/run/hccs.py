"""The HCCS ping phase of verify on A3 (the host edge; the plan and verdicts are checks/hccs.py).

After the facts (which hold each die's pod and vNIC) and beside the RoCE pings: one script per
node that has HCCS pairs to send, over the Session's connection to that node, all nodes at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional, Sequence

from ascendprep.base.limits import HCCS_PING_BUSY_RETRIES, HCCS_PING_TIMEOUT_S
from ascendprep.desired.state import DesiredState
from ascendprep.facts.hccs import parse_hccs_output, render_hccs_script
from ascendprep.remote.access import HostAccess
from ascendprep.remote.transport import Transport
from ascendprep.run.execvia import ExecVia, wrap_step
from ascendprep.run.fanout import Session
from ascendprep.run.progress import Progress
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.hccs import HccsPair, by_source, plan_for


def hccs_script_budget(count: int) -> float:
    """Wall-clock limit for ``count`` HCCS pings: each may run to its limit after busy retries."""
    return 30.0 + count * (HCCS_PING_TIMEOUT_S + 3 + HCCS_PING_BUSY_RETRIES)


def run_hccs(
    session: Session,
    desired: DesiredState,
    hosts: Dict[str, HostEvidence],
    progress: Optional[Progress] = None,
    planned: Optional[Sequence[HccsPair]] = None,
    exec_via: Optional[ExecVia] = None,
) -> Dict[str, HostEvidence]:
    """``hosts`` with each source node's HCCS results (or why they are missing) filled in.

    ``planned``: the pairs to send (``verify --local``: :func:`ascendprep.verify.checks.hccs.plan_local`);
    None: the plan of ``hosts``' facts, as an SSH run makes it. ``exec_via``: each node's script
    runs through this wrapper (the job's container).
    """
    work = by_source(
        planned if planned is not None else plan_for(desired, {name: host.facts for name, host in hosts.items()})
    )
    if not work:
        return hosts

    def job(transport: Transport, access: HostAccess):
        pairs = work[access.name]
        script = render_hccs_script(pairs, per_command_timeout=HCCS_PING_TIMEOUT_S, busy_retries=HCCS_PING_BUSY_RETRIES)
        script = wrap_step(script, exec_via, access.name, "HCCS ping")
        result = transport.run_script(script, timeout=max(hccs_script_budget(len(pairs)), access.command_timeout or 0))
        return result

    out = dict(hosts)
    targets = [h for h in session.hosts if h.name in work]
    for name, outcome in session.run(job, progress, hosts=targets, step="HCCS pings within each super-pod").items():
        host = out[name]
        if outcome.ok and outcome.value is not None:
            result = outcome.value
            problem = (
                f"the HCCS ping script ran past its time limit after {result.seconds:.0f}s and was killed"
                if result.timed_out
                else None
            )
            out[name] = replace(
                host, hccs_pings=tuple(parse_hccs_output(result.stdout)), hccs_error=problem, hccs_stdout=result.stdout
            )
        else:
            out[name] = replace(host, hccs_error=outcome.error or "the HCCS ping script failed")
    return out
