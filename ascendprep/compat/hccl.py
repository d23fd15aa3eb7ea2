"""Which host ports HCCL binds for root-info collection, so they can be reserved.

HCCL listens on a block of host ports starting at ``HCCL_IF_BASE_PORT`` (default 60000) while a
communicator is created from root info. If the kernel hands one of them out as an ephemeral
port first, the bind fails (``EI0019 ... listen on ip[...] port[60000] fail``), so the block goes
into ``net.ipv4.ip_local_reserved_ports``.

How wide the block is depends on the CANN generation, and the sources do not pin the boundary:

* 16 ports (60000-60015): the Ascend Extension for PyTorch 6.0.RC2 / CANN 8.0.RC2 multi-node
  guide (seed 002: ``sysctl -w net.ipv4.ip_local_reserved_ports=60000-60015``); the Ascend/pytorch
  docs up to the v2.7.1-26.0.0 branch ("reserve the 16 ports starting at the base port"); the
  CANN 8.5.0.alpha002 HCCL guide's troubleshooting section; and the documented base-port range
  [1024, 65520], whose top is exactly 65535 - 15.
* 32 ports (60000-60031): the HCCL_IF_BASE_PORT page of the open-sourced HCCL (hicann/hccl,
  docs/ascend-reference.md §5.2), which documents the CANN 8.5+/9.x generation.

No source says in which release the block grew. The conservative answer is the wider one: every
CANN from the 8.5 line on (including its alphas and betas, where the documents disagree) and any
unknown or unreadable CANN gets 32 ports; only CANN before 8.5, which every source seen
describes with 16, gets 16. Reserving more than needed costs 16 ephemeral ports; reserving too
few costs a failed job.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

from ascendprep.compat.versions import Version, VersionError, parse_version

DEFAULT_BASE_PORT = 60000
NARROW_PORT_COUNT = 16
WIDE_PORT_COUNT = 32
# First CANN line documented with the 32-port block (see module docstring).
WIDE_FROM_LINE = (8, 5)
# HCCL_IF_BASE_PORT's documented value range.
BASE_PORT_MIN = 1024
BASE_PORT_MAX = 65520
_PORT_MAX = 65535


def hccl_port_count(cann_version: Union[str, Version, None]) -> int:
    """16 for CANN before 8.5, else 32 (also for None or an unreadable version)."""
    if cann_version is None:
        return WIDE_PORT_COUNT
    try:
        cann = cann_version if isinstance(cann_version, Version) else parse_version("cann", cann_version)
    except VersionError:
        return WIDE_PORT_COUNT
    if cann.kind != "cann":
        raise ValueError(f"hccl_port_count needs a CANN version, got a {cann.kind} version ({cann})")
    return NARROW_PORT_COUNT if cann.line < WIDE_FROM_LINE else WIDE_PORT_COUNT


def hccl_port_range(cann_version: Union[str, Version, None], base_port: Optional[int] = None) -> Tuple[int, int]:
    """Inclusive (lo, hi) host port range HCCL uses: (60000, 60015) or (60000, 60031).

    ``base_port`` is HCCL_IF_BASE_PORT when set (1024..65520). With the 32-port block a base
    above 65504 would run past port 65535; that is refused rather than silently truncated.
    """
    base = DEFAULT_BASE_PORT if base_port is None else base_port
    if isinstance(base, bool) or not isinstance(base, int) or not BASE_PORT_MIN <= base <= BASE_PORT_MAX:
        raise ValueError(
            f"HCCL_IF_BASE_PORT must be an integer in [{BASE_PORT_MIN}, {BASE_PORT_MAX}], got {base_port!r}"
        )
    count = hccl_port_count(cann_version)
    high = base + count - 1
    if high > _PORT_MAX:
        raise ValueError(
            f"HCCL_IF_BASE_PORT {base} leaves room for {_PORT_MAX - base + 1} ports, HCCL needs {count}; "
            f"use a base port of at most {_PORT_MAX - count + 1}"
        )
    return base, high
