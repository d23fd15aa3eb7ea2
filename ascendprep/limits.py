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

# --- host addresses and hostname resolution (probes/netaddr.py) ---------------------------------

#: Interface addresses (``ip -o addr``) or resolved addresses (``getent ahosts``) one host may
#: report; a host listing more is reported as unexpected output, not parsed further.
MAX_HOST_ADDRESSES = 4096
