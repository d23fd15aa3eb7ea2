"""HCCL's rules on the inventory's ``env:``: A3 settings HCCL would ignore, misread or that contradict
the cluster (docs/a3-superpod.md §3), refused when the inventory loads."""

from __future__ import annotations

from typing import Mapping, Optional

#: ``HCCL_OP_EXPANSION_MODE`` values HCCL knows; anything else silently falls back to the default.
OP_EXPANSION_MODES = ("AI_CPU", "AICPU_CacheDisable", "AIV", "HOST")
#: ``HCCL_LOGIC_SUPERPOD_ID`` is a string shorter than this (HCCL docs).
LOGIC_SUPERPOD_ID_MAX_CHARS = 128
#: What ``HCCL_INTER_HCCS_DISABLE`` accepts.
HCCS_DISABLE_VALUES = ("TRUE", "FALSE")


def op_retry_levels(value: Optional[str]) -> dict[str, int]:
    """``HCCL_OP_RETRY_ENABLE="L1:1,L2:0"`` → ``{"L1": 1, "L2": 0}``; unset → ``{}``.

    L1 is retry between servers, L2 between super-pods; each 0 or 1. Raises ValueError with a
    readable reason for anything else.
    """
    if value is None or value == "":
        return {}
    levels: dict[str, int] = {}
    for item in value.split(","):
        level, _, flag = item.strip().partition(":")
        if level not in ("L1", "L2") or flag not in ("0", "1") or level in levels:
            raise ValueError(f"'{value}' is not of the form L1:0|1,L2:0|1 (such as \"L1:1,L2:1\")")
        levels[level] = int(flag)
    return levels


def hccl_env_problems(
    env: Mapping[str, str], *, a3: bool, physical_pods: int, rank_table: bool
) -> list[tuple[str, str]]:
    """(variable, message) for A3 HCCL settings in the inventory's ``env:`` that HCCL would
    ignore, misread or that contradict the cluster; checked at load (located at ``env.<NAME>``).

    ``physical_pods``: the super-pods the inventory's nodes are in (0 when none are given).
    """
    problems: list[tuple[str, str]] = []
    hccs = env.get("HCCL_INTER_HCCS_DISABLE")
    if hccs is not None and hccs not in HCCS_DISABLE_VALUES:
        problems.append(
            (
                "HCCL_INTER_HCCS_DISABLE",
                f"'{hccs}' is not TRUE or FALSE (TRUE: servers of a super-pod talk over RoCE instead of HCCS)",
            )
        )
    if hccs is not None and not a3:
        problems.append(
            (
                "HCCL_INTER_HCCS_DISABLE",
                "only Atlas A3 super-pods read it (there is no HCCS between servers on this product)",
            )
        )
    logic = env.get("HCCL_LOGIC_SUPERPOD_ID")
    if logic is not None:
        if not a3:
            problems.append(("HCCL_LOGIC_SUPERPOD_ID", "only Atlas A3 super-pods read it"))
        elif len(logic) >= LOGIC_SUPERPOD_ID_MAX_CHARS:
            problems.append(
                (
                    "HCCL_LOGIC_SUPERPOD_ID",
                    f"is {len(logic)} characters; HCCL takes fewer than {LOGIC_SUPERPOD_ID_MAX_CHARS}",
                )
            )
        elif physical_pods > 1:
            problems.append(
                (
                    "HCCL_LOGIC_SUPERPOD_ID",
                    f"one value for the whole cluster joins its {physical_pods} physical super-pods into one logical pod: HCCL then picks the HCCS vNIC link between them and both ends time out; split pods with nodes[].logical_super_pod instead",
                )
            )
        elif rank_table:
            problems.append(
                (
                    "HCCL_LOGIC_SUPERPOD_ID",
                    "HCCL reads it only without a rank table (training.rank_table is true); split pods with nodes[].logical_super_pod, which the rank table's super_pod_list carries",
                )
            )
    mode = env.get("HCCL_OP_EXPANSION_MODE")
    if mode is not None and mode not in OP_EXPANSION_MODES:
        problems.append(
            (
                "HCCL_OP_EXPANSION_MODE",
                f"'{mode}' is not one of {', '.join(OP_EXPANSION_MODES)}: HCCL silently falls back to its default",
            )
        )
    try:
        retry = op_retry_levels(env.get("HCCL_OP_RETRY_ENABLE"))
    except ValueError as exc:
        problems.append(("HCCL_OP_RETRY_ENABLE", str(exc)))
        retry = {}
    if any(retry.values()):
        effective = mode if mode is not None else ("AI_CPU" if a3 else None)
        if effective != "AI_CPU":
            where = "HCCL_OP_EXPANSION_MODE" if mode is not None else "HCCL_OP_RETRY_ENABLE"
            problems.append(
                (
                    where,
                    f"op-retry (HCCL_OP_RETRY_ENABLE={env['HCCL_OP_RETRY_ENABLE']}) works only with HCCL_OP_EXPANSION_MODE=AI_CPU, not {effective or 'the default'}: set HCCL_OP_EXPANSION_MODE: AI_CPU",
                )
            )
    if a3 and "HCCL_INTRA_PCIE_ENABLE" in env:
        problems.append(
            (
                "HCCL_INTRA_PCIE_ENABLE",
                "is not supported on Atlas A3 (HCCL docs): remove it (HCCL_INTER_HCCS_DISABLE chooses RoCE over HCCS there)",
            )
        )
    return problems
