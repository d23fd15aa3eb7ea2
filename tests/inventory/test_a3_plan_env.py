"""The A3 HCCL variables in the inventory's env: refused at load (located at env.NAME) when HCCL
would ignore, misread or be contradicted by them (docs/a3-superpod.md §3)."""

from __future__ import annotations

from typing import Any, Optional

import pytest
import yaml

from ascendprep.base.yamlsource import InputError
from ascendprep.desired.state import build_desired
from ascendprep.inventory.hccl_env import op_retry_levels
from ascendprep.inventory.load import inventory_from_text


def text(env: dict[str, str], *, product: str = "atlas-a3", pods: int = 1, rank_table: bool = False) -> str:
    if product == "atlas-a3":
        nodes = (
            [{"name": f"p{p}s[1-2]", "host": f"10.0.{p}.[11-12]", "super_pod": p} for p in range(pods)]
            if pods
            else [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}]
        )
        network = {"subnets": ["10.30.0.0/24", "10.31.0.0/24"]}
    else:
        nodes = [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}]
        network = {"subnet": "10.30.0.0/24"}
    data: dict[str, Any] = {"name": "t", "product": product, "device_network": network, "nodes": nodes, "env": env}
    if rank_table:
        data["training"] = {"rank_table": True}
    return yaml.safe_dump(data, sort_keys=False)


def problem(env: dict[str, str], **kwargs: Any) -> Optional[str]:
    try:
        inventory_from_text(text(env, **kwargs))
    except InputError as error:
        return " | ".join(str(p) for p in error.problems)
    return None


def test_good_a3_settings_load_and_reach_env_sh() -> None:
    env = {"HCCL_INTER_HCCS_DISABLE": "FALSE", "HCCL_OP_EXPANSION_MODE": "AI_CPU", "HCCL_OP_RETRY_ENABLE": "L1:1,L2:1"}
    state = build_desired(inventory_from_text(text(env, pods=2)))
    env_sh = next(f.content for f in state.nodes["p0s1"].files if f.path.endswith("/env.sh"))
    assert "export HCCL_OP_RETRY_ENABLE=L1:1,L2:1\n" in env_sh and "export HCCL_INTER_HCCS_DISABLE=FALSE\n" in env_sh


def test_op_retry_levels_parse() -> None:
    assert op_retry_levels("L1:1,L2:0") == {"L1": 1, "L2": 0}
    assert op_retry_levels(None) == {}
    for bad in ("1", "L3:1", "L1:2", "L1:1,L1:0", "L1=1"):
        with pytest.raises(ValueError):
            op_retry_levels(bad)


def test_bad_op_retry_value_is_located() -> None:
    found = problem({"HCCL_OP_RETRY_ENABLE": "on"})
    assert found and "env.HCCL_OP_RETRY_ENABLE: 'on' is not of the form L1:0|1,L2:0|1" in found


def test_op_retry_needs_ai_cpu_mode() -> None:
    found = problem({"HCCL_OP_RETRY_ENABLE": "L1:1,L2:1", "HCCL_OP_EXPANSION_MODE": "AIV"})
    assert (
        found
        and "env.HCCL_OP_EXPANSION_MODE: op-retry (HCCL_OP_RETRY_ENABLE=L1:1,L2:1) works only with HCCL_OP_EXPANSION_MODE=AI_CPU, not AIV"
        in found
    )
    # A3's default mode is AI_CPU; retry switched off needs nothing.
    assert problem({"HCCL_OP_RETRY_ENABLE": "L1:1,L2:1"}) is None
    assert problem({"HCCL_OP_RETRY_ENABLE": "L1:0,L2:0", "HCCL_OP_EXPANSION_MODE": "AIV"}) is None


def test_unknown_expansion_mode_is_refused() -> None:
    found = problem({"HCCL_OP_EXPANSION_MODE": "AICPU"})
    assert found and "silently falls back to its default" in found


def test_intra_pcie_is_unsupported_on_a3() -> None:
    found = problem({"HCCL_INTRA_PCIE_ENABLE": "1"})
    assert found and "env.HCCL_INTRA_PCIE_ENABLE: is not supported on Atlas A3" in found
    assert problem({"HCCL_INTRA_PCIE_ENABLE": "1"}, product="atlas-a2") is None


def test_hccs_disable_values_and_product() -> None:
    assert problem({"HCCL_INTER_HCCS_DISABLE": "TRUE"}) is None
    found = problem({"HCCL_INTER_HCCS_DISABLE": "yes"})
    assert found and "'yes' is not TRUE or FALSE" in found
    found = problem({"HCCL_INTER_HCCS_DISABLE": "TRUE"}, product="atlas-a2")
    assert found and "only Atlas A3 super-pods read it" in found


def test_logic_superpod_id_never_spans_physical_pods() -> None:
    found = problem({"HCCL_LOGIC_SUPERPOD_ID": "lp0"}, pods=2)
    assert (
        found and "env.HCCL_LOGIC_SUPERPOD_ID: one value for the whole cluster joins its 2 physical super-pods" in found
    )
    assert problem({"HCCL_LOGIC_SUPERPOD_ID": "lp0"}, pods=1) is None


def test_logic_superpod_id_is_ignored_with_a_rank_table() -> None:
    found = problem({"HCCL_LOGIC_SUPERPOD_ID": "lp0"}, pods=1, rank_table=True)
    assert found and "HCCL reads it only without a rank table" in found


def test_logic_superpod_id_length() -> None:
    found = problem({"HCCL_LOGIC_SUPERPOD_ID": "x" * 128})
    assert found and "is 128 characters" in found
