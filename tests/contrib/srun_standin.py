#!/usr/bin/env python3
"""A stand-in for Slurm's ``srun`` that keeps the part of its contract ascendprep relies on.

Slurm cannot run on the test machine (no slurmctld/slurmd/munge in CI), so ``--launcher
slurm`` is tested against this script, which behaves as ``man srun`` says srun does inside an
allocation, and refuses what srun would refuse or hang on:

- no ``SLURM_JOB_ID`` in the environment and no ``--jobid``: srun would create a new allocation;
  the stand-in fails (``--launcher slurm`` must never get this far outside one);
- ``--jobid`` other than the allocation's, ``--nodelist`` naming a node outside
  ``SLURM_JOB_NODELIST``, more than one node or task: refused as srun refuses them;
- no ``--overlap``: the batch step holds the node's CPUs, so a real srun would wait for them
  ("Step creation temporarily disabled"); the stand-in fails at once with that message;
- the command runs on the node with srun's task environment (``SLURM_JOB_ID``, ``SLURM_STEP_ID``,
  ``SLURM_PROCID=0``, ``SLURM_LOCALID=0``, ``SLURM_NODEID``, ``SLURMD_NODENAME``,
  ``SLURM_STEP_NODELIST``, ``SLURM_NTASKS=1``), our stdin forwarded to it (``--input=0``), its
  stdout and stderr passed back and its exit code returned;
- ``--export`` chooses what of srun's own environment the task gets: ``ALL`` (or no option)
  everything, ``NONE`` only the ``SLURM_*`` variables, a list ``NAME,NAME=value`` the
  ``SLURM_*`` variables and those (a name srun's environment lacks is left out), ``ALL,...``
  everything and those.

"On the node": ``SRUN_STANDIN_NODES`` is JSON {node: argv prefix} (the lab's ``ssh`` argv for a
lab node); a node missing there runs the command on this machine. Every call is appended as one
JSON line to ``SRUN_STANDIN_LOG`` when set, with the names (not values) of srun's own environment.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys


def fail(message: str, code: int = 1) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    sys.stderr.write(f"srun: error: {message}\n")
    sys.exit(code)


def expand(nodelist: str) -> list:
    """Slurm hostlist (one bracket group per piece is enough for tests): ``n[1-3,5],login``."""
    names = []
    for piece in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)?", nodelist):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", piece)
        if not match:
            names.append(piece)
            continue
        head, body, tail = match.groups()
        for span in body.split(","):
            low, _, high = span.partition("-")
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{head}{str(number).zfill(len(low))}{tail}")
    return names


def exported(option: str, environ: dict) -> dict:
    """The part of srun's environment ``--export=option`` hands to the task (``man srun``)."""
    words = [w for w in option.split(",") if w]
    chosen = dict(environ) if "ALL" in words else {k: v for k, v in environ.items() if k.startswith("SLURM_")}
    for word in words:
        if word in ("ALL", "NONE"):
            continue
        name, has_value, value = word.partition("=")
        if has_value:
            chosen[name] = value
        elif name in environ:
            chosen[name] = environ[name]
    return chosen


def main(argv: list) -> None:
    options = {}
    index = 0
    while index < len(argv) and argv[index].startswith("-"):
        word = argv[index]
        name, has_value, value = word.partition("=")
        if (
            name
            in (
                "-w",
                "-N",
                "-n",
                "--jobid",
                "--nodelist",
                "--nodes",
                "--ntasks",
                "--input",
                "--export",
                "--kill-on-bad-exit",
            )
            and not has_value
        ):
            index += 1
            value = argv[index]
        options[{"-w": "--nodelist", "-N": "--nodes", "-n": "--ntasks"}.get(name, name)] = value
        index += 1
    command = argv[index:]
    job = os.environ.get("SLURM_JOB_ID")
    if not job and "--jobid" not in options:
        fail("no allocation (SLURM_JOB_ID): this stand-in does not allocate")
    if "--jobid" in options and job and options["--jobid"] != job:
        fail(f"Unable to confirm allocation for job {options['--jobid']}: Invalid job id specified")
    held = expand(os.environ.get("SLURM_JOB_NODELIST", ""))
    node = options.get("--nodelist", "")
    if options.get("--nodes") != "1" or options.get("--ntasks") != "1" or "," in node:
        fail("the stand-in runs exactly one task on one node (--nodes=1 --ntasks=1 --nodelist=NODE)")
    if node not in held:
        fail(f"Requested node configuration is not available ({node} is not in {held})")
    if "--overlap" not in options:
        fail("Step creation temporarily disabled, retrying (Requested nodes are busy)")
    if not command:
        fail("No command given to execute.")
    step = int(os.environ.get("SRUN_STANDIN_STEP", "0"))
    task_env = {
        "SLURM_JOB_ID": job or options["--jobid"],
        "SLURM_STEP_ID": str(step),
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": str(held.index(node)),
        "SLURMD_NODENAME": node,
        "SLURM_STEP_NODELIST": node,
        "SLURM_NTASKS": "1",
    }
    log = os.environ.get("SRUN_STANDIN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"options": options, "command": command, "environ": sorted(os.environ)}) + "\n")
    remote = json.loads(os.environ.get("SRUN_STANDIN_NODES", "{}")).get(node)
    if remote:
        line = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in task_env.items()) + " " + shlex.join(command)
        os.execvp(remote[0], [*remote, line])
    os.execvpe(command[0], command, {**exported(options.get("--export", "ALL"), dict(os.environ)), **task_env})


if __name__ == "__main__":
    main(sys.argv[1:])
