"""contrib/slurm/allreduce.sbatch run against stand-ins of ``srun`` and ``ascendprep``: its reports
go to a new folder of its own (never one that already lies at a guessable name), and the node
steps it starts with srun never get the sudo password."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
SBATCH = CONTRIB / "slurm" / "allreduce.sbatch"

#: srun for a one-node allocation: the options dropped, the command run here as that node's task;
#: the names of the environment the step would get are recorded.
FAKE_SRUN = """#!/bin/sh
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
env | sed 's/=.*//' > "$FAKE_DIR/srun.environ"
SLURMD_NODENAME=n1 exec "$@"
"""

FAKE_ASCENDPREP = """#!/bin/sh
echo "$*" >> "$FAKE_DIR/ascendprep.calls"
while [ $# -gt 0 ]; do
  if [ "$1" = --bundle-dir ]; then mkdir -p "$2" && echo '{}' > "$2/run.json"; fi
  shift
done
exit 0
"""


def fakes(tmp_path: Path) -> str:
    """A PATH whose srun and ascendprep are the stand-ins above."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", FAKE_SRUN), ("ascendprep", FAKE_ASCENDPREP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_reports_go_to_a_new_private_folder_and_steps_get_no_secret(tmp_path):
    submit = tmp_path / "submit"
    submit.mkdir(mode=0o1777)
    submit.chmod(0o1777)  # a shared folder: someone else may have made names in it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (submit / "ascendprep-check-77").symlink_to(elsewhere)  # the name a fixed scheme would use
    env = {
        "PATH": fakes(tmp_path),
        "FAKE_DIR": str(tmp_path),
        "SLURM_JOB_ID": "77",
        "SLURM_JOB_NODELIST": "n1",
        "SLURM_JOB_NUM_NODES": "1",
        "ASCENDPREP_SUDO_PASSWORD": "s3cret-sudo-pw",
    }
    done = subprocess.run(
        ["bash", str(SBATCH), "/srv/inventory.yaml"], cwd=submit, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(elsewhere.iterdir()) == []
    (run_dir,) = [p for p in submit.iterdir() if p.name.startswith("ascendprep-check-77.")]
    assert not run_dir.is_symlink() and run_dir.stat().st_mode & 0o777 == 0o700
    assert (run_dir / "bundles" / "n1" / "run.json").is_file() and (run_dir / "n1.txt").is_file()
    assert str(run_dir) in done.stdout
    step_environ = (tmp_path / "srun.environ").read_text().split()
    assert "PATH" in step_environ and "ASCENDPREP_SUDO_PASSWORD" not in step_environ
    calls = (tmp_path / "ascendprep.calls").read_text().splitlines()
    assert [c.split()[0:3] for c in calls][-1] == ["verify", "/srv/inventory.yaml", "--allreduce"]


def test_a_run_folder_that_already_exists_is_refused(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    env = {"PATH": fakes(tmp_path), "FAKE_DIR": str(tmp_path), "SLURM_JOB_ID": "78", "ASCENDPREP_RUN_DIR": str(taken)}
    done = subprocess.run(
        ["bash", str(SBATCH), "/srv/inventory.yaml"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "must be a new folder" in done.stderr
    assert list(taken.iterdir()) == [] and not (tmp_path / "ascendprep.calls").exists()
