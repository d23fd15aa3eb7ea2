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

# --- plan / apply (issue 9: the saved plan is data; issue 14: busy retries on apply) ---------

#: Characters of one sysctl value in the inventory (the kernel's own values are far shorter:
#: ``ip_local_reserved_ports`` with a dozen ranges is under 100).
SYSCTL_VALUE_MAX_LEN = 256

#: Characters of one sysctl key in the inventory (the longest real keys are under 60).
SYSCTL_KEY_MAX_LEN = 128

#: Bytes of a saved plan file ``apply`` reads; a real plan of 1,000 nodes is a few MB.
PLAN_FILE_MAX_BYTES = 64 * 1024 * 1024

#: Bytes of an inventory file ``apply`` reads to check it against the plan's hash.
INVENTORY_FILE_MAX_BYTES = 8 * 1024 * 1024

#: Extra tries of an ``hccn_tool`` set command that answered "hccn_tool is busy" (exit 11),
#: after 1, 2, 4 s: the gather's default (probes/gather.py ``busy_retries=3``) and back-off.
APPLY_HCCN_BUSY_RETRIES = 3
