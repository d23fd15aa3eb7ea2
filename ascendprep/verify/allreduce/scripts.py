"""The three POSIX sh scripts a node runs for one all-reduce, and the parsers of what they print.

Pure functions, no I/O. Per node and run:

1. **preflight** -- make the run directory, check ``/etc/ascendprep/set_env.sh``, the inventory's
   interpreter and torch (found, not imported: importing torch costs seconds), list the host's
   NIC addresses (``ip -o addr``), and on the master pick a free port for torchrun's rendezvous.
   A broken node is named here, before any process starts anywhere.
2. **launch** -- source ``set_env.sh``, bind gloo/NCCL/HCCL to the NIC that holds the node's
   inventory address (:func:`interface_exports`), and run torchrun with its output in the run
   directory's log; when torchrun ends, kill anything of this run still alive on the node, print the exit
   status and the log, and remove the directory.
3. **cleanup** -- only when a launch did not end on its own (overall timeout, a lost connection,
   Ctrl-C, a failed peer): kill this node's processes of the run, print the log, remove the
   directory.

Every process of a run on a node has the node's run directory on its command line (the agent
runs ``<dir>/worker.py``, torchrun starts each rank with it), so the directory is the handle to
find and kill them. It names the node, not just the run, because nodes may share a process
table (in the lab they do), and one node's cleanup must not touch another's ranks. No script
spells out the worker's path (the launch says ``"$d"/worker.py``): run through ``--exec-via`` a
script is on a command line itself, where the pattern would find the script and kill it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.base import limits
from ascendprep.base.paths import SET_ENV_SH
from ascendprep.facts.model import InterfaceAddress
from ascendprep.facts.netaddr import IFNAME_RE, ip_literal, parse_ip_addr
from ascendprep.facts.text import UnexpectedOutput

MARK = "@ascendprep-allreduce"
LOG_BEGIN = f"{MARK} log-begin"
LOG_END = f"{MARK} log-end"
RUN_DIR_PREFIX = "/tmp/ascendprep-allreduce-"
LOG_NAME = "torchrun.log"
WORKER_NAME = "worker.py"


def _log_tail_bytes() -> int:
    """limits.ALLREDUCE_LOG_TAIL, or its environment override when that is a positive number."""
    text = os.environ.get(limits.ALLREDUCE_LOG_TAIL_ENV, "").strip()
    return int(text) if text.isdigit() and 0 < len(text) <= 12 and int(text) > 0 else limits.ALLREDUCE_LOG_TAIL


#: How much of a node's log comes back (its tail): records are a few KiB per rank. A longer log
#: comes back with LOG_CUT_LINE first.
LOG_MAX_BYTES = _log_tail_bytes()
LOG_CUT_LINE = "[ascendprep: the log is longer than {} bytes; only its end follows]"
#: Exit status of the launch script when set_env.sh is missing (nothing was started).
NO_SET_ENV_RC = 3
#: Seconds between SIGTERM (ranks write their record and exit) and SIGKILL.
KILL_GRACE_S = 3

_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
_NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_LINE_RE = re.compile(r"^" + re.escape(MARK) + r" (\S+) (.*)$")


def run_dir(run_id: str, node: str) -> str:
    """``/tmp/ascendprep-allreduce-<run id>-<node>``: private to one node of one run."""
    if not _RUN_ID_RE.match(run_id):
        raise ValueError(f"run id {run_id!r} must be letters, digits and '-'")
    if not _NODE_RE.match(node):
        raise ValueError(f"node name {node!r} must be letters, digits, '.', '_' or '-'")
    return f"{RUN_DIR_PREFIX}{run_id}-{node}"


def process_pattern(directory: str) -> str:
    """An extended regex matching the command line of every process of this node's run.

    ``[/]`` and ``[.]`` keep the pattern from matching its own text, so a ``grep`` or ``pkill``
    that carries it never finds itself.
    """
    _check_run_dir(directory)
    return directory.replace(".", "[.]") + "[/]worker[.]py"


def _check_run_dir(directory: str) -> None:
    if (
        not directory.startswith(RUN_DIR_PREFIX)
        or not re.fullmatch(r"/[A-Za-z0-9._/-]+", directory)
        or ".." in directory
    ):
        raise ValueError(f"{directory!r} is not an all-reduce run directory")


# --- preflight --------------------------------------------------------------------------------

#: Runs under the node's interpreter: what a launch needs, without importing torch.
PROBE_CODE = """\
import importlib.util, json, os, socket, sys
info = {"python": sys.version.split()[0], "torch": None, "torch_dir": None, "torchrun": False}
spec = importlib.util.find_spec("torch")
if spec is not None and spec.origin:
    info["torch_dir"] = os.path.dirname(spec.origin)
    info["torchrun"] = os.path.exists(os.path.join(info["torch_dir"], "distributed", "run.py"))
    try:
        from importlib import metadata
        info["torch"] = metadata.version("torch")
    except Exception as exc:
        info["torch_metadata_error"] = type(exc).__name__
