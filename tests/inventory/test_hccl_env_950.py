"""The HCCL environment of Ascend 950 inventories: the variables 950 does not support refused,
HCCL_OP_EXPANSION_MODE held to the 950 list (a wrong value is an error there, not a fallback),
the UB timeout variables validated; earlier generations keep their own rules."""

from __future__ import annotations

import pytest
import yaml

from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.hccl_env import UNSUPPORTED_ON_950
from ascendprep.inventory.load import inventory_from_text


def load(env, product="atlas-350", nodes=2):
    data = {
        "name": "t",
        "product": product,
        "device_network": {"subnet": "10.20.0.0/24"},
        "nodes": [{"name": f"n[1-{nodes}]", "host": f"10.0.0.[11-{10 + nodes}]"}]
        if nodes > 1
        else [{"name": "n1", "host": "10.0.0.11"}],
        "env": env,
    }
    return inventory_from_text(yaml.safe_dump(data, sort_keys=False), file="inv.yaml")


def refusal(env, **kwargs) -> str:
    with pytest.raises(InputError) as err:
        load(env, **kwargs)
    return str(err.value)


@pytest.mark.parametrize("name", UNSUPPORTED_ON_950)
def test_a_variable_950_does_not_support_is_refused_where_it_is_written(name):
    text = refusal({name: "1"})
    assert f"env.{name}: is not supported on the Ascend 950" in text
    assert text.startswith("inv.yaml:")


@pytest.mark.parametrize("mode", ["AICPU_TS", "AI_CPU", "AICPU_CacheDisable", "AIV", "CCU_SCHED"])
def test_the_950_expansion_modes_load(mode):
    assert load({"HCCL_OP_EXPANSION_MODE": mode}).model.env["HCCL_OP_EXPANSION_MODE"] == mode


def test_a_wrong_expansion_mode_is_an_error_on_950_and_ccu_ms_is_not_for_950pr():
    assert "an unsupported value is an error, not a fallback" in refusal({"HCCL_OP_EXPANSION_MODE": "HOST"})
    assert "CCU_MS is not available on the 950PR" in refusal({"HCCL_OP_EXPANSION_MODE": "CCU_MS"})
    # HOST is an A2 value: still accepted there, as before
    assert load({"HCCL_OP_EXPANSION_MODE": "HOST"}, product="atlas-a2").model.env


@pytest.mark.parametrize("name", ["HCOMM_TA_CTP_UB_TIMEOUT", "HCOMM_TA_RTP_UB_TIMEOUT", "HCOMM_TA_RTP_UBOE_TIMEOUT"])
def test_ub_timeouts_are_integers_0_to_31_on_950_only(name):
    assert load({name: "24"}).model.env[name] == "24"
    assert "is not an integer 0..31" in refusal({name: "32"})
    assert "is not an integer 0..31" in refusal({name: "8s"})
    assert "only the Ascend 950 reads it" in refusal({name: "8"}, product="atlas-a2")


def test_exec_timeout_follows_the_950_mode_ranges():
    assert load({"HCCL_OP_EXPANSION_MODE": "AIV", "HCCL_EXEC_TIMEOUT": "1091"}).model.env
    assert "0..1091, the range of AIV mode" in refusal({"HCCL_OP_EXPANSION_MODE": "AIV", "HCCL_EXEC_TIMEOUT": "1836"})
    assert "0..65535, the range of CCU_SCHED" in refusal(
        {"HCCL_OP_EXPANSION_MODE": "CCU_SCHED", "HCCL_EXEC_TIMEOUT": "70000"}
    )
    assert load({"HCCL_EXEC_TIMEOUT": "1836"}).model.env


def test_supported_variables_load_on_950():
    env = {"HCCL_CONNECT_TIMEOUT": "600", "HCCL_BUFFSIZE": "200", "HCCL_RDMA_TC": "132", "HCOMM_DEBUG_CONFIG": "x"}
    assert load(env).model.env == env
