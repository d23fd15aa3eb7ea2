"""Say what went wrong on a node, in its own words: preflight answers, torchrun's log, the ranks.

Pure. A run that fails usually fails everywhere at once (torchrun stops every rank when one
fails; ranks time out on a dead peer), so the useful question is *which node started it*. The
answers here are, in order of certainty:

1. the node could not start at all (no set_env.sh, no interpreter, no torch, SSH) -- preflight;
2. its torchrun crashed, was killed, or never joined the rendezvous -- its log;
3. a rank of it failed on its own (not merely waiting for or stopped because of a peer);
4. when every rank only reports a symptom of someone else, the ranks that were *not* waiting
   inside a collective when stopped are the ones the others waited for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from ascendprep.base.paths import SET_ENV_SH
from ascendprep.verify.allreduce.error_codes import with_named_cause
from ascendprep.verify.allreduce.results import CollectedOutput, RankFailure
from ascendprep.verify.allreduce.scripts import NO_SET_ENV_RC, LaunchOutput, Preflight

#: Kinds of node problem, most specific first (reports and tests key on them).
PROBLEM_KINDS = (
    "ssh",
    "set_env_missing",
    "python_missing",
    "python_broken",
    "torch_missing",
    "run_dir",
    "upload_failed",
    "torch_import_failed",
    "rendezvous_failed",
    "killed",
    "timed_out",
    "torchrun_failed",
    "no_result",
    "rank_failed",
    "suspect",
)
#: Kinds that mean "this node is at fault" rather than "this node saw a peer fail".
CULPRIT_KINDS = frozenset(PROBLEM_KINDS) - {"suspect"}
#: Kinds about a node as a whole, not one of its ranks.
NODE_LEVEL_KINDS = CULPRIT_KINDS - {"rank_failed"}

LOG_TAIL_LINES = 15

#: Reasons a rank gives when the fault is elsewhere: it waited for a peer, or was stopped.
_PEER_SYMPTOMS = (
    "a peer rank is dead",
    "stopped by SIG",
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "connection reset",
    "Connection was likely closed",
    "remote server shutdown or crash",
)


@dataclass(frozen=True)
class NodeProblem:
    node: str
    kind: str
    message: str
    fix: str = ""
    log_tail: str = ""

    @property
    def text(self) -> str:
        """The message with the node named, as reports show it."""
        return f"{self.node}: {self.message}"


@dataclass(frozen=True)
class LaunchResult:
    """Everything the control side learnt about one node's launch."""

    node: str
    output: LaunchOutput
    timed_out: bool = False
    remote_error: Optional[str] = None
    remote_kind: Optional[str] = None
    cleaned_up: bool = False
    killed: int = 0
    seconds: float = 0.0


def preflight_problems(node: str, python_path: str, pre: Preflight) -> List[NodeProblem]:
    """Everything that stops ``node`` from launching, each with its fix."""
    problems = []
    if not pre.mkdir_ok:
        problems.append(
            NodeProblem(
                node,
                "run_dir",
                "cannot create the run directory under /tmp",
                "check that /tmp is writable and not full",
            )
        )
    if not pre.set_env:
        problems.append(
            NodeProblem(
                node,
                "set_env_missing",
                f"{SET_ENV_SH} is missing, so the node has no rendezvous or HCCL environment",
                "run 'ascendprep plan' and 'ascendprep apply' first",
            )
        )
    if pre.python == "missing":
        problems.append(
            NodeProblem(
                node,
                "python_missing",
                f"the interpreter {python_path} (software.python_path) does not exist",
                f"install Python there or point software.python_path at the interpreter {node} has",
            )
        )
    elif pre.python == "not-executable":
        problems.append(
            NodeProblem(
                node,
                "python_missing",
                f"{python_path} (software.python_path) is not an executable file",
                "point software.python_path at the interpreter itself",
            )
        )
    elif pre.python == "ok" and pre.probe_rc != 0:
        detail = f": {pre.probe_error}" if pre.probe_error else ""
        problems.append(
            NodeProblem(
                node,
                "python_broken",
                f"{python_path} does not run (exit {pre.probe_rc}){detail}",
                "repair the interpreter or point software.python_path at a working one",
            )
        )
    elif pre.python == "ok" and not pre.torch_found:
        problems.append(
            NodeProblem(
                node,
                "torch_missing",
                f"{python_path} (Python {pre.python_version}) has no torch module",
                f"install torch (and torch_npu) for {python_path}",
            )
        )
    elif pre.python == "ok" and not pre.torchrun_found:
        problems.append(
            NodeProblem(
                node,
                "torch_missing",
                f"torch {pre.torch or ''} under {python_path} has no torch.distributed.run (torchrun)",
                "install a torch with torch.distributed (>= 1.10)",
            )
        )
    elif pre.python == "unknown":
        problems.append(
            NodeProblem(
                node,
                "python_broken",
                f"the preflight script did not report on {python_path}",
                "run the launch by hand to see why",
            )
        )
    return problems


