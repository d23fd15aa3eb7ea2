"""The all-reduce check: a worker that runs on every node, and the verdict over its records.

* ``worker.py`` -- uploaded alone to each node and run under torchrun (stdlib + torch only).
* ``sizes`` -- the ``--sizes`` spec parser, for validating user input on the control side.
* ``results`` -- parse the ranks' output and judge it (:func:`results.build_verdict`).
* ``jobs`` -- who runs which ranks, where they bind, and judging a run (pure); the runs over SSH
  are :mod:`ascendprep.run.allreduce`.

Nothing here imports torch at import time; only the worker, on the nodes, does.
"""

from importlib import resources


def worker_source() -> str:
    """The worker script's text, for a launcher to upload to each node."""
    return resources.files(__name__).joinpath("worker.py").read_text(encoding="utf-8")
