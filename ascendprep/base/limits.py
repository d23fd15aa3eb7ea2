"""Every cap and deadline that bounds what a host, a run or an input can make the controller spend.

One named constant per limit, so that the README's table of limits, the ``--format json`` output
(which names a limit when it was hit) and the code agree. Each constant says what it bounds and
how to override it. Keep this module free of imports from the rest of the package: the pure core,
the remote layer and the scripts rendered for the nodes all read it.

The limits are grouped by subject, roughly in the order a run meets them, each group under a
heading comment.
"""

from __future__ import annotations

# --- inventory and command-line input ---------------------------------------------------------

#: Bytes an inventory file may have: a 1,000-node one is a few hundred KB, more is a mistake or an
#: attack, refused before YAML sees it.
INVENTORY_MAX_BYTES = 8 * 1024 * 1024

#: YAML nodes a document may expand to, each alias counted as the nodes it repeats: stops the
#: "billion laughs" alias bomb before anything is built.
YAML_MAX_NODES = 1_000_000

#: How deep YAML or JSON collections may nest (real inventories, plans and bundles stay under 10),
#: so that every recursive walk stays far from Python's recursion limit.
INPUT_MAX_DEPTH = 64

#: Characters of one sysctl key in the inventory (the longest real keys are under 60).
SYSCTL_KEY_MAX_LEN = 128

#: Variables a node's env.sh may export before plan calls its variables unreadable: the one
#: ascendprep writes has the HCCL/log defaults and the inventory's ``env:`` (tens, not hundreds).
ENV_SH_MAX_VARIABLES = 1024

#: Characters of one sysctl value in the inventory (``ip_local_reserved_ports`` with a dozen
#: ranges is under 100).
SYSCTL_VALUE_MAX_LEN = 256

#: Words and characters of an ``--exec-via`` command prefix (``docker exec trainer``).
EXEC_VIA_MAX_WORDS = 16
EXEC_VIA_MAX_CHARS = 256
#: Bytes of a script run through ``--exec-via``: it travels as one argument of ``sh -c``, and Linux
#: refuses a single argument of 32 pages (MAX_ARG_STRLEN, 131072 bytes with its NUL) or more.
EXEC_VIA_SCRIPT_MAX_BYTES = 131071

# --- SSH, sudo and the command's deadline -----------------------------------------------------

#: Bytes of an SSH private key file read at most (an RSA 16384-bit key is ~12 KB): the path
#: comes from the inventory, and /dev/zero or a huge file there is a clear error, not a hang.
PRIVATE_KEY_MAX_BYTES = 1024 * 1024

#: Seconds sshd has to answer an exec or SFTP-subsystem request (connect and auth: the inventory's
#: ``ssh.connect_timeout``): an sshd that never answers makes the host "timed out in exec request".
SSH_REQUEST_TIMEOUT = 15.0

#: Seconds one SFTP operation (open, write, chmod, rename, remove) may take before the host is
#: marked "timed out in sftp OP".
SFTP_OPERATION_TIMEOUT = 60.0

#: Seconds sudo has (password mode, and the one password check before fanning out) to accept the
#: password; past it, or on a wrong password, sudo is killed before it can read a second attempt.
SUDO_AUTH_TIMEOUT = 30.0

#: Seconds of slack for the local work around the phases, added to the default deadline of a command
#: without ``--timeout`` (connect plus command timeout per phase and per wave of ``forks`` hosts).
COMMAND_DEADLINE_SLACK_S = 30

#: Lowest ``--timeout`` accepted, in seconds (below it not even one connection can be set up).
COMMAND_DEADLINE_MIN_S = 5

# --- what a host sends back: output caps ------------------------------------------------------

#: Bytes one tool call on a node may print (stdout and stderr each) before the node-side script
#: cuts it and marks it as cut. Real ``hccn_tool``/``npu-smi`` output is a few KB at most.
REMOTE_CALL_OUTPUT_CAP = 256 * 1024

#: Environment variable that overrides :data:`REMOTE_CALL_OUTPUT_CAP` (bytes, 1 to 64 MiB).
REMOTE_CALL_OUTPUT_CAP_ENV = "ASCENDPREP_REMOTE_CALL_OUTPUT_CAP"

#: Bytes of a cut tool output that the node still sends back, as evidence of what it printed
#: (the parsers never see it: a cut output is "could not read X: output over N KB").
REMOTE_CUT_EXCERPT = 4 * 1024

