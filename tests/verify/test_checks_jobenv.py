"""The job-environment checks (checks/jobenv.py) on a four-node unit cluster: each fails on its cause,
passes on the unlike variant, and says "could not check" when its probe could not read."""

from __future__ import annotations

from dataclasses import replace

import pytest
from verify_cluster_facts import INVENTORY, JOB_ITEMS, TODAY, cluster_evidence, desired_state, healthy_facts

from ascendprep.base.findings import Severity
from ascendprep.desired import envfiles
from ascendprep.facts.jobenv_model import NnalVersion, ShellEnv, TorchNpuImport, Visibility
from ascendprep.facts.model import ProbeError
from ascendprep.verify.checks.model import COULD_NOT_CHECK, Status
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks

RANK_TABLE_INVENTORY = INVENTORY + "training:\n  rank_table: true\n"


def _results(desired, check: str, **job_changes):
    facts = healthy_facts(desired, "node2")
    facts = replace(facts, job=replace(facts.job, **job_changes)) if job_changes else facts
    hosts, plan = cluster_evidence(desired, {"node2": facts})
    results = run_checks(desired, hosts, plan, Selection.parse(only=[check]), today=TODAY)
    return [r for r in results if r.check == check and r.node == "node2"]


def _one(desired, check, **job_changes):
    (result,) = _results(desired, check, **job_changes)
    return result


@pytest.fixture(scope="module")
def rank_table_desired():
    return desired_state(RANK_TABLE_INVENTORY)


# --- job.rank_table -----------------------------------------------------------------------


def test_a_rank_table_export_in_the_login_environment_fails_when_the_plan_has_none(desired):
    result = _one(
        desired,
        "job.rank_table",
        login=ShellEnv({"HCCL_CONNECT_TIMEOUT": None, "RANK_TABLE_FILE": "/etc/ascendprep/hccl_8p.json"}),
    )
    assert result.failed and result.severity is Severity.ERROR
    assert "hccl_8p.json" in result.message and "EI0014" in result.message
    assert "grep -rn RANK_TABLE_FILE" in result.fix


def test_a_stray_table_is_a_warning_and_ours_is_not_stray(desired):
    result = _one(
        desired,
        "job.rank_table",
        rank_tables=("/etc/ascendprep/rank_table.json", "/etc/ascendprep/hccl_2p_0-7_10.0.0.1.json"),
    )
    assert result.failed and result.severity is Severity.WARNING
    assert "hccl_2p_0-7_10.0.0.1.json" in result.message and "rank_table.json'" not in result.message


def test_the_planned_rank_table_passes(rank_table_desired):
    launch = ShellEnv(
        {"HCCL_CONNECT_TIMEOUT": "1200", "RANK_TABLE_FILE": "/etc/ascendprep/rank_table.json"},
        sourced="/etc/ascendprep/set_env.sh",
        rank_table_exists=True,
    )
    result = _one(rank_table_desired, "job.rank_table", launch=launch)
    assert result.status is Status.PASSED, result.message
    assert "RANK_TABLE_FILE=/etc/ascendprep/rank_table.json" in envfiles.render_set_env_sh(
        envfiles.rendezvous_values(
            master_addr="10.0.0.1",
            master_port=29500,
            nnodes=2,
            node_rank=0,
            nproc_per_node=8,
            if_ip=None,
            socket_ifname=None,
            rank_table=True,
        )
    )


def test_the_planned_rank_table_must_exist(rank_table_desired):
    launch = ShellEnv(
        {"HCCL_CONNECT_TIMEOUT": "1200", "RANK_TABLE_FILE": "/etc/ascendprep/rank_table.json"},
        sourced="/etc/ascendprep/set_env.sh",
        rank_table_exists=False,
    )
    assert "does not exist" in _one(rank_table_desired, "job.rank_table", launch=launch).message


def test_set_env_exports_no_rank_table_unless_asked(desired):
    text = next(f.content for f in desired.nodes["node1"].files if f.path.endswith("set_env.sh"))
    assert "RANK_TABLE_FILE" not in text


# --- job.connect_timeout ------------------------------------------------------------------


