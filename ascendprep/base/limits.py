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
# --- hostile input and evidence bundles (inventory/plan/bundle parsing, runs/ retention) --------

#: Bytes an inventory file may have. A 1,000-node inventory is a few hundred KB; anything this
#: large is a mistake or an attack, refused before YAML sees it.
INVENTORY_MAX_BYTES = 8 * 1024 * 1024

#: YAML nodes (scalars, mappings, sequences) a document may expand to, every alias counted as
#: the nodes it repeats. Stops the "billion laughs" alias bomb before anything is built.
YAML_MAX_NODES = 1_000_000

#: How deep YAML or JSON collections may nest. Real inventories, plans and bundles stay under 10;
#: the cap keeps every recursive walk far from Python's recursion limit.
INPUT_MAX_DEPTH = 64

#: Bytes a JSON document read back from disk (plan file, a bundle's run.json/allreduce.json)
#: may have.
JSON_MAX_BYTES = 64 * 1024 * 1024

#: Bytes one file of an evidence bundle may have once decompressed (raw transcripts are cut at
#: HOST_OUTPUT_CAP when gathered; this bounds what ``--from-bundle`` reads from a hostile one).
BUNDLE_FILE_MAX_BYTES = 64 * 1024 * 1024

#: Characters one /proc/sys value may have before the probe calls it unreadable. The kernel's
#: longest values (ip_local_reserved_ports with many ranges) stay far below this.
SYSCTL_VALUE_MAX_CHARS = 4096

#: Digits one number in a tool's output may have; u64 is 20 digits. Longer means not a number
#: the tool would print (and ``int()`` refuses more than 4300 digits with a ValueError).
NUMBER_MAX_DIGITS = 24

#: Verify runs kept under ``.ascendprep/runs/``; older ones are removed after each run
#: (``verify --keep-runs N``).
KEEP_RUNS_DEFAULT = 20

#: Free bytes below which verify warns before saving its evidence bundle; a bundle is not
#: written at all when the disk has less free space than the bundle needs.
RUNS_LOW_DISK_BYTES = 256 * 1024 * 1024

#: Characters of one value (a tool message, an LLDP name, a host's error) shown on the terminal,
#: in a table cell or JUnit; the rest is replaced by "… (N more characters)". ``--format json``
#: and the evidence bundle keep the whole value.
TERMINAL_VALUE_MAX_CHARS = 4096
# --- plan / apply (issue 9: the saved plan is data; issue 14: busy retries on apply) ---------

#: Characters of one sysctl value in the inventory (the kernel's own values are far shorter:
#: ``ip_local_reserved_ports`` with a dozen ranges is under 100).
SYSCTL_VALUE_MAX_LEN = 256

#: Characters of one sysctl key in the inventory (the longest real keys are under 60).
SYSCTL_KEY_MAX_LEN = 128

#: Bytes of a saved plan file ``apply`` reads; a real plan of 1,000 nodes is a few MB.
PLAN_FILE_MAX_BYTES = 64 * 1024 * 1024

#: Extra tries of an ``hccn_tool`` set command that answered "hccn_tool is busy" (exit 11),
#: after 1, 2, 4 s: the gather's default (probes/gather.py ``busy_retries=3``) and back-off.
APPLY_HCCN_BUSY_RETRIES = 3
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

# --- host addresses and hostname resolution (probes/netaddr.py) ---------------------------------

#: Interface addresses (``ip -o addr``) or resolved addresses (``getent ahosts``) one host may
#: report; a host listing more is reported as unexpected output, not parsed further.
MAX_HOST_ADDRESSES = 4096

# --- the job's environment (issue 17, helper f17b: probes/jobenv.py, checks/jobenv.py, execvia.py) ---

#: Seconds the gather's real ``import torch_npu`` may take (torch + torch_npu + CANN libraries load
#: in 5-30 s on a real node; a hung import costs this, once per node).
JOB_IMPORT_TIMEOUT_S = 90

#: Seconds a login shell (``bash -l``: the site profile, then set_env.sh and CANN's set_env.sh)
#: may take to print the job variables; profiles that run conda init or module loads take seconds.
JOB_LOGIN_TIMEOUT_S = 30

#: The time an HCCL cluster needs to start, the floor for HCCL_CONNECT_TIMEOUT (checks/jobenv.py):
#: JOB_START_BASE_S + JOB_START_PER_NODE_S per node, within HCCL's range [120, 7200] s.
JOB_START_BASE_S = 300
JOB_START_PER_NODE_S = 5

#: Words and characters of an ``--exec-via`` command prefix (``docker exec trainer``).
EXEC_VIA_MAX_WORDS = 16
EXEC_VIA_MAX_CHARS = 256
# --- jobs in the way: NPU processes, taken ports (issue 17, helper f17a) -------------------------

#: Rows of the ``npu-smi info`` process table one host may report (32 processes per chip is the
#: DCMI limit; 16 chips); more is unexpected output, not parsed further.
MAX_NPU_PROCESS_ROWS = 1024

#: Sockets on the HCCL/master ports one host may report (``ss`` or ``/proc/net/tcp`` lines).
MAX_PORT_SOCKETS = 4096

