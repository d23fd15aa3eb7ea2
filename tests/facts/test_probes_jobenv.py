"""The job-environment probes (probes/jobenv.py): the real shell lines run locally, and the parsers.

The local runs use a private $HOME whose ``.profile`` plays the site profile (``bash -l`` and
``sh -l`` read it), a fake interpreter for the torch_npu import, and a fake Ascend home.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.base import limits
from ascendprep.facts import jobenv
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import HostFacts
from ascendprep.facts.sections import Section
from ascendprep.facts.unit import Draft
from ascendprep.facts.units import by_section

UNDEFINED = "ImportError: /usr/local/lib/python3.10/site-packages/torch_npu/lib/libtorch_npu.so: undefined symbol: _ZN3c104impl3cow11cow_deleterEPv"


def _fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bin" / "python-job"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _gather(tmp_path: Path, python: str, profile: str = "", home_files: dict | None = None) -> HostFacts:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    # The site profile: both shells' login files, with banner noise a real profile may print.
    for name in (".profile", ".bash_profile"):
        (home / name).write_text("echo 'Welcome to the cluster'\n" + profile)
    ascend = tmp_path / "Ascend"
    for relative, text in (home_files or {}).items():
        (ascend / relative).parent.mkdir(parents=True, exist_ok=True)
        (ascend / relative).write_text(text)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp_path)}
    script = render_gather_script(0, python, per_command_timeout=5, ascend_home=str(ascend))
    result = run_node_script(
        ["sh", "-s"], input=script, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
    )
    return parse_gather_output(result.stdout)


def test_a_site_profile_export_is_read_from_the_login_shell_and_the_import_error_is_kept(tmp_path):
    python = _fake_python(tmp_path, f"echo 'Traceback (most recent call last):' >&2\necho '{UNDEFINED}' >&2\nexit 1\n")
    facts = _gather(
        tmp_path,
        python,
        profile="export HCCL_CONNECT_TIMEOUT=60\nexport RANK_TABLE_FILE=/etc/ascendprep/hccl_8p.json\n",
        home_files={
            jobenv.NNAL_VERSION_FILE: "    Ascend-cann-atb : 8.0.T63\n    Ascend-cann-atb Version : 8.0.T63.B020\n    Platform : aarch64\n"
        },
    )
    job = facts.job
    assert job is not None and job.login is not None
    assert job.login.values == {
        **dict.fromkeys(jobenv.JOB_VARIABLES),
        "HCCL_CONNECT_TIMEOUT": "60",
        "RANK_TABLE_FILE": "/etc/ascendprep/hccl_8p.json",
    }
    assert job.login.rank_table_exists is False
    assert job.torch_npu is not None and not job.torch_npu.ok
    assert "undefined symbol" in jobenv.import_error_line(job.torch_npu.error)
    assert job.nnal is not None and (job.nnal.version, job.nnal.build) == ("8.0.T63", "8.0.T63.B020")
    assert job.visible is not None and "tool:hccn_tool" in job.visible.absent
    assert job.host_visible is None  # no --exec-via
    assert not [e for e in facts.errors if e.probe.startswith("job.")]


def test_a_clean_node_reads_unset_variables_and_a_working_import(tmp_path):
    python = _fake_python(tmp_path, "echo 'ascendprep-torch-npu 2.1.0.post8'\n")
    facts = _gather(tmp_path, python)
    job = facts.job
    assert job.login.values == dict.fromkeys(jobenv.JOB_VARIABLES)
    assert job.torch_npu.ok and job.torch_npu.version == "2.1.0.post8"
    assert job.nnal is None and not facts.errors_for("job.nnal")  # not installed is not an error
    assert HostFacts.from_dict(facts.to_dict()).job == job


def test_a_profile_that_exits_leaves_the_variables_unknown_not_unset(tmp_path):
    python = _fake_python(tmp_path, "echo 'ascendprep-torch-npu 2.1.0'\n")
    facts = _gather(tmp_path, python, profile="exit 3\n")
    assert facts.job.login is None
    errors = facts.errors_for("job.login")
    assert errors and "login shell" in errors[0].message


def test_shell_env_ignores_banners_and_refuses_silence():
    text = "Welcome\nascendprep-env\tHCCL_CONNECT_TIMEOUT\t1\t1800\nascendprep-env\tRANK_TABLE_FILE\t0\t\nnoise\tx\n"
    env = jobenv.parse_shell_env(text, None)
    assert env.values == {"HCCL_CONNECT_TIMEOUT": "1800", "RANK_TABLE_FILE": None}
    assert env.rank_table_exists is None
    with pytest.raises(ValueError):
        jobenv.parse_shell_env("Welcome to the cluster\n", None)


def test_visibility_lines_and_the_hosts_via_line():
    view = jobenv.parse_visibility(
        "via docker exec trainer\ndev present /dev/davinci0\ndev absent /dev/hisi_hdc\ntool present hccn_tool\ngarbage\n"
    )
    assert view.via == "docker exec trainer"
    assert view.present == ("dev:/dev/davinci0", "tool:hccn_tool")
    assert view.absent == ("dev:/dev/hisi_hdc",)


def test_nnal_version_needs_its_atb_line():
    with pytest.raises(ValueError):
        jobenv.parse_nnal_version("/x/version.info", "Platform : aarch64\n")


def test_import_outcomes():
    assert jobenv.parse_import(0, "ascendprep-torch-npu 2.4.0\n", "").version == "2.4.0"
    failed = jobenv.parse_import(1, "", "Traceback\n  File x\nModuleNotFoundError: No module named 'torch_npu'\n")
    assert (
        not failed.ok and jobenv.import_error_line(failed.error) == "ModuleNotFoundError: No module named 'torch_npu'"
    )
    big = jobenv.parse_import(1, "", "x" * 100_000)
    assert len(big.error) == jobenv.IMPORT_ERROR_TAIL


@pytest.mark.parametrize("rc, kind", [(124, "timeout"), (127, "missing")])
def test_a_hung_or_missing_interpreter_is_an_error_not_a_result(rc, kind):
    draft = Draft()
    by_section()["job.torch_npu"].read(
        Section("job.torch_npu", {}, "", "python: not found" if rc == 127 else "", rc), draft
    )
    assert [e.kind for e in draft.errors] == [kind]
    assert "job" not in draft.fields
    if rc == 124:  # the import's own limit, not the script's per-command one
        assert f"timed out after {limits.JOB_IMPORT_TIMEOUT_S}s" in draft.errors[0].message


def test_odd_output_is_a_recorded_error():
    draft = Draft()
    by_section()["job.visible"].read(Section("job.visible", {}, "\x00\x01 nonsense\n", "", 0), draft)
    assert draft.errors and draft.errors[0].probe == "job.visible" and "no item lines" in draft.errors[0].message


def test_every_job_section_is_a_registered_unit():
    assert {u.section for u in jobenv.JOBENV_UNITS} <= set(by_section())