#: Lines of a torchrun log that say nothing about the fault: traceback frames, torchrun's
#: failure summary (it names ranks and pids, which the verdict already does), known warnings.
_NOISE = re.compile(
    r"^(\s*$|  File |    |\s*(time|host|rank|exitcode|error_file|traceback)\s+:|[=*-]{8,}|Root Cause|Failures:"
    r"|\[\d+\]:$|Traceback \(most recent call last\)|.*The hostname of the client socket cannot be retrieved"
    r"|Setting OMP_NUM_THREADS|.* FAILED$|.*ASCENDPREP_RESULT )"
)


def log_tail(text: Optional[str], lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log that may explain a fault (see ``_NOISE`` for what is left out)."""
    if not text:
        return ""
    kept = [line for line in text.splitlines() if not _NOISE.match(line)]
    return "\n".join(kept[-lines:])


_JOINED = re.compile(r"waiting for clients\. (\d+)/(\d+) clients joined")
_RENDEZVOUS = (
    "DistNetworkError",
    "RendezvousTimeoutError",
    "RendezvousConnectionError",
    "RendezvousClosedError",
    "client socket has timed out",
    "Connection refused",
    "assigned_ranks",
    "waiting for clients",
    "DistStoreError",
    "Name or service not known",
)


def launch_problem(
    result: LaunchResult,
    expected_ranks: int,
    collected: CollectedOutput,
    master: str,
    master_port: Optional[int],
    overall_s: float,
) -> Optional[NodeProblem]:
    """What went wrong on this node's own side, if anything (None: nothing of its own), with the
    cause HCCL named in its log (EJ0001, EI0006, ...: :mod:`.error_codes`) and its fix."""
    problem = _launch_problem(result, expected_ranks, collected, master, master_port, overall_s)
    said = "\n".join([result.output.log or ""] + [f.reason for f in _node_failures(collected, result.node)])
    return with_named_cause(problem, said)


def _launch_problem(
    result: LaunchResult,
    expected_ranks: int,
    collected: CollectedOutput,
    master: str,
    master_port: Optional[int],
    overall_s: float,
) -> Optional[NodeProblem]:
    node = result.node
    out = result.output
    tail = log_tail(out.log)
    if result.remote_error is not None and out.exit_code is None and not result.cleaned_up:
        return NodeProblem(
            node, "ssh", without_node_prefix(result.remote_error, node), "check SSH access to the node", tail
        )
    if out.set_env_missing:
        return NodeProblem(
            node,
            "set_env_missing",
            f"{SET_ENV_SH} is missing",
            "run 'ascendprep plan' and 'ascendprep apply' first",
            tail,
        )
    log = out.log or ""
    records = [r for r in collected.records if r.node == node]
    if out.exit_code == NO_SET_ENV_RC and not log:
        return NodeProblem(
            node,
            "set_env_missing",
            f"{SET_ENV_SH} is missing",
            "run 'ascendprep plan' and 'ascendprep apply' first",
            tail,
        )
    if re.search(r"No module named '?torch'?(\s|$)", log):
        return NodeProblem(
            node, "torch_missing", "torchrun cannot import torch", "install torch for the inventory's python_path", tail
        )
    if "can't open file" in log and "worker.py" in log:
        return NodeProblem(
            node,
            "upload_failed",
            "the uploaded worker is gone from its run directory",
            "check that nothing cleans /tmp while the check runs",
            tail,
        )
    if not records and re.search(r"^(ImportError|ModuleNotFoundError|OSError): ", log, re.MULTILINE):
        line = re.search(r"^(ImportError|ModuleNotFoundError|OSError): .*$", log, re.MULTILINE)
        assert line is not None
        return NodeProblem(
            node,
            "torch_import_failed",
            f"torchrun failed to start: {line.group(0)}",
            "check the node's torch / torch_npu / CANN installation",
            tail,
        )
    if not records and any(marker in log for marker in _RENDEZVOUS):
        joined = _JOINED.search(log)
        where = f"{master}:{master_port}" if master_port else master
        if joined:
            message = (
                f"rendezvous failed: only {joined.group(1)} of {joined.group(2)} nodes reached "
                f"torchrun's rendezvous on {where}"
            )
        else:
            message = f"rendezvous failed: could not join torchrun's rendezvous on {where}"
        return NodeProblem(
            node,
            "rendezvous_failed",
            message,
            f"check that {node} reaches {where} on the management network (firewall, routes) "
            "and that every node was started",
            tail,
        )
    stopped_by_us = result.cleaned_up or result.timed_out
    if out.exit_code is not None and out.exit_code >= 128 and not stopped_by_us and len(records) < expected_ranks:
        signal_number = out.exit_code - 128
        return NodeProblem(
            node,
            "killed",
            f"torchrun was killed by signal {signal_number} and "
            f"{expected_ranks - len(records)} of its {expected_ranks} ranks sent no result",
            "look for the OOM killer or an operator on the node (dmesg, journalctl)",
            tail,
        )
    if result.timed_out and len(records) < expected_ranks:
        return NodeProblem(
            node,
            "timed_out",
            f"still running at the overall timeout ({overall_s:g}s); "
            f"{expected_ranks - len(records)} of its {expected_ranks} ranks sent no result",
            "raise --timeout, or look at the node's log for where it hung",
            tail,
        )
    if len(records) < expected_ranks and (out.exit_code not in (None, 0) or result.cleaned_up):
        return NodeProblem(
            node,
            "no_result",
            f"{expected_ranks - len(records)} of its {expected_ranks} ranks sent no result "
            f"(torchrun exit {out.exit_code if out.exit_code is not None else 'unknown'})",
            "see the log lines below",
            tail,
        )
    own = [f for f in _node_failures(collected, node) if not is_peer_symptom(f.reason)]
    if own:
        first = own[0]
        return NodeProblem(
            node,
            "rank_failed",
            f"rank {first.rank} failed in {first.phase}: {first.reason}",
            "see the rank's reason and the log lines below",
            tail,
        )
    return None


def primary_problems(problems: Dict[str, NodeProblem]) -> Dict[str, NodeProblem]:
    """When some node failed as a whole (crashed, never joined, ...), failed ranks elsewhere are
    its consequences: keep only the node-level problems. Otherwise keep everything."""
    node_level = {node: p for node, p in problems.items() if p.kind in NODE_LEVEL_KINDS}
    return node_level or dict(problems)


def without_node_prefix(message: str, node: str) -> str:
    """Transport errors start with the host name; a NodeProblem's message does not."""
    return message[len(node) + 2 :] if message.startswith(f"{node}: ") else message


def is_peer_symptom(reason: str) -> bool:
    """True when a rank's failure points at someone else (it waited, or it was stopped)."""
    return any(symptom in reason for symptom in _PEER_SYMPTOMS)


def _node_failures(collected: CollectedOutput, node: str) -> List[RankFailure]:
    failures = [
        RankFailure(r.rank, r.node, r.error_phase or "unknown", r.error_reason or "failed without a reason")
        for r in collected.records
        if r.node == node and not r.ok
    ]
    with_record = {r.rank for r in collected.records}
    failures += [
        RankFailure(e.rank, e.node, e.phase, e.reason)
        for e in collected.errors
        if e.node == node and e.rank not in with_record
    ]
    return failures


def suspects(collected: CollectedOutput, nodes: Sequence[str]) -> Dict[str, str]:
    """When every failure is a peer symptom: nodes whose ranks were stopped outside a collective.

    A rank stopped *during* a collective was waiting for a peer; one stopped elsewhere (busy,
    hung in its own code, asleep) is what the others were waiting for.
    """
    failures = [f for node in nodes for f in _node_failures(collected, node)]
    if not failures or not all(is_peer_symptom(f.reason) for f in failures):
        return {}
    waiting = [f for f in failures if " during " in f.reason or "timed out after" in f.reason]
    idle = [f for f in failures if f not in waiting]
    if not waiting or not idle:
        return {}
    found: Dict[str, str] = {}
    for failure in idle:
        found.setdefault(
            failure.node,
            f"rank {failure.rank} was not inside a collective when the run was "
            f"stopped ({failure.phase}: {failure.reason}) while "
            f"{len(waiting)} other ranks were waiting in one",
        )
    return found