if "--port" in sys.argv:
    sock = socket.socket()
    sock.bind(("", 0))
    info["port"] = sock.getsockname()[1]
    sock.close()
print("@ascendprep-allreduce probe " + json.dumps(info))
"""


def render_preflight_script(directory: str, python_path: str, pick_port: bool) -> str:
    _check_run_dir(directory)
    q = shlex.quote
    port_flag = " --port" if pick_port else ""
    return f"""\
d={q(directory)}
py={q(python_path)}
env={q(SET_ENV_SH)}
if mkdir -m 700 -p -- "$d"; then echo "{MARK} mkdir ok"; else echo "{MARK} mkdir failed"; fi
if [ -r "$env" ]; then echo "{MARK} set_env ok"; else echo "{MARK} set_env missing"; fi
if [ ! -e "$py" ]; then
  echo "{MARK} python missing"
elif [ ! -f "$py" ] || [ ! -x "$py" ]; then
  echo "{MARK} python not-executable"
else
  echo "{MARK} python ok"
  err=$( ( if [ -r "$env" ]; then . "$env" >/dev/null 2>&1; fi
           "$py" -c {q(PROBE_CODE)}{port_flag} </dev/null ) 2>&1 >"$d/.probe" )
  rc=$?
  cat "$d/.probe" 2>/dev/null
  rm -f -- "$d/.probe"
  echo "{MARK} probe-rc $rc"
  if [ "$rc" -ne 0 ]; then printf '%s\\n' "$err" | tail -n 5 | sed 's/^/{MARK} probe-err /'; fi