#: Bytes the controller keeps of one host's channel (stdout and stderr together) for one remote
#: step; past it the rest is read and dropped, and the step is reported as "output over N KB".
HOST_OUTPUT_CAP = 16 * 1024 * 1024

#: Bytes the controller keeps of one fetched file (``Transport.fetch``); a longer file is
#: "output over N KB" for that host, the rest is read and dropped.
FETCH_FILE_CAP = HOST_OUTPUT_CAP

# --- the gather: what a node runs and what the probes read ------------------------------------

#: Per-NPU jobs a gather or ping script runs at once on a node (facts/shell.py ``ap_each_npu``),
#: one per NPU of an 8-NPU server: a slow driver round trip is paid once per query, not per NPU.
NPU_PROBE_JOBS = 8

#: Environment variable that overrides :data:`NPU_PROBE_JOBS` (1 to 64; 1: the NPUs in turn).
NPU_PROBE_JOBS_ENV = "ASCENDPREP_NPU_PROBE_JOBS"

#: Digits one number in a tool's output, or an integer in JSON read back (plan file, bundle), may
#: have; u64 is 20 digits. Longer means not a number the tool (or ascendprep) would write (and
#: ``int()`` refuses more than 4300 digits with a ValueError).
NUMBER_MAX_DIGITS = 24

#: Digits a section attribute's number (``npu=``, ``chip=``, ``pass=``) or a ping script's
#: ``timeout=`` may have: a longer run is no id (and int() refuses 4,300 digits).
SECTION_ID_MAX_DIGITS = 18

#: Characters one /proc/sys value may have before the probe calls it unreadable. The kernel's
#: longest values (ip_local_reserved_ports with many ranges) stay far below this.
SYSCTL_VALUE_MAX_CHARS = 4096

#: Interface addresses (``ip -o addr``) or resolved addresses (``getent ahosts``) one host may
#: report; a host listing more is reported as unexpected output, not parsed further.
MAX_HOST_ADDRESSES = 4096

#: NICs one host may report from ``ip -o link``.
MAX_HOST_LINKS = 4096

#: Sockets on the HCCL/master ports one host may report (``ss`` or ``/proc/net/tcp`` lines).
MAX_PORT_SOCKETS = 4096

#: Rows of the ``npu-smi info`` process table one host may report (32 processes per chip is the
#: DCMI limit; 16 chips); more is unexpected output, not parsed further.
MAX_NPU_PROCESS_ROWS = 1024

# --- the job's environment: what an HCCL job meets when it starts -----------------------------

#: Seconds the gather's real ``import torch_npu`` may take (torch + torch_npu + CANN libraries load
#: in 5-30 s on a real node; a hung import costs this, once per node).
JOB_IMPORT_TIMEOUT_S = 90

#: Seconds a login shell (``bash -l``: the site profile, then set_env.sh and CANN's set_env.sh)
#: may take to print the job variables; profiles that run conda init or module loads take seconds.
JOB_LOGIN_TIMEOUT_S = 30

#: Seconds an HCCL cluster needs to start, base plus per node (within HCCL's range [120, 7200] s):
#: the floor for HCCL_CONNECT_TIMEOUT, written by desired/envfiles.py and checked by job.* checks.
JOB_START_BASE_S = 300
JOB_START_PER_NODE_S = 5

# --- apply --------------------------------------------------------------------------------------

#: Extra tries of an ``hccn_tool`` set command that answered "hccn_tool is busy" (exit 11),
#: after 1, 2, 4 s: the gather's default (facts/gather.py ``busy_retries=3``) and back-off.
APPLY_HCCN_BUSY_RETRIES = 3

# --- verify: port counter sampling and the HCCS pings -----------------------------------------

#: Seconds between the two port-counter reads without ``verify --sample-interval``: a steady
#: error trickle (1/s) shows as several counts; verify, sampling while it probes, grows by this.
SAMPLE_INTERVAL_DEFAULT_S = 5

#: The longest ``--sample-interval`` accepted, in seconds (a pre-job check, not a monitor).
SAMPLE_INTERVAL_MAX_S = 600

#: Seconds one ``hccn_tool -hccs_ping`` may take on an A3 super-pod (3 packets of the device's
#: default timeout).
HCCS_PING_TIMEOUT_S = 15

