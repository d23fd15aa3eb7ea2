"""The inventory's ``env:`` may export only what HCCL, CANN and torch_npu read (others need
``env_opt_in``, and what makes a shell or loader run other code never), and the plan shows
env.sh's variables, not just that the file changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ascendprep import exitcodes
from ascendprep.cli import main
from ascendprep.inventory import inventory_from_text
from ascendprep.yamlsource import InputError

from tests.core.test_plan_diff import INVENTORY


def _inventory(**changes) -> str:
    return yaml.safe_dump({**INVENTORY, **changes}, sort_keys=False)


def _problems(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        inventory_from_text(text)
    return [str(p) for p in caught.value.problems]


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("LD_PRELOAD", "/tmp/evil.so", "makes the dynamic loader load other code"),
        ("LD_LIBRARY_PATH", "/tmp/lib", "makes the dynamic loader load other code"),
        ("PYTHONPATH", "/tmp/py", "makes Python import other code"),
        ("PYTHONWARNINGS", "ignore::x.y", "makes Python import other code"),
        ("BASH_ENV", "/tmp/rc", "makes the shell that sources env.sh run other code"),
        ("PATH", "/tmp/bin:/usr/bin", "makes the shell that sources env.sh run other code"),
        ("HOME", "/tmp/home", "moves the home of the user verify's probes run as"),
        ("GCONV_PATH", "/tmp/g", "makes glibc load other modules"),
        ("OPENSSL_CONF", "/tmp/o.cnf", "makes OpenSSL load other engines"),
        ("ASCENDPREP_CANN_PATH", "/tmp/cann", "is ascendprep's own control"),
    ],
)
def test_variables_that_run_other_code_are_refused_even_when_opted_in(name, value, why):
    text = _inventory(env={"HCCL_BUFFSIZE": "400", name: value})
    line = _line(text, f"  {name}: ")
    problems = _problems(text)
    assert len(problems) == 1 and problems[0].startswith(f"inventory.yaml:{line}: env.{name}: {name} {why}"), problems
    assert "never exports it, not even with env_opt_in" in problems[0]
    opted = _inventory(env={name: value}, env_opt_in=[name])
    problems = _problems(opted)
    assert any(f"env.{name}:" in p and "never exports it" in p for p in problems), problems
    assert any(f"env_opt_in[0]: {name} " in p and "it cannot be opted in" in p for p in problems), problems


def test_variables_of_other_shapes_need_an_opt_in_and_then_load():
    text = _inventory(env={"HTTPS_PROXY": "http://proxy:3128"})
    problems = _problems(text)
    assert problems == [
        f"inventory.yaml:{_line(text, 'HTTPS_PROXY')}: env.HTTPS_PROXY: HTTPS_PROXY is not a variable HCCL, CANN or torch_npu reads "
        "(HCCL_*, ASCEND_*, TORCH_*, NPU_*, PYTORCH_NPU_*, MASTER_ADDR, …); to export it anyway, list it under env_opt_in"
    ]
    inventory = inventory_from_text(_inventory(env={"HTTPS_PROXY": "http://proxy:3128"}, env_opt_in=["HTTPS_PROXY"]))
    assert inventory.model.env == {"HTTPS_PROXY": "http://proxy:3128"}


def test_where_cann_loads_its_code_from_needs_an_opt_in():
    problems = _problems(_inventory(env={"ASCEND_OPP_PATH": "/opt/opp"}))
    assert len(problems) == 1 and "env.ASCEND_OPP_PATH: ASCEND_OPP_PATH says where CANN loads its code from" in problems[0]
    inventory_from_text(_inventory(env={"ASCEND_OPP_PATH": "/opt/opp"}, env_opt_in=["ASCEND_OPP_PATH"]))


def test_the_shapes_hccl_cann_and_torch_npu_read_need_no_opt_in_and_a_needless_one_is_an_error():
    allowed = {"HCCL_BUFFSIZE": "400", "ASCEND_GLOBAL_LOG_LEVEL": "1", "TORCH_NPU_WARNING_DISABLE": "1", "NPU_ASD_ENABLE": "0",
               "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "MASTER_ADDR": "10.0.0.11", "TASK_QUEUE_ENABLE": "2", "OMP_NUM_THREADS": "8"}
    assert inventory_from_text(_inventory(env=allowed)).model.env == allowed
    problems = _problems(_inventory(env={"HCCL_BUFFSIZE": "400"}, env_opt_in=["HCCL_BUFFSIZE", "NO_PROXY"]))
    assert any("env_opt_in[0]: HCCL_BUFFSIZE is allowed without opt-in; remove it from env_opt_in" in p for p in problems), problems
    assert any("env_opt_in[1]: NO_PROXY is opted in but not set under env" in p for p in problems), problems


def test_plan_refuses_a_denied_variable_with_exit_2_and_no_traceback(tmp_path: Path):
    path = tmp_path / "inventory.yaml"
    text = _inventory(env={"LD_PRELOAD": "/tmp/evil.so"})
    path.write_text(text)
    result = CliRunner().invoke(main, ["plan", str(path), "--offline"])
    assert result.exit_code == exitcodes.INVALID, result.output
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    assert f"{path}:{_line(text, 'LD_PRELOAD')}: env.LD_PRELOAD: LD_PRELOAD makes the dynamic loader" in " ".join(result.output.split())
