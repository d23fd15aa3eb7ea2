"""A node's torchrun log comes back as its tail, marked when it was longer (issue 19)."""

from __future__ import annotations

import os
import shutil
import uuid

import pytest
from nodescript import run_node_script

from ascendprep.verify.allreduce import scripts
from ascendprep.verify.allreduce.scripts import (
    LOG_CUT_LINE,
    LOG_MAX_BYTES,
    LOG_NAME,
    RUN_DIR_PREFIX,
    render_cleanup_script,
)


@pytest.fixture
def run_dir():
    directory = f"{RUN_DIR_PREFIX}test-{uuid.uuid4().hex[:12]}"
    os.makedirs(directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _cleanup_log(directory: str) -> str:
    result = run_node_script(
        ["sh", "-s"], input=render_cleanup_script(directory), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    log = scripts.parse_script_output(result.stdout).log
    assert log is not None
    return log


def test_a_long_log_comes_back_as_its_marked_tail(run_dir):
    ending = "rank 3: RuntimeError: HCCL timeout\n"
    with open(os.path.join(run_dir, LOG_NAME), "w") as log:
        log.write("noise " * (LOG_MAX_BYTES // 6 + 1000))
        log.write(ending)
    text = _cleanup_log(run_dir)
    first, _, rest = text.partition("\n")
    assert first == LOG_CUT_LINE.format(LOG_MAX_BYTES)
    assert len(rest.encode()) <= LOG_MAX_BYTES and rest.rstrip("\n").endswith(ending.strip())


def test_a_short_log_comes_back_whole_and_unmarked(run_dir):
    with open(os.path.join(run_dir, LOG_NAME), "w") as log:
        log.write("started\nrank 0 done\n")
    assert _cleanup_log(run_dir).strip() == "started\nrank 0 done"
