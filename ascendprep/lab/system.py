"""The host side effects the lab needs: running commands, prerequisites, and its processes.

Commands run as argument lists (never through a shell) and fail with a :class:`LabError` that
quotes the command and its stderr, so a failed ``lab up`` says which step broke and why.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

#: Where to look for admin tools even when the caller's PATH lacks the sbin directories.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"])


class LabError(Exception):
    """A lab operation failed; the message is for the user (no traceback needed)."""


def tool(name: str) -> str:
    """Absolute path of an admin tool, or a :class:`LabError` naming the package to install."""
    path = shutil.which(name, path=SEARCH_PATH)
    if path is None:
        package = next((r.package for r in REQUIREMENTS if r.command == name), name)
        raise LabError(f"'{name}' not found: install it (apt-get install {package})")
    return path


def run(
    argv: Sequence[str],
    *,
    input: Optional[str] = None,
    timeout: float = 60,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; with ``check`` a non-zero exit raises :class:`LabError`."""
    try:
        result = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(f"'{' '.join(argv)}' did not finish within {timeout:g}s") from None
    except OSError as exc:
        raise LabError(f"cannot run '{argv[0]}': {exc.strerror}") from None
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()
        raise LabError(f"'{' '.join(argv)}' failed (exit {result.returncode}): {detail}")
    return result


# --- prerequisites ------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    command: str
    package: str
    why: str


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("sshd", "openssh-server", "each node runs a real sshd"),
    Requirement("ssh-keygen", "openssh-client", "lab and host keys"),
    Requirement("ssh", "openssh-client", "reaching the nodes"),
    Requirement("ip", "iproute2", "namespaces, bridge and veths"),
    Requirement("tc", "iproute2", "the 'slow' fault"),
    Requirement("unshare", "util-linux", "private mount and UTS namespaces"),
    Requirement("nsenter", "util-linux", "starting processes inside a node"),
    Requirement("mount", "mount", "overlay and tmpfs mounts"),
    Requirement("umount", "mount", "removing the lab's mounts"),
)


def missing_requirements(
    which: Callable[[str], Optional[str]] = lambda name: shutil.which(name, path=SEARCH_PATH),
    euid: Optional[int] = None,
    filesystems: Optional[str] = None,
) -> list[str]:
    """What stops ``lab up`` on this machine, one line each, saying how to fix it.

    The arguments exist for tests; by default the real machine is asked.
    """
    problems: list[str] = []
    if (os.geteuid() if euid is None else euid) != 0:
        problems.append("root: lab up creates namespaces and mounts (run it with sudo)")
    for requirement in REQUIREMENTS:
        if which(requirement.command) is None:
            problems.append(
                f"{requirement.command}: needed for {requirement.why} (apt-get install {requirement.package})"
            )
    if filesystems is None:
        filesystems = _read_text(Path("/proc/filesystems"))
    if not any(line.split()[-1:] == ["overlay"] for line in filesystems.splitlines()):
        problems.append("overlayfs: not in /proc/filesystems (load it: modprobe overlay)")
    return problems


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


# --- mounts -------------------------------------------------------------------------------


def mount_points() -> set[str]:
    """Mount points of this mount namespace (from /proc/self/mountinfo).

    ``os.path.ismount`` misses bind mounts within one filesystem (``/run/netns`` is one), so the
    kernel's own list is the authority.
    """
    points = set()
    for line in _read_text(Path("/proc/self/mountinfo")).splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(_unescape_mount_path(fields[4]))
    return points


def is_mountpoint(path: Path) -> bool:
    return str(path) in mount_points()


def _unescape_mount_path(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    for escaped, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(escaped, char)
    return text


# --- processes ----------------------------------------------------------------------------

#: Daemons this Python process started, kept so that stopping them also reaps them.
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ProcessRef:
    """A process known by pid *and* start time, so a recycled pid is never mistaken for it."""

    pid: int
    start: int

    def to_dict(self) -> dict[str, int]:
        return {"pid": self.pid, "start": self.start}


def start_daemon(argv: Sequence[str], log: Path) -> ProcessRef:
    """Start a long-lived process in its own session, output appended to ``log``."""
    with open(log, "ab") as log_file:
        try:
            child = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise LabError(f"cannot start '{argv[0]}': {exc.strerror}") from None
    _children[child.pid] = child
    start = process_start(child.pid)
    return ProcessRef(child.pid, start if start is not None else 0)


def process_start(pid: int) -> Optional[int]:
    """The process's start time in clock ticks since boot, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def process_state(pid: int) -> Optional[str]:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[0]


def is_running(ref: ProcessRef) -> bool:
    """True while the very process ``ref`` names exists and is not a zombie."""
    _reap(ref.pid)
    state = process_state(ref.pid)
    return state is not None and state != "Z" and process_start(ref.pid) == ref.start


def command_name(pid: int) -> Optional[str]:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def stop_processes(refs: Iterable[ProcessRef], grace: float = 3.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL whatever is left."""
    alive = [ref for ref in refs if is_running(ref)]
    for ref in alive:
        _signal(ref.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [ref for ref in alive if is_running(ref)]
    for ref in alive:
        _signal(ref.pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [ref for ref in alive if is_running(ref)]
    if alive:
        raise LabError(f"processes {', '.join(str(r.pid) for r in alive)} survived SIGKILL")


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return  # exited between the check and the signal: nothing left to stop


def _reap(pid: int) -> None:
    """Collect the exit status of a daemon we started, so it does not linger as a zombie."""
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        del _children[pid]


def processes_in_net_namespaces(inodes: set[int]) -> list[ProcessRef]:
    """Live processes whose network namespace is one of ``inodes`` (see :func:`netns_inode`)."""
    found: list[ProcessRef] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            link = os.readlink(f"/proc/{entry.name}/ns/net")
        except OSError:
            continue  # exited meanwhile, or a kernel thread
        if _ns_inode(link) in inodes:
            pid = int(entry.name)
            start = process_start(pid)
            if start is not None and process_state(pid) != "Z":
                found.append(ProcessRef(pid, start))
    return found


def netns_inode(path: Path) -> Optional[int]:
    """Inode of a named network namespace file (``/run/netns/X``); None when absent."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _ns_inode(link: str) -> Optional[int]:
    # "net:[4026532281]"
    if not link.startswith("net:[") or not link.endswith("]"):
        return None
    return int(link[5:-1])
