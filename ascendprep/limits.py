"""Every cap and deadline that bounds what a host, a run or an input can make the controller spend.

One named constant per limit, so that the README's table of limits, the ``--format json`` output
(which names a limit when it was hit) and the code agree. Each constant says what it bounds and
how to override it. Keep this module free of imports from the rest of the package: the pure core,
the remote layer and the scripts rendered for the nodes all read it.
"""

from __future__ import annotations

#: Bytes one tool call on a node may print (stdout and stderr each) before the node-side script
#: cuts it and marks it as cut. Real ``hccn_tool``/``npu-smi`` output is a few KB at most.
REMOTE_CALL_OUTPUT_CAP = 256 * 1024

#: Bytes the controller keeps of one host's channel (stdout and stderr together) for one remote
#: step; past it the rest is read and dropped, and the step is reported as "output over N KB".
HOST_OUTPUT_CAP = 16 * 1024 * 1024

# --- node-side output caps, command deadlines and read-back tails (issue 19, helper h4) ---------

#: Environment variable that overrides :data:`REMOTE_CALL_OUTPUT_CAP` (bytes, 1 to 64 MiB).
REMOTE_CALL_OUTPUT_CAP_ENV = "ASCENDPREP_REMOTE_CALL_OUTPUT_CAP"

#: Bytes of a cut tool output that the node still sends back, as evidence of what it printed
#: (the parsers never see it: a cut output is "could not read X: output over N KB").
REMOTE_CUT_EXCERPT = 4 * 1024

#: The overall deadline of ``plan``, ``apply`` and ``verify``, in seconds, when ``--timeout`` is
#: not given: per phase and per wave of ``forks`` hosts, the connect timeout plus the per-script
#: ``ssh.command_timeout``, plus this much slack for the local work around the phases.
COMMAND_DEADLINE_SLACK_S = 30

#: Lowest ``--timeout`` accepted, in seconds (below it not even one connection can be set up).
COMMAND_DEADLINE_MIN_S = 5

#: Bytes of a node's all-reduce (torchrun) log read back from the node: its end, where the error
#: is; a longer log is marked as cut. Override: ``ASCENDPREP_ALLREDUCE_LOG_TAIL`` (bytes, read
#: when the command starts).
ALLREDUCE_LOG_TAIL = 4 * 1024 * 1024
ALLREDUCE_LOG_TAIL_ENV = "ASCENDPREP_ALLREDUCE_LOG_TAIL"
