"""Who holds the host ports an HCCL job needs: ``ss -tanp``, or ``/proc/net/tcp`` without ss.

Why: HCCL listens on a block of host ports from ``HCCL_IF_BASE_PORT`` (60000) while ranks find
each other, and torchrun's store on the master port. A process still bound there (a previous job,
another user's job, a service) makes the next job fail with ``EJ0003: Failed to bind the IP port.
Reason: The IP address and port have been bound already ... port[60000]`` (vllm-ascend issue 405)
or ``EI0019 ... listen on ip[...] port[60000] fail``. The reserved-ports sysctl keeps the kernel
from handing the ports out as ephemeral ports; it cannot evict a process that bound one.

The gather asks only about those ports (a host with 100,000 connections must not cost a megabyte):
``ss`` with a port filter, or, where ss is missing (minimal images), the matching lines of
``/proc/net/tcp`` and ``tcp6`` with the owning process found through ``/proc/<pid>/fd`` (readable
for root). Pure parsers here, plus the shell text that produces what they read.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ascendprep.base.limits import MAX_PORT_SOCKETS
from ascendprep.facts.blocker_model import PortSockets, SocketUse
from ascendprep.facts.shell import check_int
from ascendprep.facts.text import UnexpectedOutput, content_lines, first_line

#: ``/proc/net/tcp`` state codes (include/net/tcp_states.h) as ss names them.
TCP_STATES = {
    "01": "ESTAB",
    "02": "SYN-SENT",
    "03": "SYN-RECV",
    "04": "FIN-WAIT-1",
    "05": "FIN-WAIT-2",
    "06": "TIME-WAIT",
    "07": "UNCONN",
    "08": "CLOSE-WAIT",
    "09": "LAST-ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}
_SS_STATES = frozenset(TCP_STATES.values()) | {"CLOSE", "ESTABLISHED", "SYN-RECV", "TIME_WAIT", "UNCONN"}
#: ``users:(("python3",pid=4242,fd=3))``; iproute2 before 4.x printed ``("sshd",1234,3)``.
_USER_RE = re.compile(r'\("(.*?)",(?:pid=)?(\d{1,10}),(?:fd=)?\d{1,10}\)')
_HEX_PORT_RE = re.compile(r"^[0-9A-Fa-f]+:([0-9A-Fa-f]{4})$")


@dataclass(frozen=True)
class PortQuery:
    """The ports the gather asks about: inclusive ranges (the HCCL block, the master port)."""

    ranges: Tuple[Tuple[int, int], ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ValueError("a port query needs at least one range")
        for low, high in self.ranges:
            check_int("port", low, 1, 65535)
            check_int("port", high, low, 65535)
        if sum(high - low + 1 for low, high in self.ranges) > 256:
            raise ValueError("a port query covers at most 256 ports (the gather lists them one by one)")

    def covers(self, port: int) -> bool:
        return any(low <= port <= high for low, high in self.ranges)

    @property
    def ports(self) -> Tuple[int, ...]:
        return tuple(port for low, high in self.ranges for port in range(low, high + 1))

    def ss_filter(self) -> str:
        """The ss expression: ``( sport >= :60000 and sport <= :60031 ) or ( sport = :29500 )``."""
        parts = [
            f"( sport = :{low} )" if low == high else f"( sport >= :{low} and sport <= :{high} )"
            for low, high in self.ranges
        ]
        return " or ".join(parts)


def render_functions(query: PortQuery) -> str:
    """The sh function ``ap_proc_ports``: the ``/proc`` fallback for a host without ss.

    Prints ``tcp <line>`` / ``tcp6 <line>`` for each socket on a queried port, then
    ``owner <inode> <pid>`` for each socket whose owner it can see in ``/proc/<pid>/fd`` and
    ``comm <pid> <name>`` for that process. Unreadable tables are an error (exit 1), unreadable
    fds only mean "owner unknown". One ``ls`` lists every fd: no process is started per fd.
    """
    patterns = " | ".join(f"*:{port:04X}" for port in query.ports)
    return rf"""# ap_proc_ports: sockets on the queried ports from /proc/net/tcp{{,6}}, and their owners.
