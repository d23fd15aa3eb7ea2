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

# --- remote transport (SSH and local): per-step deadlines and what the controller keeps -------

#: Seconds the SSH server has to answer one request of a session: the exec request that starts a
#: script, the SFTP subsystem request. Connect, auth and channel open use the host's
#: ``connect_timeout`` (inventory ``ssh.connect_timeout``). An sshd that never answers makes the
#: host "timed out in exec request" instead of hanging the command.
SSH_REQUEST_TIMEOUT = 15.0

#: Seconds one SFTP operation (open, write, chmod, rename, remove) may take before the host is
#: marked "timed out in sftp OP".
SFTP_OPERATION_TIMEOUT = 60.0

#: Bytes the controller keeps of one fetched file (``Transport.fetch``); a longer file is
#: "output over N KB" for that host, the rest is read and dropped.
FETCH_FILE_CAP = HOST_OUTPUT_CAP

#: Seconds sudo has (password mode) to accept the password and start the script; past it, or at
#: once when sudo says the password was wrong, that sudo is killed before it can read a second
#: attempt. Also the limit of the one password check made before fanning out.
SUDO_AUTH_TIMEOUT = 30.0
