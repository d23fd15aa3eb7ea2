"""A3 HCCL settings as the nodes' jobs will see them (docs/a3-superpod.md §3).

``superpod.hccl_env`` (cluster): the variables a job gets after ``set_env.sh`` (else the login
shell's), read by the ``job.launch``/``job.login`` probes, judged together:

* settings that must be the same on every node (``HCCL_INTER_HCCS_DISABLE``, op-retry and the
  expansion mode it needs: "must match on all pods") are flagged when nodes disagree, naming
  which nodes have which value;
* each node's settings against the rules plan applies to the inventory
  (:func:`ascendprep.inventory.hccl_env.hccl_env_problems`): op-retry without AI_CPU, an unknown expansion
  mode, ``HCCL_INTRA_PCIE_ENABLE`` (unsupported on A3), a bad ``HCCL_INTER_HCCS_DISABLE``;
* ``HCCL_LOGIC_SUPERPOD_ID`` never joins servers of two physical super-pods (the inventory's
  ``super_pod``): HCCL would pick the vNIC link and both ends time out.

The values come from the hosts: they are shown shortened and only as text.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ascendprep.base.findings import Severity
from ascendprep.facts.model import HostFacts
from ascendprep.inventory.hccl_env import hccl_env_problems
from ascendprep.verify.checks.context import ClusterContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped

A3_VARIABLES = (
    "HCCL_INTER_HCCS_DISABLE",
    "HCCL_LOGIC_SUPERPOD_ID",
    "HCCL_OP_RETRY_ENABLE",
    "HCCL_OP_EXPANSION_MODE",
    "HCCL_INTRA_PCIE_ENABLE",
)
#: Settings every node of one job must share.
MUST_AGREE = ("HCCL_INTER_HCCS_DISABLE", "HCCL_OP_RETRY_ENABLE", "HCCL_OP_EXPANSION_MODE")
#: Characters of a host's value shown in a message.
SHOWN_CHARS = 64
#: Node names listed per value before "and N more".
SHOWN_NODES = 8


def _shown(value: Optional[str]) -> str:
    if value is None:
        return "unset"
    text = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
    return repr(text)


def _nodes(names: List[str]) -> str:
    more = len(names) - SHOWN_NODES
    return ", ".join(names[:SHOWN_NODES]) + (f" and {more} more" if more > 0 else "")


def job_env(facts: HostFacts) -> Optional[Dict[str, Optional[str]]]:
    """The A3 variables a job gets on this node (after set_env.sh when it is there), or None
    when they were not read (an older gather, or the shell did not answer)."""
    job = facts.job
    if job is None:
        return None
    shell = job.launch if job.launch is not None else job.login
    if shell is None or not any(name in shell.values for name in A3_VARIABLES):
        return None
    values = {name: shell.values.get(name) for name in A3_VARIABLES}
    values["RANK_TABLE_FILE"] = shell.values.get("RANK_TABLE_FILE")
    return values


def hccl_env(ctx: ClusterContext) -> List[Verdict]:
    envs: Dict[str, Dict[str, Optional[str]]] = {}
    for name, facts in ctx.gathered().items():
        values = job_env(facts)
        if values is not None:
            envs[name] = values
    if not envs:
        return [
            skipped(
                "the A3 HCCL variables were not read on any node (the job environment probes did not run or answer)"
            )
        ]
    verdicts: List[Verdict] = []
    verdicts += _disagreements(envs)
    verdicts += _node_rules(envs)
    verdicts += _logical_pods(ctx, envs)
    if not verdicts:
        shown = {var: _shown(next(iter(envs.values()))[var]) for var in MUST_AGREE}
        verdicts.append(
            passed(
                f"the A3 HCCL settings agree on {len(envs)} node(s): "
                + ", ".join(f"{k}={v}" for k, v in shown.items()),
                {"nodes": len(envs)},
            )
        )
    return verdicts


def _disagreements(envs: Dict[str, Dict[str, Optional[str]]]) -> List[Verdict]:
    out = []
    for var in MUST_AGREE:
        by_value: Dict[Optional[str], List[str]] = {}
        for node, values in envs.items():
            by_value.setdefault(values[var], []).append(node)
        if len(by_value) > 1:
            parts = [
                f"{_shown(value)} on {_nodes(nodes)}"
                for value, nodes in sorted(by_value.items(), key=lambda item: -len(item[1]))
            ]
            minority = min(by_value.values(), key=len)
            out.append(
                failed(
                    f"{var} differs across nodes: " + "; ".join(parts) + " (HCCL needs one setting for the whole job)",
                    {"values": {_shown(value): nodes for value, nodes in by_value.items()}},
                    fix=f"set {var} once in the inventory's env (env.sh) and remove other exports (grep -rn {var} /etc/profile /etc/profile.d ~/.bashrc)",
                    subject=var,
                    node=minority[0] if len(minority) == 1 else None,
                )
            )
    return out


def _node_rules(envs: Dict[str, Dict[str, Optional[str]]]) -> List[Verdict]:
    by_problem: Dict[tuple[str, str], List[str]] = {}
    for node, values in envs.items():
        present = {key: value for key, value in values.items() if value is not None and key != "RANK_TABLE_FILE"}
        for var, message in hccl_env_problems(
            present, a3=True, physical_pods=0, rank_table=values.get("RANK_TABLE_FILE") is not None
        ):
            by_problem.setdefault((var, message), []).append(node)
    return [
        failed(
            f"{var}: {message} (on {_nodes(nodes)})",
            {"nodes": nodes},
            fix=f"correct {var} in the inventory's env and re-apply",
            subject=var,
            node=nodes[0] if len(nodes) == 1 else None,
        )
        for (var, message), nodes in by_problem.items()
    ]


def _logical_pods(ctx: ClusterContext, envs: Dict[str, Dict[str, Optional[str]]]) -> List[Verdict]:
    physical = {node.name: node.super_pod for node in ctx.desired.inventory.nodes}
    members: Dict[str, Dict[Optional[int], List[str]]] = {}
    for node, values in envs.items():
        logical = values.get("HCCL_LOGIC_SUPERPOD_ID")
        if logical is not None:
            members.setdefault(logical, {}).setdefault(physical.get(node), []).append(node)
    out = []
    for logical, pods in members.items():
        if len(pods) > 1:
            parts = [
                f"physical pod {pod if pod is not None else '(not planned)'}: {_nodes(nodes)}"
                for pod, nodes in pods.items()
            ]
            out.append(
                failed(
                    f"HCCL_LOGIC_SUPERPOD_ID={_shown(logical)} joins servers of {len(pods)} physical super-pods ({'; '.join(parts)}): HCCL picks the HCCS vNIC link between them and both ends time out",
                    {"logical": logical[:SHOWN_CHARS], "physical": {str(pod): nodes for pod, nodes in pods.items()}},
                    fix="give each physical pod its own logical ids (nodes[].logical_super_pod in the inventory) and re-apply",
                    subject="HCCL_LOGIC_SUPERPOD_ID",
                )
            )
    return out


def _applies(desired) -> Optional[str]:
    """Only A3 reads these settings (worded as the other super-pod checks say it)."""
    product = desired.inventory.product
    return None if product.dies_per_npu > 1 else f"{product.id} has no HCCS super-pod plane"


CHECKS: List[Check] = [
    Check(
        "superpod.hccl_env",
        ("superpod", "job", "cluster"),
        "cluster",
        Severity.ERROR,
        "A3 HCCL settings agree across nodes and never join physical super-pods",
        "set the A3 HCCL variables once in the inventory's env",
        hccl_env,
        applies=_applies,
    ),
]