#: Extra tries with back-off when hccn_tool answers busy to an HCCS ping (as the RoCE pings).
HCCS_PING_BUSY_RETRIES = 5

# --- the all-reduce -----------------------------------------------------------------------------

#: Bytes of a node's all-reduce (torchrun) log read back: its end, where the error is. Override:
#: ``ASCENDPREP_ALLREDUCE_LOG_TAIL`` (bytes, read when the command starts).
ALLREDUCE_LOG_TAIL = 4 * 1024 * 1024
ALLREDUCE_LOG_TAIL_ENV = "ASCENDPREP_ALLREDUCE_LOG_TAIL"

#: Ranks the rank_table gate names one by one, the rest as a range: a table out of order on a
#: 48-server pod would otherwise give 768 reasons. (The worker, uploaded alone, has its own caps.)
ALLREDUCE_RANK_TABLE_NAMED_RANKS = 8

# --- plan files and evidence bundles ------------------------------------------------------------

#: Bytes of a JSON document read back from disk (plan file, a bundle's run.json/allreduce.json).
JSON_MAX_BYTES = 64 * 1024 * 1024

#: Bytes of a saved plan file ``apply`` reads; a real plan of 1,000 nodes is a few MB.
PLAN_FILE_MAX_BYTES = 64 * 1024 * 1024

#: Bytes one file of an evidence bundle may have once decompressed (raw transcripts are cut at
#: HOST_OUTPUT_CAP when gathered; this bounds what ``--from-bundle`` reads from a hostile one).
BUNDLE_FILE_MAX_BYTES = 64 * 1024 * 1024

#: Bytes ``--from-bundle`` decompresses in all from one bundle, and from all the node bundles of
#: one merge together (every transcript, run.json, the inventory copy, allreduce.json); a 4,096-host
#: run's transcripts are about a quarter of it. Without a total, a small bundle whose host records
#: all name one highly compressed member would expand without bound.
BUNDLE_READ_MAX_BYTES = 1024 * 1024 * 1024

#: Verify runs kept under ``.ascendprep/runs/``; older ones are removed (``verify --keep-runs N``).
KEEP_RUNS_DEFAULT = 20

#: Free bytes below which verify warns before saving its evidence bundle; a bundle is not
#: written at all when the disk has less free space than the bundle needs.
RUNS_LOW_DISK_BYTES = 256 * 1024 * 1024

#: Bytes of host files a live verify writes between two free-space checks (run/bundle.py): each
#: check proves this much room, so the bundle never outgrows the disk without a statvfs per host.
BUNDLE_SPACE_CHECK_BYTES = 64 * 1024 * 1024

#: Bytes of gzip members a live verify holds per ``hosts/<kind>.gz`` before it writes them
#: (run/bundle.py): ~35 hosts' transcripts per write instead of one write per host.
BUNDLE_APPEND_BUFFER_BYTES = 256 * 1024

# --- node-local runs and the Slurm launcher -----------------------------------------------------

#: Seconds ``ip -o addr show`` may take when a --local run looks for the inventory node it is.
LOCAL_IDENTITY_TIMEOUT_S = 5

#: This machine's addresses named in the "no node of the inventory is this machine" error before
#: "and N more" (a host with many VFs or containers has hundreds).
LOCAL_ADDRESSES_SHOWN = 8

#: Characters of ``SLURM_JOB_NODELIST`` read by ``--launcher slurm`` (a hostlist expression;
#: Slurm's own limit for one is far below this).
SLURM_NODELIST_MAX_CHARS = 65536

# --- the terminal and the reports -------------------------------------------------------------

#: Characters of one value shown on the terminal, in a table cell or JUnit (a tool message, a host's
#: error), the rest "… (N more characters)"; ``--format json`` and the bundle keep it whole.
TERMINAL_VALUE_MAX_CHARS = 4096

#: Characters of one Prometheus label value (a check subject, a version string read from a host);
#: longer ones are cut: a hostile version file must not make a megabyte series.
PROMETHEUS_LABEL_VALUE_CAP = 256

# --- the lab ------------------------------------------------------------------------------------

#: The longest ``lab up --tool-latency-ms`` accepted: a slow real driver answers in about a
#: second; more only makes the lab useless.
TOOL_LATENCY_MAX_MS = 5000

# --- the port counters' shared layout -------------------------------------------------------------