ap_proc_ports() {{
	ap_inodes=' ' ap_tables=0
	for ap_f in /proc/net/tcp /proc/net/tcp6; do
		if [ ! -e "$ap_f" ]; then continue; fi
		if [ ! -r "$ap_f" ]; then
			printf 'cannot read %s\n' "$ap_f" >&2
			return 1
		fi
		ap_tables=$((ap_tables + 1))
		while IFS= read -r ap_line; do
			set -- $ap_line
			case ${{2-}} in
			{patterns})
				printf '%s %s\n' "${{ap_f##*/}}" "$ap_line"
				ap_inodes="$ap_inodes${{10-}} "
				;;
			esac
		done <"$ap_f"
	done
	if [ "$ap_tables" -eq 0 ]; then
		echo 'no /proc/net/tcp on this host' >&2
		return 1
	fi
	if [ "$ap_inodes" = ' ' ]; then return 0; fi
	ap_pid= ap_pids=' '
	set +f
	ls -l /proc/[0-9]*/fd 2>/dev/null >"$AP_TMP/fds"
	set -f
	while IFS= read -r ap_line; do
		case $ap_line in
		/proc/*/fd:) ap_pid=${{ap_line#/proc/}} ap_pid=${{ap_pid%/fd:}} ;;
		*'socket:['*']')
			ap_inode=${{ap_line##*socket:[}} ap_inode=${{ap_inode%]}}
			case $ap_inodes in
			*" $ap_inode "*)
				printf 'owner %s %s\n' "$ap_inode" "$ap_pid"
				case $ap_pids in *" $ap_pid "*) ;; *) ap_pids="$ap_pids$ap_pid " ;; esac
				;;
			esac
			;;
		esac
	done <"$AP_TMP/fds"
	for ap_pid in $ap_pids; do
		if IFS= read -r ap_comm <"/proc/$ap_pid/comm"; then printf 'comm %s %s\n' "$ap_pid" "$ap_comm"; fi
	done 2>/dev/null
	return 0
}}
"""


def _split_endpoint(text: str) -> Tuple[str, int]:
    """``10.0.0.1:60000``, ``[::]:22``, ``*:22``, ``127.0.0.53%lo:53`` → (address, port)."""
    address, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or len(port) > 5 or not 0 <= int(port) <= 65535:
        raise UnexpectedOutput(f"{first_line(text)[:80]!r} is not an address:port")
    return address.strip("[]"), int(port)


def parse_ss(stdout: str, query: PortQuery) -> PortSockets:
    """``ss -tanp FILTER`` → the sockets on the queried ports (a header line is skipped).

    Without root, ss shows no ``users:(...)`` for other users' sockets: their owner stays None.
    """
    sockets: List[SocketUse] = []
    owners_seen = False
    for line in content_lines(stdout):
        words = line.split()
        if words[0] in ("State", "Netid"):
            continue
        if len(words) < 5 or words[0].upper() not in _SS_STATES:
            raise UnexpectedOutput(f"not an 'ss -tan' line: {line[:120]!r}")
        address, port = _split_endpoint(words[3])
        if not query.covers(port):
            continue
        users = _USER_RE.findall(line)
        owners_seen = owners_seen or bool(users)
        if not users:
            sockets.append(SocketUse(words[0].upper(), address, port))
        for name, pid in users:
            sockets.append(SocketUse(words[0].upper(), address, port, int(pid), name))
        if len(sockets) > MAX_PORT_SOCKETS:
            raise UnexpectedOutput(f"more than {MAX_PORT_SOCKETS} sockets on the queried ports")
    return PortSockets("ss", tuple(sockets), owners_read=owners_seen or not sockets, ranges=query.ranges)


def _proc_address(hex_address: str) -> str:
    """``0100007F`` → ``127.0.0.1``; 32 hex digits (tcp6, four host-order words) → IPv6."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    if len(raw) == 16:
        return str(ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))))
    raise ValueError(f"{hex_address!r} is neither 8 nor 32 hex digits")


def parse_proc_ports(stdout: str, query: PortQuery) -> PortSockets:
    """What ``ap_proc_ports`` printed → the sockets on the queried ports, owners where seen."""
    entries: List[Tuple[str, str, int, str]] = []
    owner_of: Dict[str, int] = {}
    names: Dict[int, str] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        kind, _, rest = line.partition(" ")
        words = rest.split()
        if kind in ("tcp", "tcp6"):
            if len(words) < 10:
                raise UnexpectedOutput(f"not a /proc/net/{kind} line: {line[:120]!r}")
            match = _HEX_PORT_RE.match(words[1])
            if match is None:
                raise UnexpectedOutput(f"not a /proc/net/{kind} address: {words[1][:60]!r}")
            port = int(match.group(1), 16)
            try:
                address = _proc_address(words[1].split(":", 1)[0])
            except ValueError as exc:
                raise UnexpectedOutput(f"/proc/net/{kind}: {exc}") from None
            state = TCP_STATES.get(words[3].upper(), f"state 0x{words[3][:4]}")
            if query.covers(port):
                entries.append((state, address, port, words[9]))
        elif kind == "owner" and len(words) == 2 and words[0].isdigit() and words[1].isdigit():
            owner_of.setdefault(words[0], int(words[1]))
        elif kind == "comm" and words and words[0].isdigit():
            names[int(words[0])] = rest.split(" ", 1)[1] if " " in rest else ""
        else:
            raise UnexpectedOutput(f"unexpected line from the /proc port probe: {line[:120]!r}")
        if len(entries) > MAX_PORT_SOCKETS:
            raise UnexpectedOutput(f"more than {MAX_PORT_SOCKETS} sockets on the queried ports")
    sockets = []
    for state, address, port, inode in entries:
        # A TIME-WAIT socket (inode 0) belongs to no process any more.
        pid = owner_of.get(inode) if inode != "0" else None
        sockets.append(SocketUse(state, address, port, pid, names.get(pid) if pid is not None else None))
    owned = [inode for *_, inode in entries if inode != "0"]
    return PortSockets("/proc/net/tcp", tuple(sockets), owners_read=not owned or bool(owner_of), ranges=query.ranges)


def blocking(sockets: Sequence[SocketUse]) -> List[SocketUse]:
    """Sockets that stop a job from binding: any but TIME-WAIT (which no process owns, and
    which the kernel lets a new listener reuse). One entry per (state, address, port, pid)."""
    seen: Dict[Tuple[str, str, int, Optional[int]], SocketUse] = {}
    for item in sockets:
        if item.state in ("TIME-WAIT", "TIME_WAIT"):
            continue
        seen.setdefault((item.state, item.local_address, item.local_port, item.pid), item)
    return list(seen.values())
