"""The facts of an Ascend 950 (Atlas 350) NPU's Unified Bus (UB) ports, as verify reads them.

On 950 the NPU's network side is a set of UB ports per die, queried one port at a time
(``hccn_tool -g -<cmd> -i <dev> -u <udie> -p <port>``), instead of the one RoCE port per device
of the 910 generations. Source: hicann/driver ``docs/en/Ascend_950_HCCN_Tool`` (the Atlas 350
card's hccn_tool manual). Copied facts: docs/ascend950.md.

These are plain frozen dataclasses like :mod:`ascendprep.facts.model`, which holds them in
``NpuFacts.ub`` (this module imports nothing of the model, so the model can import it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

#: ``-ub_connect`` port states: ``PARTIAL UP`` is printed only when the port runs on fewer lanes.
PORT_UP, PORT_DOWN, PORT_PARTIAL_UP = "UP", "DOWN", "PARTIAL UP"
#: ``-ub_connect`` overall states: ``PARTIAL LINK`` when only some valid ports are up.
LINK_UP, LINK_DOWN, LINK_PARTIAL = "UP", "DOWN", "PARTIAL LINK"


@dataclass(frozen=True, slots=True)
class UbConnect:
    """``hccn_tool -g -ub_connect -i N``: the device's overall UB state and each valid port's.

    A single card has no valid port (overall ``DOWN``, no port lines)."""

    status: str
    ports: Dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UbDevPort:
    """One row of ``-dev_info``'s port table."""

    udie: int
    port: int
    speed_gbps: Optional[int]
    port_type: str
    link_status: str
    media: str


@dataclass(frozen=True, slots=True)
class UbInterface:
    """One netdev of ``-dev_info``'s interface table (``end0v0``, ``ipourma0``, ``bond<slot>``)."""

    name: str
    addresses: Tuple[str, ...] = ()
    netmasks: Tuple[str, ...] = ()
    bond_mode: Optional[str] = None
    slaves: Optional[str] = None


@dataclass(frozen=True, slots=True)
class UbDevInfo:
    """``hccn_tool -g -dev_info -i N``: the UB ports, the netdevs and the EIDs of the UDMA devices.

    ``eids``: every EID, normalised to 32 lower-case hex digits without colons (the form rank
    table 2.0's ``addr`` takes), in the order printed; ``eids_by_udma``: the same per ``udmaN``."""

    ports: Tuple[UbDevPort, ...] = ()
    interfaces: Tuple[UbInterface, ...] = ()
    eids: Tuple[str, ...] = ()
    eids_by_udma: Dict[str, Tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UbLinkEvent:
    """One row of ``-link_stat``'s history: ``LINK_UP``/``LINK_DOWN`` and when (newest first)."""

    state: str
    time: str


@dataclass(frozen=True, slots=True)
class UbLinkStat:
    """``-link_stat`` per port: the link-up and link-down counts and the last (at most 10) changes.

    ``current_time``: the host's local clock when the gather read it (``YYYY-MM-DDTHH:MM:SS``),
    which the flap window is measured from; the 950 answer, unlike the 910 one, prints no current
    time. None when it was not recorded."""

    up_count: int
    down_count: int
    events: Tuple[UbLinkEvent, ...] = ()
    current_time: Optional[str] = None


@dataclass(frozen=True, slots=True)
class UbCounterRead:
    """One ``-stat`` read of a port: its pass (1 early, 2 at the gather's end), the node's clock in
    seconds at the call (None when unstamped), and the counters."""

    pass_number: int
    at_s: Optional[float]
    counters: Dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UbSpeed:
    """``-speed`` per port: speed in Gbit/s (None while the link is down: ``unknown``), the lanes the
    port can use (``Cap``), the lanes it uses (``Width``), and ``normal``/``downgraded``."""

    speed_gbps: Optional[int]
    cap_lanes: int
    width_lanes: int
    status: str

    @property
    def downgraded(self) -> bool:
        return self.status == "downgraded" or self.width_lanes < self.cap_lanes


@dataclass(frozen=True, slots=True)
class UbFec:
    """``-fec`` per port: the RS mode (``128 T4``), its auto-change mode and its interleave mode."""

    rs_mode: str
    auto_change_mode: str
    itlv_mode: str


@dataclass(frozen=True, slots=True)
class UbPortInfo:
    """``-port_info`` per port: the configured lane count and the lanes trained, the link state
    machine's state and the last link-down reason code."""

    lane_num: Optional[int] = None
    cur_tx_lane_num: Optional[int] = None
    cur_rx_lane_num: Optional[int] = None
    lstm_state: Optional[str] = None
    port_link: Optional[str] = None
    link_down_err: Optional[str] = None

    @property
    def lanes_reduced(self) -> bool:
        if self.lane_num is None:
            return False
        return any(
            lanes is not None and lanes < self.lane_num for lanes in (self.cur_tx_lane_num, self.cur_rx_lane_num)
        )


@dataclass(frozen=True, slots=True)
class UbPortFacts:
    """Everything read about one UB port (die ``udie``, port ``port``)."""

    udie: int
    port: int
    speed: Optional[UbSpeed] = None
    fec: Optional[UbFec] = None
    link_stat: Optional[UbLinkStat] = None
    port_info: Optional[UbPortInfo] = None
    #: ``-stat`` reads, in the order made (two when the gather sampled), as for 910 ports.
    stat_samples: Tuple[UbCounterRead, ...] = ()


@dataclass(frozen=True, slots=True)
class SioInfo:
    """``npu-smi info -t sio-info -i N``: the die-to-die (SIO) link's error counts."""

    tx_errors: int
    rx_errors: int


@dataclass(frozen=True, slots=True)
class UbPing:
    """One ``hccn_tool -t -ub_ping`` from an EID of the device to another EID."""

    src_eid: str
    dst_eid: str
    ok: bool
    #: The NPU (logical id, same host) whose EID was the destination.
    peer: Optional[int] = None
    sent: Optional[int] = None
    received: Optional[int] = None
    loss_percent: Optional[float] = None
    avg_ms: Optional[float] = None
    error: Optional[str] = None


@dataclass(frozen=True, slots=True)
class UbFacts:
    """The UB side of one 950 NPU. ``ports`` is keyed ``"<udie>/<port>"``, the way rank table 2.0
    and the topology file write a port."""

    connect: Optional[UbConnect] = None
    dev_info: Optional[UbDevInfo] = None
    ports: Dict[str, UbPortFacts] = field(default_factory=dict)
    sio: Optional[SioInfo] = None
    #: ``-ub_ping`` from this device's first EID to each other device's on the same host.
    pings: Tuple[UbPing, ...] = ()


def port_key(udie: int, port: int) -> str:
    """``"0/4"``: how rank table 2.0 and the 950 topology file name die 0's port 4."""
    return f"{udie}/{port}"
