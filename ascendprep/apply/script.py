"""One POSIX sh script per host that carries out that host's changes, and the parser of its output.

The steps are the changes' own fragments, in the changes' own order (:mod:`ascendprep.plan.changes`:
per NPU the IP, then the gateway (or its removal from /etc/hccn.conf, which hccn_tool has no
command for), the detect IP and TLS; then live sysctl values; then files; then the firewall). A failed IP skips the later steps of that NPU only; every other step still runs. An
``hccn_tool`` set command that answers "hccn_tool is busy" is tried again with the gather's
back-off (1, 2, 4 s), and the step reports how many tries it took.

Files are written atomically: a temp file next to the target, fsync'ed, renamed over it. The
version replaced is kept as ``<file>.ascendprep.bak``; the first time ascendprep replaces a file
it did not write itself (no managed header, outside ``/etc/ascendprep``), that file is also kept
for good as ``<file>.ascendprep.orig``, which later applies never overwrite. Backups are made
through a temp file and a rename too, so a link planted at a backup name is replaced, never
written through. The script removes its temp files on any exit (trap), Ctrl-C and kill included.

An exclusive ``flock`` on ``/run/ascendprep/apply.lock`` stops two applies at once. The folder
is root's own (0700, not a link), so no other user can hold the lock or plant a link there; a
host without ``flock`` is an error, never an apply without a lock. The kernel drops the lock if
apply is killed, so a rerun after ``kill -9`` simply continues.

Every value is shlex-quoted; file contents travel as one quoted argument to a shell builtin.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Optional

from ascendprep.base import limits
from ascendprep.base.limits import APPLY_HCCN_BUSY_RETRIES
from ascendprep.desired.envfiles import MANAGED_HEADER
from ascendprep.facts.failures import BUSY_TEXT
from ascendprep.plan.changes import HCCN_STEP_TIMEOUT, SAFE_PATH, Change, ChangeError, ordered

#: Root's own folder for the apply lock (created 0700; /run is a tmpfs, so it goes at reboot).
LOCK_DIR = "/run/ascendprep"
LOCK_NAME = "apply.lock"
#: Exit code of the script when another apply holds the lock (EX_TEMPFAIL).
LOCKED_RC = 75
_STEP = re.compile(r"^@@ascendprep-step (\S+) rc=(-?\d+)(?: tries=(\d+))?@@$")
_END = "@@ascendprep-end@@"

#: What a step's output may be on the node (its end, with the exit status after it): a tool that
#: prints megabytes costs this, and the step says so (limits.REMOTE_CALL_OUTPUT_CAP).
_STEP_OUTPUT_KEEP = limits.REMOTE_CALL_OUTPUT_CAP
_STEP_OUTPUT_KEEP_KB = limits.REMOTE_CALL_OUTPUT_CAP // 1024

_PRELUDE = """\
set -u
set -f
umask 022
_ap_tmps=
_ap_cleanup() {{
  for _ap_t in $_ap_tmps; do rm -f "$_ap_t"; done
}}
# Steps run in command substitutions (subshells, which start without traps): each step that
# makes temp files calls _ap_traps again, so its own exit removes them too.
_ap_traps() {{
  trap _ap_cleanup EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
}}
_ap_traps
_ap_lockdir={lock_dir}
if ! command -v flock >/dev/null 2>&1; then
  echo "flock is not installed on this host (package util-linux): ascendprep will not apply without its lock" >&2; exit 1
fi
if [ -L "$_ap_lockdir" ] || {{ [ -e "$_ap_lockdir" ] && [ ! -d "$_ap_lockdir" ]; }}; then
  echo "$_ap_lockdir is not a plain directory (a link?): refusing to take the apply lock there" >&2; exit 1
fi
mkdir -m 0700 "$_ap_lockdir" 2>/dev/null
if [ ! -d "$_ap_lockdir" ] || [ -L "$_ap_lockdir" ] || [ ! -O "$_ap_lockdir" ] || ! chmod 0700 "$_ap_lockdir"; then
  echo "cannot use $_ap_lockdir for the apply lock (apply must run as root, and the folder must be root's)" >&2; exit 1
fi
if [ -L "$_ap_lockdir/{lock_name}" ]; then
  echo "$_ap_lockdir/{lock_name} is a link: refusing to follow it" >&2; exit 1
fi
if ! exec 9>"$_ap_lockdir/{lock_name}"; then echo "cannot open $_ap_lockdir/{lock_name}" >&2; exit 1; fi
if ! flock -n 9; then
  echo "another ascendprep apply is running on this host" >&2; exit {locked_rc}
