"""The few fixed shell command lines the transports send, rendered by pure functions.

A script is never put on a command line: it travels on stdin to ``sh -s``, so its size and its
quoting do not matter. What *is* on the command line is a short launcher of our own:

* it reports the script's process group on stderr (``@ascendprep-started PGID``) before anything
  else runs. That line proves that the script started (so a sudo failure can be told apart from a
  script failure, and a password prompt can be retried safely), and it tells us which group to
  kill when the script runs past its time limit. Closing an SSH channel does not signal the
  remote process when there is no pty, so a timed-out script must be killed explicitly;
* it then ``exec``s ``sh -s`` so the script runs in the same process (and group).
"""

from __future__ import annotations

import re
import shlex
from typing import Optional, Tuple

STARTED_TAG = "@ascendprep-started"
_STARTED_LINE = re.compile(rb"^" + STARTED_TAG.encode() + rb" (\d+)\n", re.MULTILINE)

# Field 5 of /proc/PID/stat is the process group. ${p:-$$} falls back to our own pid, which is
# also the group on hosts where sshd made the shell a session leader (OpenSSH always does).
LAUNCHER = f'p=; read -r _ _ _ _ p _ </proc/$$/stat 2>/dev/null; echo "{STARTED_TAG} ${{p:-$$}}" >&2; exec sh -s'

# sudo modes: how the launcher is wrapped.
NO_SUDO = "none"
SUDO_NOPASSWD = "nopasswd"
SUDO_PASSWORD = "password"

#: In password mode a small wrapper reports sudo's own pid first (``@ascendprep-sudo PID``) and
#: then execs sudo. After a wrong password sudo asks again and waits on stdin; nothing more is
#: sent (the script only follows the started-marker), and that pid is killed, so one wrong
#: password costs exactly one failed attempt per host, never sudo's default three (with
#: ``pam_faillock deny=3``, three would lock the account).
SUDO_PID_TAG = "@ascendprep-sudo"
_SUDO_PID_LINE = re.compile(rb"^" + SUDO_PID_TAG.encode() + rb" (\d+)\n", re.MULTILINE)
#: What sudo prints (LC_ALL=C) when it rejected a password and is about to ask again.
SUDO_REJECTED_TEXTS = (b"Sorry, try again.", b"incorrect password")


def launch_command(sudo_mode: str) -> str:
    """The command line that starts ``sh -s`` (through sudo if asked) behind the launcher."""
    base = "sh -c " + shlex.quote(LAUNCHER)
    if sudo_mode == NO_SUDO:
        return base
    # LC_ALL=C keeps sudo's own messages in English so that they can be recognised.
    if sudo_mode == SUDO_NOPASSWD:
        return "LC_ALL=C sudo -n " + base
    if sudo_mode == SUDO_PASSWORD:
        # -k ignores cached credentials so sudo always reads the password line we send first;
        # otherwise that line would reach sh as a command. -p '' keeps the prompt off stderr.
        # The outer sh reports its pid, which exec makes sudo's: the pid to kill on a rejection.
        inner = "LC_ALL=C; export LC_ALL; exec sudo -k -S -p '' " + base
        return "sh -c " + shlex.quote(f'echo "{SUDO_PID_TAG} $$" >&2; {inner}')
    raise ValueError(f"unknown sudo mode {sudo_mode!r}")


def split_started_marker(stderr: bytes) -> Tuple[Optional[int], bytes]:
    """Find the launcher's marker in ``stderr``: (process group or None, stderr without it).

    The marker is usually the first line; sudo may print a lecture before it, so the first
    occurrence anywhere is taken, and only that one is removed.
    """
    match = _STARTED_LINE.search(stderr)
    if match is None:
        return None, stderr
    return int(match.group(1)), stderr[: match.start()] + stderr[match.end() :]


def split_sudo_pid(stderr: bytes) -> Tuple[Optional[int], bytes]:
    """Find the password-mode wrapper's ``@ascendprep-sudo PID`` line: (pid or None, stderr without it)."""
    match = _SUDO_PID_LINE.search(stderr)
    if match is None:
        return None, stderr
    return int(match.group(1)), stderr[: match.start()] + stderr[match.end() :]


def sudo_rejected(stderr: bytes) -> bool:
    """Did sudo say it rejected the password (and so is waiting for another attempt)?"""
    return any(text in stderr for text in SUDO_REJECTED_TEXTS)


