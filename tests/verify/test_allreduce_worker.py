"""The worker for real: torchrun, two gloo ranks on this machine, tiny sizes.

Each torchrun start costs a few seconds (two torch imports), so one healthy run is shared by
the tests that read it, and the fault runs use the smallest sweep that still exercises them.
"""

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch  # noqa: E402,F401  (.ci/run installs the CPU build: a missing torch must fail, not skip)

from ascendprep.verify.allreduce import worker  # noqa: E402
from ascendprep.verify.allreduce.results import build_verdict, parse_worker_output  # noqa: E402

WORKER = worker.__file__
SMALL_SWEEP = ["--sizes", "1K:64K", "--warmup", "1", "--iters", "3"]
TORCHRUN_ENV_VARS = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "GROUP_RANK",
    "ROLE_RANK",
    "TORCHELASTIC_RUN_ID",
)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV_VARS}
    env.update(OMP_NUM_THREADS="1", **extra)
    return env


class Run:
    def __init__(self, proc, seconds):
        self.returncode = proc.returncode
        self.stdout = proc.stdout_text
        self.stderr = proc.stderr_text
        self.seconds = seconds
        self.output = parse_worker_output(self.stdout + "\n" + self.stderr)
        self.records = {r.rank: r for r in self.output.records}
        raw = [
            json.loads(line.split(worker.RESULT_MARKER, 1)[1])
            for line in self.stdout.splitlines()
            if worker.RESULT_MARKER in line
        ]
        self.raw = {record["rank"]: record for record in raw}