fi
_ap_report() {{
  printf '@@ascendprep-step %s rc=%s tries=%s@@\\n%s\\n{end}\\n' "$1" "$2" "$3" "$4"
}}
_ap_nl='
'
# Runs "$@" and sets _ap_out (its output, only the end past {keep_kb} KB: a tool printing
# megabytes costs this much) and _ap_rc (its exit status). Trailing newlines are dropped: the
# one printed before the status and the tool's last one in the shell (no process in the usual
# case), any more by $(...) (never a loop per newline: a tool may print {keep_kb} KB of them).
# _ap_sysctl's and _ap_write's output is the shell's own and coreutils' one-line errors
# (bounded by the script): no tail needed, which saves two processes per step.
_ap_run() {{
  case $1 in _ap_sysctl | _ap_write)
    _ap_out=$("$@" 2>&1)
    _ap_rc=$?
    return
  esac
  _ap_all=$({{ "$@" 2>&1; printf '\n@@ap-rc=%s' "$?"; }} | tail -c {keep})
  _ap_rc=${{_ap_all##*@@ap-rc=}}
  _ap_out=${{_ap_all%@@ap-rc=*}}
  _ap_out=${{_ap_out%"$_ap_nl"}}
  _ap_out=${{_ap_out%"$_ap_nl"}}
  case $_ap_out in *"$_ap_nl") _ap_out=$(printf '%s' "$_ap_out") ;; esac
  if [ "${{#_ap_all}}" -ge {keep} ]; then _ap_out="[output over {keep_kb} KB: only its end is kept]
$_ap_out"; fi
  case $_ap_rc in '' | *[!0-9]*) _ap_rc=125 ;; esac
}}
_ap_step() {{
  _ap_id=$1; shift
  _ap_run "$@"
  _ap_report "$_ap_id" "$_ap_rc" 1 "$_ap_out"
  return $_ap_rc
}}
_ap_hccn() {{
  _ap_id=$1; shift
  _ap_try=1; _ap_wait=1
  while :; do
    _ap_run "$@"
    if [ "$_ap_rc" -eq 0 ] || [ "$_ap_try" -gt {busy_retries} ]; then break; fi
    case $_ap_out in *{busy_text}*) ;; *) break ;; esac
    sleep "$_ap_wait"
    _ap_try=$((_ap_try + 1)); _ap_wait=$((_ap_wait * 2))
    if [ "$_ap_wait" -gt 8 ]; then _ap_wait=8; fi
  done
  _ap_report "$_ap_id" "$_ap_rc" "$_ap_try" "$_ap_out"
  return $_ap_rc
}}
_ap_skip() {{
  _ap_report "$1" -1 0 "$2"
}}
_ap_sync() {{
  sync "$1" 2>/dev/null || sync
}}
_ap_ours() {{
  [ "$2" = 1 ] || [ "$(head -n 1 "$1" 2>/dev/null)" = {header} ]
}}
_ap_backup() {{
  _ap_b=$(mktemp "$2.XXXXXX") || return 1
  _ap_tmps="$_ap_tmps $_ap_b"
  if cp -p "$1" "$_ap_b" && _ap_sync "$_ap_b" && mv -f "$_ap_b" "$2"; then return 0; fi
  rm -f "$_ap_b"; return 1
}}
_ap_write() {{
  _ap_traps
  _ap_dir=${{1%/*}}; _ap_dir=${{_ap_dir:-/}}
  [ -d "$_ap_dir" ] || mkdir -p "$_ap_dir" || return 1
  _ap_tmp=$(mktemp "$1.ascendprep.XXXXXX") || return 1
  _ap_tmps="$_ap_tmps $_ap_tmp"
  if ! printf '%s' "$3" > "$_ap_tmp" || ! chmod "$2" "$_ap_tmp" || ! _ap_sync "$_ap_tmp"; then rm -f "$_ap_tmp"; return 1; fi
  if [ -e "$1" ]; then
    if [ ! -e "$1.ascendprep.orig" ] && [ ! -L "$1.ascendprep.orig" ] && ! _ap_ours "$1" "$4"; then
      _ap_backup "$1" "$1.ascendprep.orig" || {{ rm -f "$_ap_tmp"; return 1; }}
      echo "kept the original as $1.ascendprep.orig"
    fi
    _ap_backup "$1" "$1.ascendprep.bak" || {{ rm -f "$_ap_tmp"; return 1; }}
  fi
  mv -f "$_ap_tmp" "$1" || return 1
  _ap_tmps=  # every temp file is renamed now: nothing left for the exit trap to remove
  _ap_sync "$_ap_dir" && echo "wrote $1"
}}
# _ap_sysctl KEY VALUE FILE: FILE is KEY's /proc/sys path (worked out when the script is rendered).
_ap_sysctl() {{
  printf '%s\\n' "$2" > "$3" && echo "$1 = $2"
}}
# _ap_ungateway NPU TOOL FILE [SLOT]: remove NPU's gateway (SLOT: an Ascend 950 NPU's bond
# slot, which names its FILE keys and its bond device). hccn_tool has no command for it (-gateway
# only sets and reads): FILE (/etc/hccn.conf, what the driver re-applies at its start) loses its
# gateway_NPU line, written like every file (_ap_write), so no driver start brings it back; then
# the device is asked (-gateway -g, its answer cut at 4 KB): a gateway it still routes through
# fails the step, saying why. Run again (busy retries), it finds the line gone and asks again.
_ap_ungateway() {{
  _ap_key=${{4:-$1}}
  if [ -f "$3" ] && grep -q "^gateway_$_ap_key=" "$3"; then
    _ap_mode=$(stat -c %a "$3") || return 1
    _ap_new=$(grep -v "^gateway_$_ap_key=" "$3"; _ap_g=$?; printf x; [ "$_ap_g" -le 1 ]) || return 1
    _ap_write "$3" "$_ap_mode" "${{_ap_new%x}}" 0 || return 1
    echo "took gateway_$_ap_key out of $3"
  else
    echo "$3 holds no gateway_$_ap_key"
  fi
  if [ -n "${{4:-}}" ]; then
    _ap_gw=$({{ timeout {hccn_timeout} "$2" -g -gateway -i "$1" -d "bond$4" 2>&1; printf '\n@@ap-rc=%s' "$?"; }} | tail -c 4096)
  else
    _ap_gw=$({{ timeout {hccn_timeout} "$2" -i "$1" -gateway -g 2>&1; printf '\n@@ap-rc=%s' "$?"; }} | tail -c 4096)
  fi
  _ap_grc=${{_ap_gw##*@@ap-rc=}}
  _ap_gw=${{_ap_gw%"$_ap_nl"@@ap-rc=*}}
  _ap_gw=${{_ap_gw%"$_ap_nl"}}
  case $_ap_grc in '' | *[!0-9]*) _ap_grc=125 ;; esac
  case $_ap_gw in *'no gateway was preset'*) echo "npu $1 has no gateway"; return 0 ;; esac
  printf '%s\n' "$_ap_gw"
  if [ "$_ap_grc" -eq 0 ]; then
    echo "npu $1 still routes through this gateway until its driver restarts (reboot the node): hccn_tool has no command that removes a gateway, and $3 no longer brings it back"
    return 1
  fi
  return "$_ap_grc"
}}
"""


def _q(value: object) -> str:
    return shlex.quote(str(value))


def render_apply_script(
    changes: list[Change],
    hccn_tool: Optional[str],
    lock_dir: str = LOCK_DIR,
    busy_retries: int = APPLY_HCCN_BUSY_RETRIES,
) -> str:
    """The host's script; ``lock_dir``/``busy_retries`` are for tests that run it unprivileged."""
    if not SAFE_PATH.match(lock_dir):
        raise ChangeError(f"unsafe lock folder {lock_dir!r}")
    prelude = _PRELUDE.format(
        lock_dir=_q(lock_dir),
        lock_name=LOCK_NAME,
        locked_rc=LOCKED_RC,
        end=_END,
        busy_retries=int(busy_retries),
        busy_text=_q(BUSY_TEXT),
        header=_q(MANAGED_HEADER),
        keep=_STEP_OUTPUT_KEEP,
        keep_kb=_STEP_OUTPUT_KEEP_KB,
        hccn_timeout=HCCN_STEP_TIMEOUT,
    )
    body = "\n".join(change.fragment(hccn_tool) for change in ordered(changes))
    return f"{prelude}\n{body}\nexit 0\n"


@dataclass(frozen=True)
class StepResult:
    key: str
    rc: int
    output: str
    #: How many times the command ran (hccn_tool busy answers are retried).
    tries: int = 1

    @property
    def message(self) -> str:
        """The output, with the tries named when there were several (for the report)."""
        if self.tries <= 1:
            return self.output
        if BUSY_TEXT in self.output and self.rc != 0:
            return f"{self.output}\n(hccn_tool was still busy after {self.tries} tries)"
        return f"{self.output}\n(after {self.tries} tries: hccn_tool was busy)"

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def skipped(self) -> bool:
        return self.rc == -1


def parse_apply_output(stdout: str) -> dict[str, StepResult]:
    """The results of the steps that ran, by change key (a killed script yields fewer)."""
    results: dict[str, StepResult] = {}
    current: Optional[tuple[str, int, int]] = None
    lines: list[str] = []
    for line in stdout.splitlines():
        if current is None:
            match = _STEP.match(line)
            if match:
                current = (match.group(1), int(match.group(2)), int(match.group(3) or 1))
                lines = []
            continue
        if line == _END:
            key, rc, tries = current
            results[key] = StepResult(key, rc, "\n".join(lines).strip(), tries)
            current = None
        else:
            lines.append(line)
    return results