def kill_pid_command(pid: int) -> str:
    """The command line that kills the login user's own sudo process waiting for a 2nd attempt."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        raise ValueError(f"refusing to kill pid {pid!r}")
    return f"kill -s KILL {pid}"


def kill_group_script(pgid: int, grace_seconds: float = 2.0) -> str:
    """A script that stops process group ``pgid``: SIGTERM, then SIGKILL after a grace period.

    SIGKILL is needed for processes that ignore SIGTERM (or whose parent was killed first).
    ``kill -s SIG -- -PGID`` is the POSIX spelling that dash, bash and busybox all accept.
    """
    if isinstance(pgid, bool) or not isinstance(pgid, int) or pgid <= 1:
        raise ValueError(f"refusing to kill process group {pgid!r}")
    steps = max(1, int(grace_seconds / 0.1))
    return (
        f"g={pgid}\n"
        'kill -s TERM -- "-$g" 2>/dev/null || exit 0\n'
        "i=0\n"
        'while kill -s 0 -- "-$g" 2>/dev/null; do\n'
        f'  if [ "$i" -ge {steps} ]; then kill -s KILL -- "-$g" 2>/dev/null; exit 0; fi\n'
        "  i=$((i + 1)); sleep 0.1\n"
        "done\n"
    )


def install_file_script(source: str, destination: str, mode: int) -> str:
    """Move an uploaded temp file into place as root, atomically, with ``mode``.

    Used when the login user cannot write the destination and sudo is on: the bytes go up with
    SFTP to a temp file the user owns, then this script (run through sudo) copies them next to the
    destination and renames, so readers never see half a file.
    """
    _check_remote_path(source)
    _check_remote_path(destination)
    _check_mode(mode)
    template = shlex.quote(parent_dir(destination) + "/.ascendprep.XXXXXX")
    return (
        "set -e\n"
        f"s={shlex.quote(source)}\n"
        "t=\n"
        # Whatever happens, the upload does not stay in /tmp and no temp file stays next to dst.
        'trap \'rm -f -- "$s" ${t:+"$t"}\' EXIT\n'
        f"t=$(mktemp {template})\n"
        'cat -- "$s" >"$t"\n'
        f'chmod {mode:o} "$t"\n'
        f'mv -f -- "$t" {shlex.quote(destination)}\n'
        "t=\n"
    )


#: Bytes of file content per ``printf`` line in :func:`write_file_script`.
_PRINTF_CHUNK = 4096
#: Bytes that may stand for themselves inside a single-quoted printf format. Everything else
#: (quote, backslash, %, '-', newline, any byte >= 0x80) is written as a 3-digit octal escape.
_PRINTF_SAFE = frozenset(
    b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _./,:=+@#()[]{}<>;*?!~^&|$`"'
) - frozenset(b"\\")


def printf_escape(data: bytes) -> str:
    """``data`` as a printf format that prints exactly those bytes (POSIX ``\\ddd`` escapes)."""
    return "".join(chr(b) if b in _PRINTF_SAFE else f"\\{b:03o}" for b in data)


def write_file_script(data: bytes, destination: str, mode: int) -> str:
    """Write ``data`` to ``destination`` atomically with ``mode``, the bytes carried in the script.

    This is put() on a host without SFTP: no subsystem, no ``base64`` or other tool needed, only
    the shell's ``printf`` builtin, ``mktemp``, ``chmod`` and ``mv``. Run through sudo it writes as
    root directly. The temp file next to the destination is removed on any exit.
    """
    _check_remote_path(destination)
    _check_mode(mode)
    template = shlex.quote(parent_dir(destination) + "/.ascendprep.XXXXXX")
    lines = [
        "set -e",
        # mv onto a directory would move the file into it instead of replacing anything.
        f"if [ -d {shlex.quote(destination)} ]; then echo {shlex.quote(destination + ' is a directory')} >&2; exit 1; fi",
        "t=",
        "trap 'rm -f -- ${t:+\"$t\"}' EXIT",
        f"t=$(mktemp {template})",
        "{",
    ]
    for start in range(0, len(data), _PRINTF_CHUNK):
        lines.append("printf '" + printf_escape(data[start : start + _PRINTF_CHUNK]) + "'")
    lines += [
        ":",
        '} >"$t"',
        f'chmod {mode:o} "$t"',
        f'mv -f -- "$t" {shlex.quote(destination)}',
        "t=",
        "",
    ]
    return "\n".join(lines)


def read_file_script(path: str) -> str:
    """Print the bytes of ``path`` (fetch() reads them back through the exec channel)."""
    _check_remote_path(path)
    return f"exec cat -- {shlex.quote(path)}\n"


def parent_dir(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _check_remote_path(path: str) -> None:
    if not path.startswith("/") or "\0" in path or "\n" in path or path.endswith("/"):
        raise ValueError(f"{path!r} is not an absolute file path")


def _check_mode(mode: int) -> None:
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
        raise ValueError(f"file mode {mode!r} is not between 0 and 0o7777")


def check_put_arguments(remote_path: str, mode: int) -> None:
    """Validate put()'s arguments before anything is sent (same rules for every transport)."""
    _check_remote_path(remote_path)
    _check_mode(mode)