def run(command, env=None, timeout=120):
    """Run in a new session so that a hung run's workers can be killed with it."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or clean_env(),
        start_new_session=True,
    )
    try:
        proc.stdout_text, proc.stderr_text = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{command} did not finish within {timeout}s")
    return Run(proc, time.monotonic() - started)


def torchrun(*worker_args, nproc=2):
    return run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(nproc),
            "--nnodes",
            "1",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(free_port()),
            WORKER,
            *worker_args,
        ]
    )


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    result_dir = tmp_path_factory.mktemp("results")
    outcome = torchrun(
        *SMALL_SWEEP, "--train", "--train-steps", "2", "--node-name", "lab-a", "--result-dir", str(result_dir)
    )
    outcome.result_dir = result_dir
    return outcome


def test_healthy_run_passes_connectivity_and_sweep(healthy):
    assert healthy.returncode == 0, healthy.stderr[-2000:]
    assert sorted(healthy.records) == [0, 1]
    for record in healthy.records.values():
        assert record.ok and record.backend == "gloo" and record.world_size == 2
        assert record.node == "lab-a"
        assert all(record.phases[p].status == "pass" for p in ("setup", "init", "connectivity", "performance"))
        assert [m.bytes for m in record.sizes] == [1024, 4096, 16384, 65536]
        assert all(m.wrong_elements == 0 and m.time_us > 0 for m in record.sizes)
    raw = healthy.raw[0]["sizes"][-1]
    assert raw["busbw_GBps"] > 0
    assert raw["busbw_GBps"] == pytest.approx(raw["algbw_GBps"])  # 2(n-1)/n = 1 for n = 2
    assert worker.ERROR_MARKER not in healthy.stderr


def test_healthy_run_gives_a_passing_verdict_with_busbw(healthy):
    verdict = build_verdict(healthy.output, expected_world_size=2, expected_nodes=["lab-a"], min_busbw_GBps=1e-6)
    assert verdict.passed, verdict.reasons
    assert verdict.connectivity_passed and verdict.correctness_passed
    assert verdict.busbw_floor.at_bytes == 65536 and verdict.busbw_floor.measured_busbw_GBps > 0


def test_training_passes_ddp_fsdp_and_hsdp(healthy):
    for raw in healthy.raw.values():
        train = raw["train"]
        assert raw["phases"]["train"]["status"] == "pass"
        assert {mode: train[mode]["status"] for mode in ("ddp", "fsdp", "hsdp")} == {
            "ddp": "pass",
            "fsdp": "pass",
            "hsdp": "pass",
        }
        assert all(train[m]["params_identical"] for m in ("ddp", "fsdp", "hsdp"))
        assert train["hsdp"]["mesh"] == [1, 2]  # one node x two processes
        assert train["ddp"]["amp"]["status"] == "skipped"  # CPU run: AMP not exercised, said so
        assert isinstance(train["ddp"]["loss"], float)
    digests = {raw["train"]["fsdp"]["param_digest"] for raw in healthy.raw.values()}
    assert len(digests) == 1


def test_result_dir_holds_the_same_records(healthy):
    for rank, raw in healthy.raw.items():
        stored = json.loads((healthy.result_dir / f"rank-{rank}.json").read_text())
        assert stored == raw


def test_corrupted_input_is_counted_and_fails():
    outcome = torchrun("--sizes", "1K:4K", "--warmup", "0", "--iters", "1", "--inject-wrong", "1")
    assert outcome.returncode != 0
    for record in outcome.records.values():
        assert [m.wrong_elements for m in record.sizes] == [2, 2]  # both ranks see the bad sum
        assert record.error_phase == "performance"
    assert "ASCENDPREP_ERROR phase=performance rank=0" in outcome.stderr
    verdict = build_verdict(outcome.output)
    assert not verdict.passed and not verdict.correctness_passed
    assert "8 wrong elements at sizes 1K, 4K" in verdict.reasons


def test_rank_that_never_joins_fails_init_within_timeout():
    """Rank 0 of a world of 2, started alone as a node whose peer never came up."""
    env = clean_env(
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="2",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
    )
    outcome = run([sys.executable, WORKER, "--init-timeout", "2"], env=env, timeout=60)
    assert outcome.returncode == 1
    assert outcome.seconds < 30
    assert outcome.records[0].error_phase == "init"
    assert outcome.records[0].error_reason.startswith("timed out after 2s in init_process_group")
    assert "ASCENDPREP_ERROR phase=init rank=0" in outcome.stderr
    verdict = build_verdict(outcome.output)
    assert verdict.missing_ranks == (1,) and not verdict.connectivity_passed


def test_stalled_peer_ends_the_run_naming_the_phase():
    outcome = torchrun("--sizes", "1K", "--iters", "1", "--op-timeout", "2", "--inject-stall", "1")
    assert outcome.returncode != 0
    assert outcome.seconds < 60
    waiting, stalled = outcome.records[0], outcome.records[1]
    assert waiting.error_phase == "performance"
    assert waiting.error_reason.startswith("timed out after 2s in the checked all_reduce of 1K")
    # torchrun then stops the stalled rank, which still reports where it was.
    assert stalled.error_phase == "performance"
    assert stalled.error_reason.startswith("stopped by SIGTERM")


@pytest.mark.parametrize(
    "args,env_extra,fragment",
    [
        (
            ["--sizes", "1K:3Q"],
            {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
            "'3Q' is not a size",
        ),
        (["--node-name", "node a"], {}, "'node a' is not a node name"),
        ([], {}, "RANK is not set: run this worker under torchrun"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, env_extra, fragment):
    outcome = run([sys.executable, WORKER, *args], env=clean_env(**env_extra), timeout=60)
    assert outcome.returncode == 2
    (line,) = [l for l in outcome.stderr.splitlines() if l.startswith(worker.ERROR_MARKER)]
    assert "phase=setup" in line and fragment in line


def _setup_env():
    return {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }


@pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None, reason="real torch_npu")
def test_broken_torch_npu_is_reported_not_papered_over_with_gloo(tmp_path):
    """A node whose CANN is not sourced: auto must not fall back to a meaningless gloo pass."""
    fake = tmp_path / "torch_npu"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('libhccl.so: cannot open shared object file')\n")
    env = clean_env(PYTHONPATH=str(tmp_path), **_setup_env())
    outcome = run([sys.executable, WORKER], env=env, timeout=60)
    assert outcome.returncode == 1
    record = outcome.records[0]
    assert record.error_phase == "setup" and record.backend is None
    assert "torch_npu is installed but failed to import (ImportError: libhccl.so" in record.error_reason
    assert "set_env.sh" in record.error_reason


@pytest.mark.parametrize(
    "backend,fragment",
    [
        ("hccl", "hccl backend unavailable: torch_npu is not installed"),
        ("nccl", "nccl backend unavailable: torch sees no CUDA device"),
    ],
)
def test_requested_backend_that_cannot_run_fails_setup(backend, fragment):
    if torch.cuda.is_available() or importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("this machine has an accelerator stack")
    outcome = run([sys.executable, WORKER, "--backend", backend], env=clean_env(**_setup_env()), timeout=60)
    assert outcome.returncode == 1
    assert outcome.records[0].error_phase == "setup"
    assert fragment in outcome.records[0].error_reason
