"""One POSIX sh script per host that carries out that host's changes, and the parser of its output.

Order (safe for hccn_tool): per NPU the IP, then the gateway (needs the IP), then the detect IP
(probes via the gateway or peer), then TLS; then live sysctl values; then files, written
atomically (temp file + rename, the previous version kept as ``<file>.ascendprep.bak``); then the
firewall. A failed IP skips the later steps of that NPU only; every other step still runs. An
exclusive ``flock`` on the host stops two applies at once; the kernel drops it if apply is killed,
so a rerun after ``kill -9`` simply continues.

Every value is shlex-quoted; file contents travel as one quoted argument to a shell builtin.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Optional

from ascendprep import limits
from ascendprep.plan import Change

LOCK_FILE = "/run/lock/ascendprep-apply.lock"
#: Exit code of the script when another apply holds the lock (EX_TEMPFAIL).
LOCKED_RC = 75
#: hccn_tool set commands are quick; one that hangs is cut off so the rest of the host proceeds.
HCCN_STEP_TIMEOUT = 60

_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/+-]+$")
_STEP = re.compile(r"^@@ascendprep-step (\S+) rc=(-?\d+)@@$")
_END = "@@ascendprep-end@@"

#: What a step's output may be on the node (its end, with the exit status after it): a tool that
#: prints megabytes costs this, and the step says so (limits.REMOTE_CALL_OUTPUT_CAP).
_STEP_OUTPUT_KEEP = limits.REMOTE_CALL_OUTPUT_CAP
_STEP_OUTPUT_KEEP_KB = limits.REMOTE_CALL_OUTPUT_CAP // 1024

_PRELUDE = f"""\
set -u
umask 022
mkdir -p /run/lock 2>/dev/null
if ! exec 9>{LOCK_FILE}; then echo "cannot open {LOCK_FILE}" >&2; exit 1; fi
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
  echo "another ascendprep apply is running on this host" >&2; exit {LOCKED_RC}
fi
_ap_step() {{
  _ap_id=$1; shift
  _ap_all=$({{ "$@" 2>&1; printf '\n@@ap-rc=%s' "$?"; }} | tail -c {_STEP_OUTPUT_KEEP})
  _ap_rc=${{_ap_all##*@@ap-rc=}}
  _ap_out=$(printf '%s' "${{_ap_all%@@ap-rc=*}}")
  if [ "${{#_ap_all}}" -ge {_STEP_OUTPUT_KEEP} ]; then _ap_out="[output over {_STEP_OUTPUT_KEEP_KB} KB: only its end is kept]
$_ap_out"; fi
  case $_ap_rc in '' | *[!0-9]*) _ap_rc=125 ;; esac
  printf '@@ascendprep-step %s rc=%s@@\\n%s\\n{_END}\\n' "$_ap_id" "$_ap_rc" "$_ap_out"
  return $_ap_rc
}}
_ap_skip() {{
  printf '@@ascendprep-step %s rc=-1@@\\n%s\\n{_END}\\n' "$1" "$2"
}}
_ap_write() {{
  _ap_dir=$(dirname "$1") && mkdir -p "$_ap_dir" || return 1
  _ap_tmp=$(mktemp "$1.ascendprep.XXXXXX") || return 1
  if ! printf '%s' "$3" > "$_ap_tmp" || ! chmod "$2" "$_ap_tmp"; then rm -f "$_ap_tmp"; return 1; fi
  if [ -e "$1" ] && ! cp -p "$1" "$1.ascendprep.bak"; then rm -f "$_ap_tmp"; return 1; fi
  mv -f "$_ap_tmp" "$1" && echo "wrote $1"
}}
_ap_sysctl() {{
  printf '%s\\n' "$2" > "/proc/sys/$(printf '%s' "$1" | tr . /)" && echo "$1 = $2"
}}
"""


class ApplyScriptError(ValueError):
    """A change that cannot be rendered safely (e.g. an hccn_tool path with odd characters)."""


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _hccn_step(change: Change, tool: str) -> str:
    action = change.action
    npu = int(action["npu"])
    op = action["op"]
    base = f"timeout {HCCN_STEP_TIMEOUT} {_q(tool)} -i {npu}"
    if op == "hccn_ip":
        command = f"{base} -ip -s address {_q(action['address'])} netmask {_q(action['netmask'])}"
    elif op == "hccn_gateway":
        command = f"{base} -gateway -s gateway {_q(action['gateway'])}"
    elif op == "hccn_netdetect":
        command = f"{base} -netdetect -s address {_q(action['address'])}"
    elif op == "hccn_tls":
        command = f"{base} -tls -s enable {int(action['enable'])}"
    else:
        raise ApplyScriptError(f"unknown hccn operation {op!r}")
    key = _q(change.key)
    guard = f"_ap_fail_{npu}"
    lines = [
        f'if [ -n "${{{guard}:-}}" ]; then _ap_skip {key} "skipped: an earlier step of npu {npu} failed";',
        f"else _ap_step {key} {command} || {guard}=1; fi",
    ]
    return "\n".join(lines)


def _step(change: Change, hccn_tool: Optional[str]) -> str:
    action = change.action
    op = action["op"]
    key = _q(change.key)
    if op.startswith("hccn_"):
        if not hccn_tool or not _SAFE_PATH.match(hccn_tool):
            raise ApplyScriptError(f"{change.node}: no usable hccn_tool path ({hccn_tool!r})")
        return _hccn_step(change, hccn_tool)
    if op == "sysctl":
        return f"_ap_step {key} _ap_sysctl {_q(action['key'])} {_q(action['value'])}"
    if op == "write_file":
        path = action["path"]
        if not _SAFE_PATH.match(path):
            raise ApplyScriptError(f"{change.node}: refusing to write {path!r}")
        return f"_ap_step {key} _ap_write {_q(path)} {int(action['mode']):o} {_q(action['content'])}"
    if op == "firewall_disable":
        tool = action["tool"]
        if tool == "ufw":
            return f"_ap_step {key} ufw disable"
        if tool == "firewalld":
            return f"_ap_step {key} systemctl disable --now firewalld"
        raise ApplyScriptError(f"unknown firewall {tool!r}")
    raise ApplyScriptError(f"unknown operation {op!r}")


_ORDER = {"hccn_ip": 0, "hccn_gateway": 1, "hccn_netdetect": 2, "hccn_tls": 3, "sysctl": 4, "write_file": 5, "firewall_disable": 6}


def ordered(changes: list[Change]) -> list[Change]:
    """Changes in the order the script runs them (stable within a kind)."""
    return sorted(changes, key=lambda c: (_ORDER[c.action["op"]], c.npu if c.npu is not None else -1))


def render_apply_script(changes: list[Change], hccn_tool: Optional[str]) -> str:
    body = "\n".join(_step(change, hccn_tool) for change in ordered(changes))
    return f"{_PRELUDE}\n{body}\nexit 0\n"


@dataclass(frozen=True)
class StepResult:
    key: str
    rc: int
    output: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def skipped(self) -> bool:
        return self.rc == -1


def parse_apply_output(stdout: str) -> dict[str, StepResult]:
    """The results of the steps that ran, by change key (a killed script yields fewer)."""
    results: dict[str, StepResult] = {}
    current: Optional[tuple[str, int]] = None
    lines: list[str] = []
    for line in stdout.splitlines():
        if current is None:
            match = _STEP.match(line)
            if match:
                current = (match.group(1), int(match.group(2)))
                lines = []
            continue
        if line == _END:
            key, rc = current
            results[key] = StepResult(key, rc, "\n".join(lines).strip())
            current = None
        else:
            lines.append(line)
    return results
