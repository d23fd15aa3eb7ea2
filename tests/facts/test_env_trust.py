"""The inventory's ``env:`` may export only what HCCL, CANN and torch_npu read (others need
``env_opt_in``, and what makes a shell or loader run other code never), and the plan shows
env.sh's variables, not just that the file changes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Optional

import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console

from ascendprep.base import exitcodes
from ascendprep.base.paths import ENV_SH
from ascendprep.base.yamlsource import InputError
from ascendprep.cli import main
from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.model import ManagedFile
from ascendprep.facts.system import parse_env_sh
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import diff_host
from ascendprep.plan.planfile import PlanFile, SavedHost, read_plan, write_plan
from ascendprep.report.changes import changes_table
from tests.facts.conftest import build_transcript
from tests.plan.test_plan_diff import INVENTORY, converged_facts


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
        (
            f"inventory.yaml:{_line(text, 'HTTPS_PROXY')}: env.HTTPS_PROXY: HTTPS_PROXY is not a variable HCCL, CANN or torch_npu reads "
            "(HCCL_*, ASCEND_*, TORCH_*, NPU_*, PYTORCH_NPU_*, HCOMM_*, MASTER_ADDR, …); to export it anyway, list it under env_opt_in"
        )
    ]
    inventory = inventory_from_text(_inventory(env={"HTTPS_PROXY": "http://proxy:3128"}, env_opt_in=["HTTPS_PROXY"]))
    assert inventory.model.env == {"HTTPS_PROXY": "http://proxy:3128"}


def test_where_cann_loads_its_code_from_needs_an_opt_in():
    problems = _problems(_inventory(env={"ASCEND_OPP_PATH": "/opt/opp"}))
    assert (
        len(problems) == 1 and "env.ASCEND_OPP_PATH: ASCEND_OPP_PATH says where CANN loads its code from" in problems[0]
    )
    inventory_from_text(_inventory(env={"ASCEND_OPP_PATH": "/opt/opp"}, env_opt_in=["ASCEND_OPP_PATH"]))


def test_the_shapes_hccl_cann_and_torch_npu_read_need_no_opt_in_and_a_needless_one_is_an_error():
    allowed = {
        "HCCL_BUFFSIZE": "400",
        "ASCEND_GLOBAL_LOG_LEVEL": "1",
        "TORCH_NPU_WARNING_DISABLE": "1",
        "NPU_ASD_ENABLE": "0",
        "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
        "MASTER_ADDR": "10.0.0.11",
        "TASK_QUEUE_ENABLE": "2",
        "OMP_NUM_THREADS": "8",
    }
    assert inventory_from_text(_inventory(env=allowed)).model.env == allowed
    problems = _problems(_inventory(env={"HCCL_BUFFSIZE": "400"}, env_opt_in=["HCCL_BUFFSIZE", "NO_PROXY"]))
    assert any(
        "env_opt_in[0]: HCCL_BUFFSIZE is allowed without opt-in; remove it from env_opt_in" in p for p in problems
    ), problems
    assert any("env_opt_in[1]: NO_PROXY is opted in but not set under env" in p for p in problems), problems


def test_plan_refuses_a_denied_variable_with_exit_2_and_no_traceback(tmp_path: Path):
    path = tmp_path / "inventory.yaml"
    text = _inventory(env={"LD_PRELOAD": "/tmp/evil.so"})
    path.write_text(text)
    result = CliRunner().invoke(main, ["plan", str(path), "--offline"])
    assert result.exit_code == exitcodes.INVALID, result.output
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    assert f"{path}:{_line(text, 'LD_PRELOAD')}: env.LD_PRELOAD: LD_PRELOAD makes the dynamic loader" in " ".join(
        result.output.split()
    )


# ------------------------------------------------------------------ the plan shows env.sh's variables


def _env_plan(env: dict, host_env: Optional[dict], exists: bool = True):
    """The plan of n1 whose env.sh exports ``host_env`` (None: not read) for an inventory with ``env``."""
    state = build_desired(inventory_from_text(_inventory(env=env)))
    facts = converged_facts(state)
    managed = dict(facts.managed_files)
    managed[ENV_SH] = ManagedFile(ENV_SH, True, "0" * 64) if exists else ManagedFile(ENV_SH, False)
    facts = replace(facts, managed_files=managed, env_sh=host_env)
    return state, diff_host(state, "n1", facts)


def _table_text(plan) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(changes_table([plan]))
    return " ".join(console.export_text().split())


def _written_env(env: dict) -> dict:
    """What a node's env.sh exports after ascendprep wrote it for an inventory with ``env``."""
    state = build_desired(inventory_from_text(_inventory(env=env)))
    return parse_env_sh(next(f.content for f in state.nodes["n1"].files if f.path == ENV_SH))


def test_the_plan_names_the_variables_env_sh_changes_adds_and_drops_with_their_values():
    before = _written_env({"HCCL_BUFFSIZE": "200", "HCCL_SOCKET_IFNAME": "^docker", "TASK_QUEUE_ENABLE": "1"})
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400", "HCCL_SOCKET_IFNAME": "^docker", "HCCL_EXEC_TIMEOUT": "1836"}, before)
    [change] = [c for c in plan.changes if c.key == f"file:{ENV_SH}"]
    assert (
        change.describe()
        == f"{ENV_SH}: update: changes HCCL_BUFFSIZE 200 → 400; adds HCCL_EXEC_TIMEOUT=1836; drops TASK_QUEUE_ENABLE=1"
    )
    assert (
        f"{ENV_SH}: update: changes HCCL_BUFFSIZE 200 → 400; adds HCCL_EXEC_TIMEOUT=1836; drops TASK_QUEUE_ENABLE=1"
        in _table_text(plan)
    )
    assert change.entry()["variables"] == {
        "HCCL_BUFFSIZE": ["200", "400"],
        "HCCL_EXEC_TIMEOUT": [None, "1836"],
        "TASK_QUEUE_ENABLE": ["1", None],
    }


