"""The POSIX sh pieces shared by the probe scripts, and the checks on every value put into them.

Scripts are fed to ``sh -s`` over SSH, so they must run under dash as well as bash and need
nothing beyond coreutils (``timeout``, ``mktemp``, ``tee``, ``head``, ``wc``, ``cat``) and the
Ascend tools. Each command's stdout and stderr are cut at a cap on the node (``ap_capture``), so
a tool that prints megabytes costs the controller a marked excerpt, not the megabytes.

Per call the script runs few processes besides the command itself (a gather makes dozens of
calls, and on a node every process costs about half a millisecond of CPU): the two pipeline
halves, one ``tee`` per stream (its file bounded by ``ulimit -f`` in the reader, never in the
command), a ``wc`` only for a stream that may be over the cap and a ``cat`` only for a non-empty
one.
Every command's stdin is ``/dev/null`` and the body runs inside a function called with stdin
redirected: a tool that reads stdin must not swallow the rest of the script.

Values from Python reach the script only through :func:`shlex.quote` after validation here;
anything that fails validation raises :class:`UnsafeValue` naming the parameter.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from typing import Optional, Tuple

from ascendprep.base import limits
from ascendprep.base.paths import HCCN_TOOL_IN_HOME
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.facts.sections import header_line, new_nonce

#: hccn_tool takes the physical device id as 1-2 decimal digits (docs/ascend-reference.md §1.1).
MAX_DEVID = 99
MAX_TIMEOUT_S = 3600
MAX_BUSY_RETRIES = 20
#: Upper bound of the per-NPU jobs a script runs at once (one per device id of a 16-die A3 and more).
MAX_PARALLEL = 64
#: Upper bound of an overridden per-call output cap (the controller must still hold a host's calls).
MAX_OUTPUT_CAP = 64 * 1024 * 1024
#: The unit of ``ulimit -f`` in a POSIX shell (dash, bash as sh; bash otherwise counts 1,024, which
#: only keeps more): stderr's file is cut at ``cap // 512 + 1`` blocks, past the cap; stdout's at
#: the cap itself when it is whole blocks (then tee's failure is the cut, no file is measured).
ULIMIT_BLOCK = 512


def checked_output_cap_override() -> int:
    """:func:`remote_call_output_cap` for a command's start: a bad override is an InputError.

    The other override of the node scripts, :func:`npu_probe_jobs`, is checked here too, so a
    bad value stops the command before any host is contacted.
    """

    for name, read in (
        (limits.NPU_PROBE_JOBS_ENV, npu_probe_jobs),
        (limits.REMOTE_CALL_OUTPUT_CAP_ENV, remote_call_output_cap),
    ):
        try:
            value = read()
        except UnsafeValue as exc:
            raise InputError([Located("environment", None, name, str(exc))]) from None
    return value


def npu_probe_jobs() -> int:
    """:data:`limits.NPU_PROBE_JOBS`, or ``$ASCENDPREP_NPU_PROBE_JOBS`` when set (1: NPUs in turn,
    for a driver whose hccn_tool refuses every second caller as busy)."""
    text = os.environ.get(limits.NPU_PROBE_JOBS_ENV)
    if text is None or not text.strip():
        return limits.NPU_PROBE_JOBS
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_PARALLEL:
        raise UnsafeValue(
            f"{limits.NPU_PROBE_JOBS_ENV} must be a number of jobs from 1 to {MAX_PARALLEL}, not {text!r}"
        )
    return int(text)


def remote_call_output_cap() -> int:
    """:data:`limits.REMOTE_CALL_OUTPUT_CAP`, or ``$ASCENDPREP_REMOTE_CALL_OUTPUT_CAP`` (bytes) when set."""
    text = os.environ.get(limits.REMOTE_CALL_OUTPUT_CAP_ENV)
    if text is None or not text.strip():
        return limits.REMOTE_CALL_OUTPUT_CAP
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_OUTPUT_CAP:
        raise UnsafeValue(
            f"{limits.REMOTE_CALL_OUTPUT_CAP_ENV} must be a number of bytes from 1 to {MAX_OUTPUT_CAP}, not {text!r}"
        )
    return int(text)


class UnsafeValue(ValueError):
    """A value that cannot be put into a remote shell script safely or sensibly."""


def check_int(name: str, value: object, low: int, high: int) -> int:
    """An int in [low, high]; bools and numeric strings are refused (they hide caller bugs)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnsafeValue(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise UnsafeValue(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_devid(value: object) -> int:
    return check_int("NPU device id", value, 0, MAX_DEVID)


def _check_text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise UnsafeValue(f"{name} must be a non-empty string, not {value!r}")
    if any(ch in value for ch in "\0\n\r"):
        raise UnsafeValue(f"{name} must not contain NUL or line breaks: {value!r}")
    return value


def check_ascend_home(value: object) -> str:
    """An absolute path, or ``~``/``~/...`` for a non-root install under the login's $HOME."""
    text = _check_text("ascend_home", value)
    if not (text.startswith("/") or text == "~" or text.startswith("~/")):
        raise UnsafeValue(f"ascend_home must be an absolute path or start with ~/, not {text!r}")
    return text


def check_command(name: str, value: object) -> str:
    """An absolute path or a bare command name looked up on PATH (never an option or a relative path)."""
    text = _check_text(name, value)
    if text.startswith("-"):
        raise UnsafeValue(f"{name} must not start with '-': {text!r}")
    if not text.startswith("/") and "/" in text:
        raise UnsafeValue(f"{name} must be an absolute path or a bare command name, not {text!r}")
    return text


def quote_home(ascend_home: str) -> str:
    """Shell words for the Ascend home: ``~/Ascend`` becomes ``"$HOME"/Ascend``, the rest is quoted."""
    home = check_ascend_home(ascend_home)
    if home == "~":
        return '"$HOME"'
    if home.startswith("~/"):
        return '"$HOME"/' + shlex.quote(home[2:])
    return shlex.quote(home)


def preamble(
    kind: str,
    nonce: str,
    timeout_s: int,
    busy_retries: int,
    ascend_home: str,
    output_cap: Optional[int] = None,
    parallel: Optional[int] = None,
) -> str:
    """Settings, helper functions and the header line: everything before a script's body.

    ``output_cap``: bytes of one command's stdout (and of its stderr) the script keeps; past it
    the section says ``over=stdout`` (``stderr``, ``stdout+stderr``) with ``cap=N`` and carries
    only the first :data:`limits.REMOTE_CUT_EXCERPT` bytes. None: :func:`remote_call_output_cap`.
    ``parallel``: how many per-NPU jobs ``ap_each_npu`` runs at once (1: one NPU after the other).
    None: :func:`npu_probe_jobs`.
    """
    timeout_s = check_int("per_command_timeout", timeout_s, 1, MAX_TIMEOUT_S)
    busy_retries = check_int("busy_retries", busy_retries, 0, MAX_BUSY_RETRIES)
    parallel = check_int("parallel", npu_probe_jobs() if parallel is None else parallel, 1, MAX_PARALLEL)
    cap = check_int("output_cap", remote_call_output_cap() if output_cap is None else output_cap, 1, MAX_OUTPUT_CAP)
    if _HEX_NONCE.fullmatch(nonce):
        template = _preamble_template(kind, timeout_s, busy_retries, ascend_home, cap, parallel)
        if template is not None:
            text, stand_in = template
            return text.replace(stand_in, nonce)
    return _render_preamble(kind, nonce, timeout_s, busy_retries, ascend_home, cap, parallel)


#: A nonce as sections.new_nonce makes them; only such a nonce is put into a cached preamble.
_HEX_NONCE = re.compile(r"[0-9a-f]{16}")


@functools.lru_cache(maxsize=16)
def _preamble_template(
    kind: str, timeout_s: int, busy_retries: int, ascend_home: str, cap: int, parallel: int
) -> Optional[Tuple[str, str]]:
    """The preamble of these settings rendered once, with the nonce that stands for any other.

    A ping script is rendered per host (its pairs are the host's own), and the ~10 KB preamble
    is most of its text, so it is formatted once. Where the nonce goes is proved, not assumed
    (as run.hosts.fresh_nonce_scripts does): the rendering with a second nonce must equal the
    first with that nonce swapped in; else None, and every call renders afresh."""
    first = new_nonce()
    second = new_nonce()
    while second == first:
        second = new_nonce()
    text = _render_preamble(kind, first, timeout_s, busy_retries, ascend_home, cap, parallel)
    if text.replace(first, second) != _render_preamble(
        kind, second, timeout_s, busy_retries, ascend_home, cap, parallel
    ):
        return None
    return text, first


def _render_preamble(
    kind: str, nonce: str, timeout_s: int, busy_retries: int, ascend_home: str, cap: int, parallel: int
) -> str:
    return _PREAMBLE.format(
        kind=kind,
        nonce=nonce,
        timeout=timeout_s,
        retries=busy_retries,
        cap=cap,
        keep=cap + 1,
        oblocks=-(-cap // ULIMIT_BLOCK),
        eblocks=cap // ULIMIT_BLOCK + 1,
        exact=1 if cap % ULIMIT_BLOCK == 0 else "",
        excerpt=min(cap, limits.REMOTE_CUT_EXCERPT),
        home=quote_home(ascend_home),
        header=shlex.quote(header_line(kind, nonce)),
        hccn_in_home=HCCN_TOOL_IN_HOME,
        parallel=parallel,
    )


def main_block(body: str) -> str:
    """Wrap a script body so that it is parsed whole before it runs, with stdin closed.

    The body is not re-indented: it may hold multi-line quoted text (the Python probe code).
    """
    return f"ap_main() {{\n{body}printf '%s done\\n' \"$AP_M\"\n}}\n\nap_main </dev/null\n"


# Braces in the shell code are doubled for str.format.
_PREAMBLE = r"""#!/bin/sh
# Generated by ascendprep ({kind} script). Read-only: it changes nothing on this host.
# Prints one delimited section per command; see ascendprep/facts/sections.py.
LC_ALL=C
export LC_ALL
PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin
export PATH
set -f

AP_M=@@{nonce}
AP_T={timeout}
AP_RETRIES={retries}
AP_HOME={home}
AP_CAP={cap}
AP_KEEP={keep}
# `ulimit -f` blocks of a captured stream's file: stderr's hold more than AP_CAP bytes (its size
# says whether it went over); stdout's exactly AP_CAP where AP_CAP is whole blocks, so that tee's
# failure says it without a wc (AP_EXACT, checked below).
AP_OBLOCKS={oblocks}
AP_EBLOCKS={eblocks}
AP_EXCERPT={excerpt}

AP_PAR={parallel}
AP_JOBS=

AP_TMP=$(mktemp -d "${{TMPDIR:-/tmp}}/ascendprep.XXXXXX") || {{
	echo 'ascendprep: cannot create a temporary directory' >&2
	exit 1
}}
AP_TEE=$(command -v tee) || AP_TEE=
# AP_EXACT=1: tee is there and `ulimit -f` counts 512-byte blocks (dash, bash as sh; bash
# otherwise counts 1,024) and can be set to AP_OBLOCKS, which are then exactly AP_CAP bytes.
# AP_LIMIT=1: a subshell can set `ulimit -f` to AP_EBLOCKS (no lower hard limit).
AP_LIMIT= AP_EXACT=
if (ulimit -S -f "$AP_EBLOCKS") 2>/dev/null; then AP_LIMIT=1; fi
if [ -n "$AP_TEE" ] && [ -n "$AP_LIMIT" ] && (trap '' XFSZ; ulimit -S -f 1 && printf '%512s' '' >"$AP_TMP/unit" && ! printf '%513s' '' >"$AP_TMP/unit") 2>/dev/null; then AP_EXACT={exact}; fi
# AP_TMP: the scratch files of the current command (a per-NPU job has its own); AP_ROOT: the
# directory shared by the whole run (the hung-hccn_tool mark, the per-NPU sections, counters' times).
AP_ROOT=$AP_TMP
trap 'ap_reap' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# stdout closed (the SSH channel went away): end here, so that ap_reap stops the per-NPU jobs
trap 'exit 141' PIPE

# Each stream of a section is followed by one newline of the script's own (format v2, see
# sections.py), so a marker starts its own line whatever the stream's last byte was (a NUL
# included), without a look at that byte.

# ap_keep FILE BLOCKS: copy stdin into FILE, at most BLOCKS `ulimit -f` blocks of it, and read the
# rest into nothing, so a flooding tool is neither killed by a closed pipe nor told of an error:
# its exit status and its stderr stay its own. The limit is this reader's (SIGXFSZ ignored: tee's
# writes past it fail, tee reads on and exits 1), never the tool's, whose own files (logs) are not
# limited. Without tee, or where the limit cannot be set, head cuts and cat drains (exit 3: the
# file must be measured).
ap_keep() {{
	trap '' XFSZ
	if [ -n "$AP_TEE" ] && ulimit -S -f "$2" 2>/dev/null; then exec "$AP_TEE" "$1" >/dev/null 2>&1; fi
	head -c "$AP_KEEP" >"$1"
	cat >/dev/null
	exit 3
}}

# ap_capture COMMAND...: run COMMAND with stdin closed; more than AP_CAP bytes of its stdout go to
# $AP_TMP/out and of its stderr to $AP_TMP/err; ap_rc is its exit status (125: none recorded),
# ap_over the streams over AP_CAP. The status is read with the shell's `read`; stdout is measured
# (wc) only where tee's status cannot say (AP_EXACT empty), stderr only when not empty. printf and
# ap_locate (the shell's own output, bounded by what the script holds) run without the pipeline,
# and so do cat and sha256sum of a file where the limit can be set (AP_LIMIT).
ap_capture() {{
	case $1 in
	printf | ap_locate)
		"$@" </dev/null >"$AP_TMP/out" 2>"$AP_TMP/err"
		ap_rc=$? ap_kept=3
		;;
	cat | sha256sum)
		# A coreutils read of a file, which writes no file of its own: its stdout and stderr go
		# straight to the capture files under `ulimit -f` (one process, no pipeline). A file past
		# the limit ends the read there (cat: "write error", exit 1): a read-only command may be
		# cut, and an infinite file (a link to /dev/zero) is not read forever.
		if [ -z "$AP_LIMIT" ]; then
			ap_pipe "$@"
		else
			# (more than the cap: a copy that reaches the limit fails even at the file's end)
			(trap '' XFSZ; ulimit -S -f "$AP_EBLOCKS" && exec "$@" </dev/null >"$AP_TMP/out" 2>"$AP_TMP/err")
			ap_rc=$? ap_kept=3
		fi
		;;
	*) ap_pipe "$@" ;;
	esac
	ap_measure
}}

# ap_pipe COMMAND...: ap_capture's pipeline, for a command that must run to its own end.
ap_pipe() {{
	: >"$AP_TMP/rc"
	{{ {{ "$@" </dev/null; echo "$?" >"$AP_TMP/rc"; }} 2>&1 >&3 3>&- | ap_keep "$AP_TMP/err" "$AP_EBLOCKS" 3>&-; }} 3>&1 | ap_keep "$AP_TMP/out" "$AP_OBLOCKS"
	ap_kept=$?
	ap_rc=
	read -r ap_rc <"$AP_TMP/rc" || :
	case $ap_rc in '' | *[!0-9]*) ap_rc=125 ;; esac
}}

# ap_measure: ap_over from ap_kept (0: stdout whole, 1: cut, else: measure it) and the files.
ap_measure() {{
	ap_over=
	case $AP_EXACT$ap_kept in
	10) ;;
	11) ap_over=stdout ;;
	*) if [ -s "$AP_TMP/out" ] && [ "$(($(wc -c <"$AP_TMP/out")))" -gt "$AP_CAP" ]; then ap_over=stdout; fi ;;
	esac
	if [ -s "$AP_TMP/err" ] && [ "$(($(wc -c <"$AP_TMP/err")))" -gt "$AP_CAP" ]; then ap_over=${{ap_over:+$ap_over+}}stderr; fi
}}

# ap_print FILE STREAM: the captured text (only its first AP_EXCERPT bytes when STREAM was cut),
# then the stream's closing newline.
ap_print() {{
	case +$ap_over+ in
	*+"$2"+*) head -c "$AP_EXCERPT" "$1" ;;
	*) if [ -s "$1" ]; then cat "$1"; fi ;;
	esac
	echo
}}

# ap_busy: did the last command say "hccn_tool is busy" (another hccn_tool was running)?
ap_busy() {{
	case $(cat "$AP_TMP/out" "$AP_TMP/err") in
	*'hccn_tool is busy'*) return 0 ;;
	esac
	return 1
}}

# ap_run NAME ATTRS COMMAND...: run COMMAND (again after 1, 2, 4, 8... s while hccn_tool is
# busy, at most AP_RETRIES times) and print its section. Output over AP_CAP bytes is cut: the
# section says over=STREAM cap=AP_CAP and carries the first AP_EXCERPT bytes of it.
ap_run() {{
	ap_name=$1 ap_attrs=$2
	shift 2
	ap_try=1 ap_wait=1
	while :; do
		ap_capture "$@"
		if [ "$ap_rc" -eq 0 ] || [ -n "$ap_over" ] || [ "$ap_try" -gt "$AP_RETRIES" ] || ! ap_busy; then
			break
		fi
		sleep "$ap_wait"
		ap_try=$((ap_try + 1))
		ap_wait=$((ap_wait * 2))
		if [ "$ap_wait" -gt 8 ]; then ap_wait=8; fi
	done
	if [ -n "$ap_over" ]; then ap_attrs="$ap_attrs over=$ap_over cap=$AP_CAP"; fi
	printf '%s begin %s%s\n' "$AP_M" "$ap_name" "$ap_attrs"
	ap_print "$AP_TMP/out" stdout
	printf '%s stderr\n' "$AP_M"
	ap_print "$AP_TMP/err" stderr
	printf '%s end rc=%s tries=%s\n' "$AP_M" "$ap_rc" "$ap_try"
}}

# ap_tool COMMAND...: COMMAND cut off after AP_T seconds (exit 124; 137 if it ignored TERM).
ap_tool() {{
	timeout -k 2 "$AP_T" "$@"
}}

# ap_hccn ARGS...: hccn_tool under the time limit. Once a call has hung, the later ones are not
# made: a wedged driver does not recover within one run, and ten calls per NPU each waiting out
# the limit would stall the host for minutes. They report exit 124 with "not run" on stderr.
# (The hang is remembered in a file: ap_capture runs each command in a subshell.)
ap_hccn() {{
	if [ -e "$AP_ROOT/hccn_hung" ]; then
		printf 'not run: hccn_tool hung earlier in this run (%s)\n' "$(cat "$AP_ROOT/hccn_hung")" >&2
		return 124
	fi
	timeout -k 2 "$AP_T" "$AP_HCCN" "$@"
	ap_hrc=$?
	if [ "$ap_hrc" -eq 124 ] || [ "$ap_hrc" -eq 137 ]; then printf 'hccn_tool %s' "$*" >"$AP_ROOT/hccn_hung"; fi
	return "$ap_hrc"
}}

# ap_locate NAME FALLBACK: print where NAME is (PATH first, then FALLBACK), else exit 127.
ap_locate() {{
	if command -v "$1"; then return 0; fi
	if [ -x "$2" ]; then
		printf '%s\n' "$2"
		return 0
	fi
	printf '%s: not installed (not on PATH, not at %s)\n' "$1" "$2" >&2
	return 127
}}

# ap_installed NAME COMMAND...: run COMMAND when NAME is installed, else exit 127.
ap_installed() {{
	if command -v "$1" >/dev/null 2>&1; then
		shift
		"$@"
		return
	fi
	printf '%s: not installed\n' "$1" >&2
	return 127
}}

# ap_hccn_tool: set AP_HCCN to hccn_tool's path (empty when absent), reporting it as a section.
ap_hccn_tool() {{
	ap_run tool.hccn_tool '' ap_locate hccn_tool "$AP_HOME/{hccn_in_home}"
	AP_HCCN=
	if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then IFS= read -r AP_HCCN <"$AP_TMP/out" || :; fi
}}

# ap_reap: on exit, stop the per-NPU jobs still running (a tool they started ends at its own
# time limit) and remove the scratch files.
ap_reap() {{
	if [ -n "$AP_JOBS" ]; then kill $AP_JOBS 2>/dev/null; fi
	rm -rf "$AP_ROOT"
}}

# ap_each_npu FUNCTION [ITEMS]: run FUNCTION once per word of ITEMS (default: the device ids in
# $AP_DEVS), as $ap_dev, in at most AP_PAR jobs at once; then print what each printed in the order
# of ITEMS, so the output reads as if they had run one after the other. Job W takes the words at
# positions W, W+AP_PAR, ...; each word's sections go to a file of their own. A word whose file a
# job could not write (no scratch space, the job killed) runs here instead, after the others.
# The finished files are printed by one cat per run of them (their sections end with a newline).
ap_each_npu() {{
	ap_fn=$1
	AP_EACH=$((${{AP_EACH:-0}} + 1))
	ap_dir=$AP_ROOT/each.$AP_EACH
	ap_items=${{2-$AP_DEVS}}
	ap_count=0
	for ap_dev in $ap_items; do ap_count=$((ap_count + 1)); done
	# the folder and every job's scratch folder in one mkdir
	set -- "$ap_dir"
	ap_w=0
	while [ "$ap_w" -lt "$AP_PAR" ] && [ "$ap_w" -lt "$ap_count" ]; do
		set -- "$@" "$ap_dir/job.$ap_w"
		ap_w=$((ap_w + 1))
	done
	if mkdir "$@"; then
		ap_w=0
		while [ "$ap_w" -lt "$AP_PAR" ] && [ "$ap_w" -lt "$ap_count" ]; do
			ap_npu_job "$ap_fn" "$ap_w" "$ap_dir" "$ap_items" &
			AP_JOBS="$AP_JOBS $!"
			ap_w=$((ap_w + 1))
		done
		wait
		AP_JOBS=
	fi
	ap_i=0
	set --
	for ap_dev in $ap_items; do
		if [ -e "$ap_dir/$ap_i.done" ]; then
			set -- "$@" "$ap_dir/$ap_i"
		else
			if [ "$#" -gt 0 ]; then cat "$@"; fi
			set --
			"$ap_fn"
		fi
		ap_i=$((ap_i + 1))
	done
	if [ "$#" -gt 0 ]; then cat "$@"; fi
}}

# ap_npu_job FUNCTION W DIR ITEMS: job W of ap_each_npu, with scratch files of its own (DIR/job.W,
# made by ap_each_npu).
ap_npu_job() {{
	AP_TMP=$3/job.$2
	ap_i=0
	for ap_dev in $4; do
		if [ "$((ap_i % AP_PAR))" -eq "$2" ]; then
			"$1" >"$3/$ap_i" && : >"$3/$ap_i.done"
		fi
		ap_i=$((ap_i + 1))
	done
}}

printf '%s\n' {header}
"""
