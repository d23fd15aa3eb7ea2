"""HCCL's rules on the inventory's ``env:``: A3 settings HCCL would ignore, misread or that contradict
the cluster (docs/a3-superpod.md §3), and the Ascend 950's own list (docs/ascend950.md), refused
when the inventory loads."""

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


# --------------------------------------------------------------------------------------------
# Ascend 950: per-variable "product support" of the HCCL environment-variable guide
# (hicann/hccl docs/zh/user_guide/hccl_env/*.md), summarised in docs/ascend950.md.

#: Variables the 950's HCCL does not support: a preparation tool must not write them for 950.
UNSUPPORTED_ON_950 = (
    "HCCL_INTER_HCCS_DISABLE",
    "HCCL_INTRA_PCIE_ENABLE",
    "HCCL_INTRA_ROCE_ENABLE",
    "HCCL_LOGIC_SUPERPOD_ID",
    "HCCL_OP_RETRY_ENABLE",
    "HCCL_OP_RETRY_PARAMS",
    "HCCL_RDMA_PCIE_DIRECT_POST_NOSTRICT",
    "HCCL_RDMA_QP_PORT_CONFIG_PATH",
    "HCCL_DIAGNOSE_ENABLE",
)
#: ``HCCL_OP_EXPANSION_MODE`` on the 950: ``AICPU_TS`` is the default, ``AI_CPU`` is to be
#: deprecated in its favour; an unsupported value is an error there, not a fallback.
OP_EXPANSION_MODES_950 = ("AI_CPU", "AICPU_TS", "AICPU_CacheDisable", "AIV", "CCU_MS", "CCU_SCHED")
#: ``CCU_MS`` exists on the 950DT only, and only within one server.
CCU_MS = "CCU_MS"
#: The 950's UB transport timeouts (value / 8 picks 512 ms, 4 s, 8 s or 32 s; defaults 8, 16, 16).
UB_TIMEOUT_VARIABLES = ("HCOMM_TA_CTP_UB_TIMEOUT", "HCOMM_TA_RTP_UB_TIMEOUT", "HCOMM_TA_RTP_UBOE_TIMEOUT")
UB_TIMEOUT_MAX = 31
#: ``HCCL_EXEC_TIMEOUT`` (seconds) by expansion mode on the 950; AICPU_TS is the default mode.
EXEC_TIMEOUT_MAX_950 = {
    "CCU_MS": 65535,
    "CCU_SCHED": 65535,
    "AI_CPU": 2147483647,
    "AICPU_TS": 2147483647,
    "AICPU_CacheDisable": 2147483647,
    "AIV": 1091,
}


def _small_int(value: str) -> Optional[int]:
    text = value.strip()
    return int(text) if text.isdigit() and len(text) <= 10 else None


def ub_timeout_problems(env: Mapping[str, str], *, a5: bool) -> list[tuple[str, str]]:
    """The UB timeout variables: integers 0..31 on the 950, and read by no other generation."""
    problems = []
    for name in UB_TIMEOUT_VARIABLES:
        value = env.get(name)
        if value is None:
            continue
        if not a5:
            problems.append((name, "only the Ascend 950 reads it (a UB transport timeout): remove it"))
            continue
        number = _small_int(value)
        if number is None or number > UB_TIMEOUT_MAX:
            problems.append(
                (
                    name,
                    f"'{value}' is not an integer 0..{UB_TIMEOUT_MAX} (value / 8 picks the tier: 0 = 512 ms, 1 = 4 s, 2 = 8 s, 3 = 32 s; recommended 0, 8, 16 or 24)",
                )
            )
    return problems


def hccl_env_problems_950(env: Mapping[str, str], *, chip: str, servers: int) -> list[tuple[str, str]]:
    """(variable, message) for HCCL settings in a 950 inventory's ``env:`` that its HCCL refuses,
    misreads or does not support; checked at load (located at ``env.<NAME>``)."""
    problems = [
        (name, "is not supported on the Ascend 950 (HCCL environment-variable guide): remove it")
        for name in UNSUPPORTED_ON_950
        if name in env
    ]
    mode = env.get("HCCL_OP_EXPANSION_MODE")
    if mode is not None:
        if mode not in OP_EXPANSION_MODES_950:
            problems.append(
                (
                    "HCCL_OP_EXPANSION_MODE",
                    f"'{mode}' is not one of {', '.join(OP_EXPANSION_MODES_950)}: on the Ascend 950 an unsupported value is an error, not a fallback (AICPU_TS is the default)",
                )
            )
        elif mode == CCU_MS and "950PR" in chip:
            problems.append(("HCCL_OP_EXPANSION_MODE", f"CCU_MS is not available on the {chip}: use CCU_SCHED"))
        elif mode == CCU_MS and servers > 1:
            problems.append(
                ("HCCL_OP_EXPANSION_MODE", f"CCU_MS works within one server only; this cluster has {servers}")
            )
    timeout = env.get("HCCL_EXEC_TIMEOUT")
    if timeout is not None:
        effective = mode if mode in EXEC_TIMEOUT_MAX_950 else "AICPU_TS"
        limit = EXEC_TIMEOUT_MAX_950[effective]
        seconds = _small_int(timeout)
        if seconds is None or seconds > limit:
            problems.append(
                (
                    "HCCL_EXEC_TIMEOUT",
                    f"'{timeout}' is not an integer 0..{limit}, the range of {effective} mode on the Ascend 950",
                )
            )
    return problems + ub_timeout_problems(env, a5=True)