def test_a_new_env_sh_lists_every_variable_and_an_unread_one_says_only_update():
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, None, exists=False)
    [change] = [c for c in plan.changes if c.key == f"file:{ENV_SH}"]
    assert change.describe().startswith(f"{ENV_SH}: create: adds HCCL_WHITELIST_DISABLE=1, HCCL_CONNECT_TIMEOUT=1200, ")
    assert change.describe().endswith(", HCCL_BUFFSIZE=400")
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, None)  # there, but its variables were not read
    assert [c.describe() for c in plan.changes if c.key == f"file:{ENV_SH}"] == [f"{ENV_SH}: update"]
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, _written_env({"HCCL_BUFFSIZE": "400"}))  # only other lines differ
    assert [c.describe() for c in plan.changes if c.key == f"file:{ENV_SH}"] == [
        f"{ENV_SH}: update (its variables stay as they are)"
    ]


def test_a_hosts_values_reach_the_terminal_as_text_that_cannot_act():
    before = {**_written_env({}), "HCCL_BUFFSIZE": "\x1b]0;owned\x07[bold]x[/bold]"}
    _, plan = _env_plan({}, before)
    shown = _table_text(plan)
    assert "drops HCCL_BUFFSIZE='\\x1b]0;owned\\x07[bold]x[/bold]'" in shown
    assert "\x1b" not in shown and "\x07" not in shown


def test_the_host_variables_come_from_the_gather_transcript():
    written = next(
        f.content
        for f in build_desired(inventory_from_text(_inventory(env={"HCCL_BUFFSIZE": "200"}))).nodes["n1"].files
        if f.path == ENV_SH
    )
    facts = parse_gather_output(build_transcript("gather", [{"name": "file.env", "stdout": written}]))
    assert (
        facts.env_sh is not None
        and facts.env_sh["HCCL_BUFFSIZE"] == "200"
        and facts.env_sh["HCCL_CONNECT_TIMEOUT"] == "1200"
    )


def _saved_plan(tmp_path: Path, plan) -> Path:
    path = tmp_path / "plan.json"
    write_plan(
        PlanFile(
            str(tmp_path / "inventory.yaml"),
            "0" * 64,
            "t",
            "2026-01-01T00:00:00+00:00",
            [SavedHost("n1", "10.0.0.11", True, plan.changes)],
        ),
        path,
    )
    return path


def test_a_plan_file_keeps_the_variables_and_older_plans_without_them_still_read(tmp_path: Path):
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, _written_env({"HCCL_BUFFSIZE": "200"}))
    path = _saved_plan(tmp_path, plan)
    [saved] = [c for c in read_plan(path).hosts[0].changes if c.key == f"file:{ENV_SH}"]
    assert (
        saved.variables == (("HCCL_BUFFSIZE", "200", "400"),)
        and saved.describe() == f"{ENV_SH}: update: changes HCCL_BUFFSIZE 200 → 400"
    )
    data = json.loads(path.read_text())
    for change in data["hosts"][0]["changes"]:  # as an ascendprep before the variables wrote it
        if change.pop("variables", None) is not None:
            change["text"] = f"{ENV_SH}: update"
    path.write_text(json.dumps(data))
    [old] = [c for c in read_plan(path).hosts[0].changes if c.key == f"file:{ENV_SH}"]
    assert old.variables is None and old.sha256 == saved.sha256


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update(variables=["HCCL_BUFFSIZE"]), "variables must be an object"),
        (
            lambda c: c.update(variables={"HCCL_BUFFSIZE": ["200"]}),
            "variables.HCCL_BUFFSIZE must be [value before, value after]",
        ),
        (lambda c: c.update(variables={"A B": ["1", "2"]}), "variables.A B must be [value before, value after]"),
        (lambda c: c.update(variables={"HCCL_BUFFSIZE": [5, "2"]}), "before and after must differ, each text or null"),
        (
            lambda c: c.update(variables={"HCCL_BUFFSIZE": ["2", "2"]}),
            "before and after must differ, each text or null",
        ),
        (
            lambda c: c["variables"].update(HCCL_BUFFSIZE=["200", "800"]),
            ".text '/etc/ascendprep/env.sh: update: changes HCCL_BUFFSIZE 200 → 400' is not what this change does",
        ),
    ],
)
def test_hand_edited_variables_in_a_plan_file_are_refused(tmp_path: Path, edit, message):
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, _written_env({"HCCL_BUFFSIZE": "200"}))
    path = _saved_plan(tmp_path, plan)
    data = json.loads(path.read_text())
    edit(next(c for c in data["hosts"][0]["changes"] if "variables" in c))
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as caught:
        read_plan(path)
    assert str(caught.value.problems[0]).startswith(str(path)) and message in str(caught.value.problems[0]), (
        caught.value.problems
    )


def test_only_an_env_sh_change_may_list_variables(tmp_path: Path):
    _, plan = _env_plan({"HCCL_BUFFSIZE": "400"}, _written_env({"HCCL_BUFFSIZE": "200"}))
    path = _saved_plan(tmp_path, plan)
    data = json.loads(path.read_text())
    moved = next(c for c in data["hosts"][0]["changes"] if "variables" in c)
    moved["target"] = "/etc/ascendprep/set_env.sh"  # set_env.sh's change, words and all, made to list them
    moved["text"] = moved["text"].replace(ENV_SH, moved["target"])
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as caught:
        read_plan(path)
    assert f"only a change of {ENV_SH} lists variables" in str(caught.value.problems[0])
