"""ORCHESTRATION over many hosts: the fan-out (``fanout``: one connection per host, bounded
concurrency, progress), the phases that talk to hosts (``hosts``: gather and apply; ``evidence``
and ``hccs``: verify's gather and pings; ``allreduce``: the all-reduce jobs; ``slurm``: the same
through srun; ``execvia``: node steps run inside the job's container), and verify's evidence
saved and merged (``bundle``, ``bundlemerge``).

Everything here sits between :mod:`ascendprep.remote` (one host) and the pure layers; nothing
pure imports it.
"""