fi
PATH="$PATH:/usr/sbin:/sbin" ip -o addr show 2>/dev/null | head -n {limits.MAX_HOST_ADDRESSES} | sed 's/^/{MARK} addr /'
"""


@dataclass(frozen=True)
class Preflight:
    """What a node said before the launch."""

    mkdir_ok: bool
    set_env: bool
    python: str  # ok | missing | not-executable | unknown
    probe_rc: Optional[int]
    probe_error: str
    python_version: Optional[str]
    torch: Optional[str]
    torch_found: bool
    torchrun_found: bool
    port: Optional[int]
    #: The host's NIC addresses (``ip -o addr``); empty when ``ip`` is missing or said nothing.
    addresses: Tuple[InterfaceAddress, ...] = ()
    #: Why the addresses could not be read (unexpected ``ip`` output), else None.
    addresses_problem: Optional[str] = None


def parse_preflight(stdout: str) -> Preflight:
    values: Dict[str, List[str]] = {}
    probe: Dict[str, Any] = {}
    for line in stdout.splitlines():
        match = _LINE_RE.match(line.rstrip("\r"))
        if match is None:
            continue
        key, rest = match.groups()
        if key == "probe":
            try:
                decoded = json.loads(rest)
            except json.JSONDecodeError:
                decoded = None
            probe = decoded if isinstance(decoded, dict) else {}
            continue
        values.setdefault(key, []).append(rest.strip())
    rc_text = (values.get("probe-rc") or [""])[0]
    port = probe.get("port")
    addresses: Tuple[InterfaceAddress, ...] = ()
    addresses_problem = None
    try:
        addresses = parse_ip_addr("\n".join(values.get("addr", [])))
    except UnexpectedOutput as exc:
        addresses_problem = str(exc)
    return Preflight(
        mkdir_ok=(values.get("mkdir") or [""])[0] == "ok",
        set_env=(values.get("set_env") or [""])[0] == "ok",
        python=(values.get("python") or ["unknown"])[0],
        probe_rc=int(rc_text) if rc_text.isdigit() else None,
        probe_error=" | ".join(values.get("probe-err", [])),
        python_version=probe.get("python") if isinstance(probe.get("python"), str) else None,
        torch=probe.get("torch") if isinstance(probe.get("torch"), str) else None,
        torch_found=bool(probe.get("torch_dir")),
        torchrun_found=probe.get("torchrun") is True,
        port=port if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 else None,
        addresses=addresses,
        addresses_problem=addresses_problem,
    )


# --- launch -----------------------------------------------------------------------------------


def torchrun_arguments(
    *, nnodes: int, node_rank: int, nproc: int, master_addr: str, master_port: int, rendezvous_timeout: int
) -> List[str]:
    """torchrun's own options for one node (static rendezvous, as ``desired.torchrun`` has it)."""
    for label, value, low in (
        ("nnodes", nnodes, 1),
        ("node_rank", node_rank, 0),
        ("nproc", nproc, 1),
        ("master_port", master_port, 1),
        ("rendezvous_timeout", rendezvous_timeout, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{label} {value!r} is not a whole number >= {low}")
    if node_rank >= nnodes or master_port > 65535:
        raise ValueError(f"node_rank {node_rank} / master_port {master_port} out of range")
    return [
        f"--nnodes={nnodes}",
        f"--node_rank={node_rank}",
        f"--nproc_per_node={nproc}",
        f"--master_addr={master_addr}",
        f"--master_port={master_port}",
        f"--rdzv_conf=timeout={rendezvous_timeout}",
        "--max_restarts=0",
    ]


_KILL_FUNCTIONS = (
    """\
ap_pids() {
  if command -v pgrep >/dev/null 2>&1; then
    pgrep -f -- "$pat"
  else
    for f in /proc/[0-9]*/cmdline; do
      if tr '\\000' ' ' <"$f" 2>/dev/null | grep -qE -- "$pat"; then p=${f#/proc/}; echo "${p%/cmdline}"; fi
    done
  fi
}
ap_kill_all() {
  found=$(ap_pids | wc -l | tr -d ' ')
  if [ "$found" -gt 0 ]; then
    for p in $(ap_pids); do kill -s TERM "$p" 2>/dev/null; done
    i=0
    while [ "$i" -lt $((KILL_GRACE * 10)) ] && [ -n "$(ap_pids)" ]; do sleep 0.1; i=$((i + 1)); done
    for p in $(ap_pids); do kill -s KILL "$p" 2>/dev/null; done
  fi
  echo "MARKER killed $found"
}
ap_print_log() {
  if [ -f "$d/LOG_FILE" ]; then
    echo "MARKER log-begin"
    if [ "$(($(wc -c <"$d/LOG_FILE")))" -gt LOG_MAX ]; then echo "LOG_CUT"; fi
    tail -c LOG_MAX "$d/LOG_FILE"
    echo
    echo "MARKER log-end"
  fi
}
""".replace("LOG_CUT", LOG_CUT_LINE.format(LOG_MAX_BYTES))
    .replace("KILL_GRACE", str(KILL_GRACE_S))
    .replace("LOG_MAX", str(LOG_MAX_BYTES))
    .replace("MARKER", MARK)
    .replace("LOG_FILE", LOG_NAME)
)


def interface_exports(address: str, ifname: str) -> str:
    """Shell lines that bind gloo, NCCL and HCCL's host sockets to ``ifname`` (holding ``address``).

    Why: each rank advertises the address its hostname resolves to; where that is loopback
    (Debian's ``127.0.1.1 <hostname>``) or nothing (gloo falls back to 127.0.0.1), every rank
    fails with "Gloo connectFullMesh ... remote=[127.0.0.1]". A value that ``set_env.sh`` (the
    user's ``env:`` or ``training.socket_ifname``) already chose is kept: the smoke test runs
    the environment the user's jobs get. ``NCCL_SOCKET_IFNAME`` gets ``=`` for an exact name.
    """
    checked = ip_literal(address)
    if checked is None or not IFNAME_RE.match(ifname):
        raise ValueError(f"cannot bind to {ifname!r} / {address!r}: not an interface name and IPv4 address")
    q = shlex.quote
    return (
        f"export ASCENDPREP_NODE_ADDRESS={q(checked)}\n"  # the worker matches it to the rank table's server
        f'export GLOO_SOCKET_IFNAME="${{GLOO_SOCKET_IFNAME:-{ifname}}}"\n'
        f'export NCCL_SOCKET_IFNAME="${{NCCL_SOCKET_IFNAME:-={ifname}}}"\n'
        'if [ -z "${HCCL_IF_IP-}" ] && [ -z "${HCCL_SOCKET_IFNAME-}" ]; then '
        f"export HCCL_IF_IP={q(checked)}; fi\n"
    )


def render_launch_script(
    directory: str,
    python_path: str,
    torchrun_args: Sequence[str],
    worker_args: Sequence[str],
    bind: Optional[Tuple[str, str]] = None,
) -> str:
    """Source set_env.sh, run torchrun (output to the log), then tidy up and report.

    ``bind``: (the node's inventory address, the interface holding it), see :func:`interface_exports`.
    """
    _check_run_dir(directory)
    exports = interface_exports(*bind) if bind is not None else ""
    q = shlex.quote
    argv = [python_path, "-m", "torch.distributed.run", *torchrun_args]
    command = " ".join([*(q(a) for a in argv), f'"$d"/{WORKER_NAME}', *(q(a) for a in worker_args)])
    return f"""\
d={q(directory)}
pat={q(process_pattern(directory))}
env={q(SET_ENV_SH)}
{_KILL_FUNCTIONS}
if [ ! -r "$env" ]; then
  echo "{MARK} set_env missing"
  rm -rf -- "$d"
  exit {NO_SET_ENV_RC}
fi
. "$env" >"$d/set_env.log" 2>&1
{exports}cd "$d" || exit 1
export TMPDIR="$d"
echo "{MARK} started $(date +%s)"
{command} </dev/null >"$d/{LOG_NAME}" 2>&1
rc=$?
echo "{MARK} exit $rc"
ap_kill_all
ap_print_log
cd /
if [ ! -e "$d/.cleanup" ]; then rm -rf -- "$d"; fi
exit 0
"""


@dataclass(frozen=True)
class LaunchOutput:
    """What a launch (or cleanup) script printed."""

    set_env_missing: bool = False
    exit_code: Optional[int] = None  # torchrun's; None when it never returned
    killed: Optional[int] = None  # leftover processes found and killed
    log: Optional[str] = None
    started_at: Optional[int] = None


def parse_script_output(stdout: str) -> LaunchOutput:
    """Read the markers and the log section of a launch or cleanup script's output."""
    lines = stdout.splitlines()
    exit_code = killed = started = None
    set_env_missing = False
    log_lines: Optional[List[str]] = None
    in_log = False
    for line in lines:
        if in_log:
            if line == LOG_END:
                in_log = False
            else:
                assert log_lines is not None
                log_lines.append(line)
            continue
        if line == LOG_BEGIN:
            in_log, log_lines = True, []
            continue
        match = _LINE_RE.match(line)
        if match is None:
            continue
        key, rest = match.group(1), match.group(2).strip()
        if key == "exit" and re.fullmatch(r"\d+", rest):
            exit_code = int(rest)
        elif key == "killed" and rest.isdigit():
            killed = int(rest)
        elif key == "started" and rest.isdigit():
            started = int(rest)
        elif key == "set_env" and rest == "missing":
            set_env_missing = True
    log = None if log_lines is None else "\n".join(log_lines)
    return LaunchOutput(set_env_missing, exit_code, killed, log, started)


# --- cleanup ----------------------------------------------------------------------------------


def render_cleanup_script(directory: str) -> str:
    """Kill this node's processes of the run, print its log, remove its directory."""
    _check_run_dir(directory)
    q = shlex.quote
    return f"""\
d={q(directory)}
pat={q(process_pattern(directory))}
{_KILL_FUNCTIONS}
if [ -d "$d" ]; then : >"$d/.cleanup" 2>/dev/null; fi
ap_kill_all
ap_print_log
rm -rf -- "$d"
exit 0
"""


def remove_dir_script(directory: str) -> str:
    """Remove a run directory where nothing was launched (preflight-only runs)."""
    _check_run_dir(directory)
    return f"rm -rf -- {shlex.quote(directory)}\n"