def test_required_timeout_grows_with_nodes_within_hccls_range():
    assert envfiles.required_connect_timeout(2) == 310
    assert envfiles.required_connect_timeout(64) == 620
    assert envfiles.required_connect_timeout(10_000) == envfiles.HCCL_CONNECT_TIMEOUT_MAX_S
    assert envfiles.connect_timeout_for(2) == 1200 and envfiles.connect_timeout_for(400) == 2300
    assert "export HCCL_CONNECT_TIMEOUT=2300" in envfiles.render_env_sh({}, nodes=400)


def test_a_short_timeout_in_the_site_profile_fails(desired):
    result = _one(
        desired, "job.connect_timeout", login=ShellEnv({"HCCL_CONNECT_TIMEOUT": "60", "RANK_TABLE_FILE": None})
    )
    assert result.failed and "'60'" in result.message and "320 s" in result.message  # 4 nodes
    assert result.evidence["required_s"] == 320


def test_an_unreadable_login_shell_is_could_not_check(desired):
    facts = healthy_facts(desired, "node2")
    facts = replace(
        facts,
        job=replace(facts.job, login=None, launch=None),
        errors=(ProbeError("job.login", "timeout", "login shell (bash -l) environment: timed out after 10 s"),),
    )
    hosts, plan = cluster_evidence(desired, {"node2": facts})
    results = run_checks(
        desired, hosts, plan, Selection.parse(only=["job.connect_timeout", "job.rank_table"]), today=TODAY
    )
    mine = [r for r in results if r.node == "node2" and r.check.startswith("job.")]
    assert mine and all(r.failed and r.message.startswith(COULD_NOT_CHECK) and "timed out" in r.message for r in mine)


# --- job.container ------------------------------------------------------------------------


def test_without_exec_via_the_container_check_is_skipped(desired):
    result = _one(desired, "job.container", host_visible=None)
    assert result.status is Status.SKIPPED and "--exec-via" in result.message


def test_the_container_names_what_it_lacks(desired):
    hidden = {
        "tool:hccn_tool",
        "lib:/usr/local/Ascend/driver/lib64",
        "file:/etc/ascendprep/env.sh",
        "dev:/dev/davinci3",
    }
    result = _one(
        desired,
        "job.container",
        visible=Visibility(present=tuple(i for i in JOB_ITEMS if i not in hidden), absent=tuple(hidden)),
    )
    assert result.failed
    for text in (
        "hccn_tool",
        "/usr/local/Ascend/driver/lib64",
        "/etc/ascendprep/env.sh",
        "/dev/davinci3",
        "docker exec trainer",
    ):
        assert text in result.message
    assert "--device" in result.fix


def test_a_container_given_fewer_npus_than_the_host_has_but_enough_for_the_job_passes(desired):
    host = Visibility(
        present=JOB_ITEMS + tuple(f"dev:/dev/davinci{i}" for i in range(8, 16)), via="docker exec trainer"
    )
    assert _one(desired, "job.container", host_visible=host).status is Status.PASSED


# --- job.nnal ------------------------------------------------------------------------------


def test_nnal_of_another_cann_is_a_warning(desired):
    result = _one(
        desired,
        "job.nnal",
        nnal=NnalVersion("/usr/local/Ascend/nnal/atb/latest/version.info", "8.0.T63", "8.0.T63.B020"),
    )
    assert result.failed and result.severity is Severity.WARNING and "8.2.RC1" in result.message


def test_nnal_absent_is_skipped_and_matching_passes(desired):
    assert _one(desired, "job.nnal", nnal=None).status is Status.SKIPPED
    assert _one(desired, "job.nnal").status is Status.PASSED


# --- job.torch_npu_import -----------------------------------------------------------------


def test_an_undefined_symbol_import_names_the_symbol_and_the_cause(desired):
    error = 'Traceback (most recent call last):\n  File "<string>", line 1\nImportError: libtorch_npu.so: undefined symbol: _ZN3c10'
    result = _one(desired, "job.torch_npu_import", torch_npu=TorchNpuImport(ok=False, error=error, rc=1))
    assert result.failed and "undefined symbol: _ZN3c10" in result.message
    assert "built for another torch or CANN" in result.fix
    assert result.evidence["output"] == error


def test_a_working_import_passes(desired):
    assert _one(desired, "job.torch_npu_import").status is Status.PASSED
