"""Facts about what would stop an HCCL job from starting on a host: NPUs held by a process,
host ports already taken, and the state of the host NICs.

Kept apart from :mod:`ascendprep.facts.model` so that the probes of issue 17 own their data; the
fields that hold them on :class:`~ascendprep.facts.model.HostFacts` are ``npu_processes``,
``port_sockets``, ``links`` and ``route_to_master``. Plain frozen dataclasses, like every fact:
they round-trip through JSON with the host's facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True, slots=True)
class NpuProcess:
    """One row of the process table of ``npu-smi info``.

    ``name`` is empty where npu-smi shows none (a process in another PID namespace, e.g. a
    container); ``memory_mb`` is None where the column is not a number.
    """

    npu_id: int
    chip: int
    pid: int
    name: str = ""
    memory_mb: Optional[int] = None


@dataclass(frozen=True, slots=True)
class NpuProcessTable:
    """The process table: processes, NPUs said to be idle, and rows that fit neither form.

    ``odd_rows`` keeps such rows as printed (a check shows them escaped): a table row npu-smi
    prints in a form this parser does not know must not silently read as "idle".
    """

    processes: Tuple[NpuProcess, ...] = ()
    idle_npus: Tuple[int, ...] = ()
    odd_rows: Tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SocketUse:
    """A TCP socket bound to a port a job needs (``ss -tanp`` or ``/proc/net/tcp``).

    ``state`` as ss names it (``LISTEN``, ``ESTAB``, ``TIME-WAIT``, ...); ``pid``/``process``
    are None when the owner could not be read (not root, or ``/proc/<pid>/fd`` unreadable).
    """

    state: str
    local_address: str
    local_port: int
    pid: Optional[int] = None
    process: Optional[str] = None


@dataclass(frozen=True, slots=True)
class PortSockets:
    """The sockets on the ports the gather asked about, and how they were read.

    ``source``: ``ss`` or ``/proc/net/tcp`` (ss missing). ``owners_read``: False when the owning
    processes could not be named at all (the sockets are real either way).
    """

    source: str
    sockets: Tuple[SocketUse, ...] = ()
    owners_read: bool = True
    #: The ports the gather script looked at (inclusive ranges).
    ranges: Tuple[Tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class LinkState:
    """One host NIC from ``ip -o link``: its flags (``UP``, ``LOWER_UP``) and operstate."""

    ifname: str
    flags: Tuple[str, ...] = ()
    operstate: str = "UNKNOWN"

    @property
    def up(self) -> bool:
        """Administratively up with a carrier (a dummy or veth reports operstate UNKNOWN)."""
        return "UP" in self.flags and ("LOWER_UP" in self.flags or self.operstate == "UP")


@dataclass(frozen=True, slots=True)
class RouteLookup:
    """``ip route get MASTER_ADDR``: the interface (and source address) the kernel would use."""

    destination: str
    dev: Optional[str] = None
    src: Optional[str] = None
    via: Optional[str] = None