#: Distinct port-counter layouts (``-stat -g`` names in order) whose name → position map every
#: host with that layout shares (facts/model.py CounterValues): a fleet has one per driver version,
#: and without the sharing a 4,096-host verify's facts pass 1 GB.
SHARED_COUNTER_LAYOUTS = 64

# --- collect: the logs of a failed job ----------------------------------------------------------

#: Bytes ``collect`` keeps of one log file (plog, device log, console log, the kernel messages):
#: its newest bytes, the file marked ``cut`` in the manifest. A CANN plog rotates at 20 MB; the
#: error lines a diagnosis needs are at the end of the files the failed job wrote last.
COLLECT_FILE_MAX_BYTES = 2 * 1024 * 1024

#: Bytes of log files ``collect`` fetches from one node in all, newest files first (the kernel
#: messages before them); the rest are counted in the manifest as not fetched. Sent base64 in the
#: node's one script output, so 4/3 of it plus the NPU state must stay under HOST_OUTPUT_CAP.
COLLECT_NODE_MAX_BYTES = 10 * 1024 * 1024

#: Log files ``collect`` considers per node (directory entries walked, and files fetched): a
#: log folder of a million files is walked this far, not to its end.
COLLECT_MAX_ENTRIES = 100_000
COLLECT_MAX_FILES = 2_000

#: ``--log-dir`` and ``--console`` values one collect accepts, and the characters of each.
COLLECT_MAX_PATHS = 32
COLLECT_PATH_MAX_CHARS = 1024

#: Seconds ``journalctl -k`` (or ``dmesg``) may take on a node before collect goes on without it.
COLLECT_KERNEL_TIMEOUT_S = 30

# --- diagnose: reading a failed job's logs ------------------------------------------------------

#: Characters of one log line that diagnose reads; the rest of a longer line is skipped and the
#: line counted as truncated (real plog lines are under 4 KB; a binary blob without newlines is not
#: a line to keep whole).
DIAGNOSE_LINE_MAX_CHARS = 64 * 1024

#: Bytes diagnose reads from a log file at a time: memory stays at a few of these however large
#: the file is (multi-GB plogs are streamed, never loaded).
DIAGNOSE_READ_CHUNK_BYTES = 4 * 1024 * 1024

#: Bytes of logs from which diagnose reads its files in several processes (one per core, at most
#: :data:`DIAGNOSE_MAX_WORKERS`); a smaller tree is read in one, which starts faster.
DIAGNOSE_PARALLEL_MIN_BYTES = 64 * 1024 * 1024

#: Processes diagnose reads files with at most, however many cores the machine has (each holds
#: its own chunk buffer, so memory grows with it).
DIAGNOSE_MAX_WORKERS = 16

#: Files diagnose reads from one tree; a tree with more is refused with the count (a job of
#: 64 nodes x 16 ranks has a few thousand plogs, console and device logs).
DIAGNOSE_MAX_FILES = 200_000

#: Events diagnose keeps per knowledge-base entry and file (every occurrence is counted; the
#: first ones are kept as evidence): a rank that prints the same error a million times costs no
#: more memory than one that prints it twenty times.
DIAGNOSE_EVENTS_PER_ENTRY = 20

#: Seconds of clock difference between nodes that diagnose allows for when it compares the
#: times two nodes printed (the last-reporter and lagging rules): a spread of reports must exceed
#: the HCCL timeout (or the 15-minute lagging window) by more than this before a late or lagging
#: rank is named, since node clocks may differ.
DIAGNOSE_CLOCK_SKEW_S = 60
# --- inventory import -----------------------------------------------------------------------------

#: Bytes of a vendor deployer ``inventory_file`` or a ``--hosts`` list file that ``inventory
#: import`` reads: a 4,096-host file with eight device IPs a line is under 1 MB.
IMPORT_TEXT_MAX_BYTES = 8 * 1024 * 1024

#: Times the compactor re-plans an imported inventory, making the nodes the plan still places
#: elsewhere explicit each time, before it gives up (the first plan is nearly always exact).
IMPORT_ROUND_TRIP_TRIES = 8

# --- ping round trips -----------------------------------------------------------------------------

#: Reply lines (``recv seq=N,time=X ms``) read per ``hccn_tool -ping`` for its round-trip times:
#: the tool sends 3 echoes by default; a hostile output may print millions of such lines.
PING_REPLIES_MAX = 1000