#: NICs one host may report from ``ip -o link``.
MAX_HOST_LINKS = 4096
# --- port counter sampling of verify (issue 20, helper g20b: probes/port_stats.py) --------------

#: Seconds between the two reads of ``hccn_tool -stat -g`` when ``verify --sample-interval`` is not
#: given: long enough that a steady error trickle (1/s) shows as several counts, short enough that
#: verify, which samples while its other probes run, grows by at most this much.
SAMPLE_INTERVAL_DEFAULT_S = 5

#: The longest ``--sample-interval`` accepted, in seconds (a pre-job check, not a monitor).
SAMPLE_INTERVAL_MAX_S = 600

# -- lab: simulated tool latency (issue 12, s1) ------------------------------------------------

#: The longest ``lab up --tool-latency-ms`` accepted: a slow real driver answers in about a
#: second; more only makes the lab useless.
TOOL_LATENCY_MAX_MS = 5000

# -- node-local runs: verify/apply --local, merged node bundles (issue 13, nl1) -----------------

#: Seconds ``ip -o addr show`` may take when a --local run looks for the inventory node it is.
LOCAL_IDENTITY_TIMEOUT_S = 5

#: This machine's addresses named in the "no node of the inventory is this machine" error before
#: "and N more" (a host with many VFs or containers has hundreds).
LOCAL_ADDRESSES_SHOWN = 8

# --- integrations: Prometheus textfile, Slurm launcher (issue 13, helper nl2) ------------------

#: Characters of one Prometheus label value (a check subject, a version string read from a host);
#: longer ones are cut: a hostile version file must not make a megabyte series.
PROMETHEUS_LABEL_VALUE_CAP = 256

#: Characters of ``SLURM_JOB_NODELIST`` read by ``--launcher slurm`` (a hostlist expression;
#: Slurm's own limit for one is far below this).
SLURM_NODELIST_MAX_CHARS = 65536

# --- a3a (issue 21): the HCCS ping phase of verify on A3 super-pods ------------------------------
#: Seconds one ``hccn_tool -hccs_ping`` may take (3 packets of the device's default timeout).
HCCS_PING_TIMEOUT_S = 15
#: Extra tries with back-off when hccn_tool answers busy (as the RoCE pings).
HCCS_PING_BUSY_RETRIES = 5

# -- on the node: per-NPU probes at once (issue 12, sp1) ----------------------------------------

#: Per-NPU jobs a gather or ping script runs at once on one node (probes/shell.py ap_each_npu):
#: one per NPU of an 8-NPU server, so a slow driver round trip is paid once per query, not once
#: per query and NPU. Each job still makes its own NPU's calls one at a time, and a "hccn_tool is
#: busy" answer is retried with back-off as before.
NPU_PROBE_JOBS = 8

#: Environment variable that overrides :data:`NPU_PROBE_JOBS` (1 to 64; 1: the NPUs in turn).
NPU_PROBE_JOBS_ENV = "ASCENDPREP_NPU_PROBE_JOBS"

# -- all-reduce: the rank table each rank was given (issue 21, a3c) -----------------------------

#: Ranks the rank_table gate names one by one, with their reason; the rest are counted and listed
#: as a range (a table out of order on a 48-server pod would otherwise give 768 reasons). The
#: worker's own caps (RANK_TABLE_MAX_BYTES, SPOD_INFO_TIMEOUT_S) live in allreduce/worker.py, which
#: is uploaded alone.
ALLREDUCE_RANK_TABLE_NAMED_RANKS = 8

# -- the controller's SSH connect (issue 12, c1) ------------------------------------------------

#: Bytes of an SSH private key file read at most (an RSA 16384-bit key is ~12 KB): the key path
#: comes from the inventory, and /dev/zero or a huge file there is a clear error, not a hang.
PRIVATE_KEY_MAX_BYTES = 1024 * 1024

# -- verify at 4,096 hosts: parsed facts (issue 12, v1) ------------------------------------------

#: Distinct port-counter layouts (the names one ``hccn_tool -stat -g`` lists, in order) whose
#: name → position map is shared by every read that lists them (facts.CounterValues). A fleet has
#: one per driver version; a host printing other names still parses, with a map of its own.
SHARED_COUNTER_LAYOUTS = 64

# -- verify at 4,096 hosts: the bundle's host files (issue 12, bu) --------------------------------

#: Bytes of host files a live verify writes after one free-space check before it checks again
#: (fleet/bundle.py BundleWriter): each check proves this much room beyond the host at hand, so
#: the bundle never writes more than the last check found free, without a statvfs per host.
BUNDLE_SPACE_CHECK_BYTES = 64 * 1024 * 1024

#: Digits a section attribute's number (``npu=``, ``chip=``, ``pass=``) or a ping script's
#: ``timeout=`` may have: a longer run is no id (and int() refuses 4,300 digits).
SECTION_ID_MAX_DIGITS = 18

# -- verify at 4,096 hosts: the main thread, the bundle and the report (issue 12, mt) -------------

#: Bytes of gzip members a live verify gathers in memory per ``hosts/<kind>.gz`` before it writes
#: them (fleet/bundle.py BundleWriter): ~35 hosts' transcripts per write instead of one write per
#: host; what is still held when the bundle is put in place is written then.
BUNDLE_APPEND_BUFFER_BYTES = 256 * 1024
