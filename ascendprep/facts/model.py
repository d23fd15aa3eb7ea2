"""What ascendprep knows about one host: the parsed result of its gather script.

Facts are plain frozen dataclasses so that the pure core (plan, checks) can compare them
without touching a host, and so that a plan file can record exactly what it was computed from.
``HostFacts.to_dict()`` / ``HostFacts.from_dict()`` round-trip through JSON.

How to read a ``None``: every probe that could not determine its value records a
:class:`ProbeError` in ``HostFacts.errors``. So a ``None`` value *with* a matching error means
"unknown", and a ``None`` *without* one means "not there / not configured" (no device IP,
no gateway, file absent, tool not installed for the optional firewall tools). An error with
probe ``gather`` means the script's output was cut short or damaged: values it did not reach
are unknown even without an error of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaSerializer, core_schema

from ascendprep.base.limits import SHARED_COUNTER_LAYOUTS
from ascendprep.facts.blocker_model import LinkState, NpuProcessTable, PortSockets, RouteLookup
from ascendprep.facts.jobenv_model import JobEnv
from ascendprep.facts.ub_model import UbFacts

#: Bumped whenever a field changes meaning or disappears; readers refuse other versions.
FACTS_SCHEMA_VERSION = 1

#: Why a probe yielded no value. ``unsupported``: the tool said the command does not exist
#: on this product (hccn_tool exit 13 with "not supported"), which checks may treat as benign.
#: ``over_cap``: the tool printed more than the node-side cap (limits.REMOTE_CALL_OUTPUT_CAP).
#: (Not :data:`ascendprep.remote.errors.HOST_ERROR_KINDS`: those say why a whole host failed.)
PROBE_ERROR_KINDS = ("timeout", "error", "missing", "unsupported", "over_cap")


class FactsFormatError(ValueError):
    """A facts document that this version of ascendprep cannot read."""


@dataclass(frozen=True, slots=True)
class ProbeError:
    """One probe that could not produce its value, e.g. ``hccn.ip`` on NPU 3 timed out.

    ``npu`` is the hccn device id for ``hccn.*`` probes and the npu-smi NPU id for
    ``npu_smi.*`` probes (they differ on A3, where one NPU has two devids).
    """

    probe: str
    kind: str
    message: str
    npu: Optional[int] = None

    def __post_init__(self) -> None:
        if self.kind not in PROBE_ERROR_KINDS:
            raise ValueError(f"ProbeError kind must be one of {PROBE_ERROR_KINDS}, not {self.kind!r}")


@dataclass(frozen=True, slots=True)
class LldpNeighbor:
    """The switch port an NPU port is cabled to, from ``hccn_tool -lldp -g``."""

    system_name: Optional[str] = None
    port_ifname: Optional[str] = None
    port_id: Optional[str] = None
    chassis_id: Optional[str] = None


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """One link change from ``-link_stat -g``; ``time`` is kept in the tool's asctime() text."""

    time: str
    state: str


@dataclass(frozen=True, slots=True)
class LinkStat:
    """Link flap history. ``down_count`` is None on older drivers, which print no such line."""

    current_time: Optional[str] = None
    up_count: Optional[int] = None
    down_count: Optional[int] = None
    records: Tuple[LinkRecord, ...] = ()


class CounterValues(Mapping):
    """The counters of one ``-stat -g`` read, read-only: {name: value} as a Mapping.

    Why not a dict: a 4,096-host verify holds 65,536 of these (two per NPU when sampled) until its
    report, and a dict of ~50 counters costs ~2 KB. Here the name → position map is shared by every
    read that lists the same names in the same order (one per driver version in a fleet, at most
    :data:`~ascendprep.base.limits.SHARED_COUNTER_LAYOUTS` kept), and the values are one tuple.
    Equal to any Mapping with the same items; JSON (pydantic, facts.json) writes it as an object.
    """

    __slots__ = ("_positions", "_values")

    def __init__(self, names: Tuple[str, ...], values: Tuple[int, ...]) -> None:
        if len(names) != len(values):
            raise ValueError("counter names and values differ in number")
        self._positions = _counter_layout(names)
        if len(self._positions) != len(names):
            raise ValueError("a counter is listed twice")
        self._values = values

    @classmethod
    def of(cls, counters: Mapping) -> "CounterValues":
        return counters if isinstance(counters, CounterValues) else cls(tuple(counters), tuple(counters.values()))

    def __getitem__(self, name: str) -> int:
        return self._values[self._positions[name]]

    def get(self, name: str, default: Any = None) -> Any:
        position = self._positions.get(name)
        return default if position is None else self._values[position]

    def __contains__(self, name: object) -> bool:
        return name in self._positions

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CounterValues) and other._positions is self._positions:
            return self._values == other._values
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        as_dict = core_schema.dict_schema(core_schema.str_schema(), core_schema.int_schema())
        return core_schema.no_info_after_validator_function(
            cls.of, as_dict, serialization=core_schema.plain_serializer_function_ser_schema(dict, return_schema=as_dict)
        )


#: So that pydantic's inference (``to_jsonable_python`` of a fact) writes it as an object too.
CounterValues.__pydantic_serializer__ = SchemaSerializer(  # type: ignore[attr-defined]
    core_schema.any_schema(serialization=core_schema.plain_serializer_function_ser_schema(dict))
)

_COUNTER_LAYOUTS: Dict[Tuple[str, ...], Dict[str, int]] = {}


def _counter_layout(names: Tuple[str, ...]) -> Dict[str, int]:
    """The name → position map of ``names``: the shared one when this layout was seen before."""
    positions = _COUNTER_LAYOUTS.get(names)
    if positions is None:
        positions = {name: index for index, name in enumerate(names)}
        if len(_COUNTER_LAYOUTS) < SHARED_COUNTER_LAYOUTS and len(positions) == len(names):
            _COUNTER_LAYOUTS[names] = positions
    return positions


@dataclass(frozen=True, slots=True)
class CounterSample:
    """One read of ``hccn_tool -stat -g`` (probes/port_stats.py): which pass of the gather made it,
    the node's clock at the call in seconds (None when the script did not stamp it), the counters
    (a :class:`CounterValues` from the parser and from facts.json; any {name: value} Mapping works)."""

    pass_number: int
    at_s: Optional[float]
    counters: CounterValues = field(default_factory=dict)  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class TlsState:
    """The TLS switch of one NPU port (``-tls -g``).

    ``certificates`` is False when the tool answered "No certificate found" (exit 14); HCCL then
    runs without TLS, so :attr:`enabled` is False. ``preconfigured`` is None on older drivers.
    """

    switch: Optional[int] = None
    preconfigured: Optional[int] = None
    certificates: bool = True

    @property
    def enabled(self) -> bool:
        return self.certificates and self.switch == 1


@dataclass(frozen=True, slots=True)
class OpticalLane:
    """One lane's readings; None = the tool printed ``NA`` (or nothing) for it.

    ``lane`` is None in the older single-reading form, whose lane the tool does not name.
    Flags are decoded from the module-wide masks (bit ``lane``); None when the mask was ``NA``.
    """

    lane: Optional[int]
    tx_power_mw: Optional[float] = None
    rx_power_mw: Optional[float] = None
    tx_bias_ma: Optional[float] = None
    tx_los: Optional[bool] = None
    rx_los: Optional[bool] = None
    tx_lol: Optional[bool] = None
    rx_lol: Optional[bool] = None

    @property
    def has_readings(self) -> bool:
        return self.tx_power_mw is not None or self.rx_power_mw is not None


@dataclass(frozen=True, slots=True)
class OpticalThresholds:
    """The module's own alarm thresholds, as printed beside its readings (None = ``NA``)."""

    temp_high_c: Optional[float] = None
    temp_low_c: Optional[float] = None
    vcc_high_mv: Optional[float] = None
    vcc_low_mv: Optional[float] = None
    tx_power_high_mw: Optional[float] = None
    tx_power_low_mw: Optional[float] = None
    rx_power_high_mw: Optional[float] = None
    rx_power_low_mw: Optional[float] = None


@dataclass(frozen=True, slots=True)
class OpticalInfo:
    """Everything ``-optical -g`` said about one port's module.

    ``present_line`` is what the ``present`` line said; :attr:`present` also believes readings
    that follow a ``not present`` line. ``temperature_note`` keeps the words the tool printed
    instead of a temperature (``not supported``, ``get failed``, ``NA``). ``flags`` holds the raw
    masks (``tx_los``, ``rx_los``, ``tx_lol``, ``rx_lol``; None = ``NA`` or not printed).
    """

    present_line: bool
    temperature_c: Optional[float] = None
    temperature_note: Optional[str] = None
    vcc_mv: Optional[float] = None
    lanes: Tuple[OpticalLane, ...] = ()
    indexed: bool = True
    thresholds: OpticalThresholds = field(default_factory=OpticalThresholds)
    flags: Dict[str, Optional[int]] = field(default_factory=dict)
    vendor_name: Optional[str] = None
    part_number: Optional[str] = None
    serial_number: Optional[str] = None
    identifier: Optional[str] = None
    wavelength_nm: Optional[int] = None
    high_power_enabled: Optional[bool] = None

    @property
    def has_readings(self) -> bool:
        """Any power, Vcc or temperature reading: a module answered."""
        return (
            self.vcc_mv is not None or self.temperature_c is not None or any(lane.has_readings for lane in self.lanes)
        )

    @property
    def present(self) -> bool:
        """A module is in the cage: the tool says so, or its readings show it anyway."""
        return self.present_line or self.has_readings

    @property
    def medium(self) -> str:
        """``optical`` (powers readable), ``electrical`` (present, every power ``NA``: a copper
        or DAC port) or ``absent``."""
        if not self.present:
            return "absent"
        return "optical" if any(lane.has_readings for lane in self.lanes) else "electrical"


@dataclass(frozen=True, slots=True)
class NpuFacts:
    """Live ``hccn_tool`` values of one NPU port, keyed by its physical device id."""

    devid: int
    ip: Optional[str] = None
    netmask: Optional[str] = None
    gateway: Optional[str] = None
    gateway_iface: Optional[str] = None
    netdetect: Optional[str] = None
    link: Optional[str] = None
    net_health: Optional[str] = None
    lldp: Optional[LldpNeighbor] = None
    tls: Optional[TlsState] = None
    link_stat: Optional[LinkStat] = None
    optical_present: Optional[bool] = None
    speed_mbps: Optional[int] = None
    #: The whole ``-optical -g`` answer (lanes, flags, the module's thresholds): checks/optics.py.
    optics: Optional[OpticalInfo] = None
    #: ``-duplex -g`` (``full``/``half``; None = ``Unknown!``) and ``-fec -g`` (``rs``/``no``/``auto``).
    duplex: Optional[str] = None
    fec: Optional[str] = None
    #: ``-stat -g`` reads, in the order made (two when the gather sampled).
    stat_samples: Tuple[CounterSample, ...] = ()
    #: A3 only: the die's HCCS virtual NIC address, ``-vnic -g`` (``192.<server>.<2+die>.<199-devid>``
    #: per the driver, docs/a3-superpod.md §2); None when not read (not an A3) or not configured.
    vnic_ip: Optional[str] = None
    #: ``-lldp -g`` answered that the port's link is down (``Execute failed: Link status is
    #: down.``, exit 22, docs/ascend-reference.md §1.2): no neighbour could be asked, which is not
    #: "no neighbour" (``lldp`` is None either way).
    lldp_link_down: bool = False
    #: Ascend 950 only: the device's UB ports (``-ub_connect``, ``-dev_info``, the per-port
    #: tables, ``sio-info``; :mod:`ascendprep.facts.ub_model`); None on 910 generations.
    ub: Optional[UbFacts] = None


@dataclass(frozen=True, slots=True)
class HccnConf:
    """``/etc/hccn.conf``: ``<key>_<devid>=<value>`` lines grouped per device, plus the raw text.

    ``duplicates`` names keys that appear more than once (hand edits; hccn_tool never writes
    them); the last occurrence is kept. ``other_lines`` holds non-comment lines that are not
    of that form, so that nothing in the file goes unseen.
    """

    raw: str
    devices: Dict[int, Dict[str, str]] = field(default_factory=dict)
    duplicates: Tuple[str, ...] = ()
    other_lines: Tuple[str, ...] = ()

    def get(self, devid: int, key: str) -> Optional[str]:
        return self.devices.get(devid, {}).get(key)


@dataclass(frozen=True, slots=True)
class NpuSmiDevice:
    """One NPU listed by ``npu-smi info -l`` (A3 NPUs have two chips, i.e. two hccn devids)."""

    npu_id: int
    chip_count: int = 1
    product_name: Optional[str] = None
    serial_number: Optional[str] = None


@dataclass(frozen=True, slots=True)
class NpuSmiList:
    total_count: Optional[int] = None
    devices: Tuple[NpuSmiDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class NpuSmiChip:
    """One row of ``npu-smi info -m``: which chip an NPU id is, and on the Ascend 950 its slot.

    910/910B print ``NPU ID / Chip ID / Chip Logic ID / Chip Name`` (an ``Mcu`` row has ``-`` as
    its logic id); the 950 prints ``NPU ID / Slot ID / Chip ID / Chip Phy-ID / Chip Name``, and
    the slot names the NPU's IPv4 bond device (``bond<slot>``) and its ``/etc/hccn.conf`` keys.
    ``npu_id`` -1 is an NPU the tool marks unavailable."""

    npu_id: int
    chip_id: int
    chip_name: str
    slot_id: Optional[int] = None
    chip_phy_id: Optional[int] = None
    chip_logic_id: Optional[int] = None


#: ``A3_SUPERPOD_MAX_NUMS`` of the A3 driver: servers a super-pod holds at most.
SUPERPOD_MAX_SERVERS = 48


@dataclass(frozen=True, slots=True)
class SuperPodDie:
    """One A3 die's super-pod identity, ``npu-smi info -t spod-info -i N -c C`` (docs/a3-superpod.md §2).

    ``sdid`` is what a 1.2 rank table calls ``super_device_id`` (unique within a pod, HCCL
    EI0014 otherwise); ``super_pod_id`` the physical pod, ``server_index`` the server's slot in
    it, ``pod_size`` the pod's die count as the tool prints it (384 on a CM384 pod).
    """

    npu_id: int
    chip: int
    sdid: int
    super_pod_id: int
    server_index: int
    pod_size: int

    @property
    def devid(self) -> int:
        """The die's hccn_tool / rank-table ``device_id``: NPU id x 2 + chip (an A3 NPU has two dies)."""
        return self.npu_id * 2 + self.chip

    @property
    def in_pod(self) -> bool:
        """The driver's test (``A3_SUPERPOD_MAX_NUMS``, docs/a3-superpod.md §2): a server index of 48
        or more means the server is in no super-pod (HCCL then wants a 1.0 rank table)."""
        return self.server_index < SUPERPOD_MAX_SERVERS


@dataclass(frozen=True, slots=True)
class NpuHealth:
    """``npu-smi info -i N -c C -t health``; error fields are None when the tool says ``NA``."""

    npu_id: int
    chip: int
    health: str
    error_code: Optional[str] = None
    error_info: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.health.upper() == "OK"


@dataclass(frozen=True, slots=True)
class VersionFile:
    """A ``key=value`` version/install file of the Ascend stack (driver, firmware, CANN)."""

    path: str
    values: Dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> Optional[str]:
        """``Version=`` (driver, firmware, runtime) or ``version=`` (toolkit/nnae install info)."""
        for key in ("Version", "version"):
            if self.values.get(key):
                return self.values[key]
        return None


@dataclass(frozen=True, slots=True)
class Versions:
    """Driver, firmware and CANN version files found under the Ascend home.

    ``cann`` lists the newer ``<home>/cann`` and ``<home>/cann-<ver>`` layouts (their
    ``share/info/runtime/version.info``), in directory-name order.
    """

    driver: Optional[VersionFile] = None
    firmware: Optional[VersionFile] = None
    toolkit: Optional[VersionFile] = None
    nnae: Optional[VersionFile] = None
    cann: Tuple[VersionFile, ...] = ()

    @property
    def driver_version(self) -> Optional[str]:
        return self.driver.version if self.driver else None

    @property
    def firmware_version(self) -> Optional[str]:
        return self.firmware.version if self.firmware else None

    @property
    def cann_version(self) -> Optional[str]:
        """The CANN a training job would use: toolkit, else nnae, else the new layout.

        In the new layout ``<home>/cann`` (the unversioned link that ``cann/set_env.sh`` uses)
        wins; several ``cann-<ver>`` directories without it are ambiguous, so None.
        """
        for info in (self.toolkit, self.nnae):
            if info is not None and info.version:
                return info.version
        candidates = _unversioned_cann(self.cann) or list(self.cann)
        if len(candidates) == 1:
            return candidates[0].version
        return None


def _unversioned_cann(cann: Tuple[VersionFile, ...]) -> List[VersionFile]:
    """The entries read from ``<home>/cann`` rather than ``<home>/cann-<ver>``.

    The gather reads the same file under sibling directories, so the directory is the one path
    component in which the entries differ; this needs no knowledge of where the file lives.
    """
    parts = [info.path.split("/") for info in cann]
    if len(parts) < 2 or len({len(split) for split in parts}) != 1:
        return []
    differing = [index for index in range(len(parts[0])) if len({split[index] for split in parts}) > 1]
    if len(differing) != 1:
        return []
    return [info for info, split in zip(cann, parts) if split[differing[0]] == "cann"]


@dataclass(frozen=True, slots=True)
class SysctlFile:
    """Our persisted sysctl file: raw text and the ``key = value`` settings it holds."""

    raw: str
    values: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FirewallTool:
    """One firewall front end. ``active`` is None when its state could not be read.

    For nftables "active" means the ruleset holds at least one table; ``detail`` names them.
    """

    installed: bool
    active: Optional[bool] = None
    detail: Optional[str] = None


@dataclass(frozen=True, slots=True)
class Firewall:
    ufw: Optional[FirewallTool] = None
    firewalld: Optional[FirewallTool] = None
    nftables: Optional[FirewallTool] = None

    @property
    def any_active(self) -> bool:
        return any(tool is not None and tool.active for tool in (self.ufw, self.firewalld, self.nftables))


@dataclass(frozen=True, slots=True)
class ManagedFile:
    """A file ascendprep writes on hosts: whether it exists and its sha256 (for drift checks)."""

    path: str
    exists: bool
    sha256: Optional[str] = None


@dataclass(frozen=True, slots=True)
class PythonEnv:
    """Versions seen by one interpreter through ``importlib.metadata`` (None = not installed)."""

    interpreter: str
    python_version: Optional[str] = None
    executable: Optional[str] = None
    packages: Dict[str, Optional[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PingResult:
    """One ``hccn_tool -i N -ping -g address A`` run from this host: its replies, its loss and
    the replies' round-trip times (the tool prints one per reply and no summary of them)."""

    npu: int
    target: str
    ok: bool
    sent: Optional[int] = None
    received: Optional[int] = None
    loss_percent: Optional[float] = None
    error: Optional[str] = None
    #: Round-trip time of the replies in milliseconds, average and slowest, from the device's
    #: ``recv seq=N,time=X ms`` lines (None when no reply came back).
    average_ms: Optional[float] = None
    max_ms: Optional[float] = None


@dataclass(frozen=True, slots=True)
class HccsPingResult:
    """One ``hccn_tool -i D -hccs_ping -g address V`` run from this host (A3, the HCCS plane).

    ``npu`` is the source die's hccn device id, ``target`` the peer die's vNIC address; the
    times are the device's ``average``/``max time`` lines in microseconds (None when not printed).
    """

    npu: int
    target: str
    ok: bool
    sent: Optional[int] = None
    received: Optional[int] = None
    loss_percent: Optional[float] = None
    average_us: Optional[float] = None
    max_us: Optional[float] = None
    error: Optional[str] = None


@dataclass(frozen=True, slots=True)
class InterfaceAddress:
    """One address of a host NIC, from ``ip -o addr``: which interface holds which address.

    The all-reduce and ``set_env.sh`` bind gloo/NCCL/HCCL to the interface that holds the
    node's inventory address, so their sockets do not follow a hostname to loopback.
    """

    ifname: str
    family: str  # "inet" or "inet6"
    address: str
    prefixlen: int


@dataclass(frozen=True)
class HostFacts:
    """Everything one gather run learned about a host. See the module docstring for ``None``.

    (One per host, so it keeps its ``__dict__``; the many small facts inside it have
    ``__slots__``: a 4,096-host verify holds ~150 of them per host until its report.)"""

    hostname: Optional[str] = None
    os_release: Dict[str, str] = field(default_factory=dict)
    arch: Optional[str] = None
    ascend_home: Optional[str] = None
    hccn_tool: Optional[str] = None
    npu_smi_tool: Optional[str] = None
    npus: Dict[int, NpuFacts] = field(default_factory=dict)
    hccn_conf: Optional[HccnConf] = None
    npu_smi: Optional[NpuSmiList] = None
    #: ``npu-smi info -m`` (read on Ascend 950 inventories, for the NPUs' slots); None when not read.
    npu_chips: Optional[Tuple[NpuSmiChip, ...]] = None
    #: PCI device ids of the Huawei NPUs in the host (``d802``, ``d806``; sysfs), None when not read.
    npu_pci_ids: Optional[Tuple[str, ...]] = None
    npu_health: Tuple[NpuHealth, ...] = ()
    #: A3 only: hccn device id (NPU id x 2 + chip) → the die's super-pod identity (spod-info);
    #: empty when the NPUs have one chip, or when it could not be read (then with an error).
    superpod: Dict[int, SuperPodDie] = field(default_factory=dict)
    #: npu-smi NPU id → ``Firmware Version`` of ``npu-smi info -t board -i N`` (None = ``NA``).
    npu_firmware: Dict[int, Optional[str]] = field(default_factory=dict)
    sysctl: Dict[str, str] = field(default_factory=dict)
    sysctl_file: Optional[SysctlFile] = None
    firewall: Firewall = field(default_factory=Firewall)
    managed_files: Dict[str, ManagedFile] = field(default_factory=dict)
    #: The variables the node's env.sh exports (name → value as sh reads it), for the plan's words
    #: about an env.sh change; None when the file is absent or was not read.
    env_sh: Optional[Dict[str, str]] = None
    versions: Versions = field(default_factory=Versions)
    python: Optional[PythonEnv] = None
    #: Every address of every interface (``ip -o addr``), in the order the kernel lists them.
    addresses: Tuple[InterfaceAddress, ...] = ()
    #: What the node's own hostname resolves to there (``getent ahosts``, i.e. getaddrinfo, as
    #: gloo and NCCL look it up); ``()`` when it does not resolve, None when not read.
    hostname_addresses: Optional[Tuple[str, ...]] = None
    #: The job's environment as HCCL jobs meet it (probes/jobenv.py); None when not read.
    job: Optional[JobEnv] = None
    #: What stops a job from starting (:mod:`ascendprep.facts.blocker_model`): the process table
    #: of ``npu-smi info``, sockets on the HCCL/master ports, NIC states, the route to the master.
    npu_processes: Optional[NpuProcessTable] = None
    port_sockets: Optional[PortSockets] = None
    links: Optional[Tuple[LinkState, ...]] = None
    route_to_master: Optional[RouteLookup] = None
    #: What the master's name (an inventory naming it by hostname) resolves to on this node
    #: (``getent ahostsv4``, getaddrinfo's order: the first is the one used); ``()`` when it does
    #: not resolve, None when not looked up (the master given by address, or older facts).
    master_addresses: Optional[Tuple[str, ...]] = None
    errors: Tuple[ProbeError, ...] = ()

    @property
    def os_id(self) -> Optional[str]:
        return self.os_release.get("ID")

    def errors_for(self, probe: str, npu: Optional[int] = None) -> Tuple[ProbeError, ...]:
        """Errors of one probe (on one NPU when given); a probe name prefix such as ``hccn.`` works too."""
        if not self.errors:  # most hosts: the checks ask ~125 times per host
            return ()
        return tuple(
            error
            for error in self.errors
            if (error.probe == probe or (probe.endswith(".") and error.probe.startswith(probe)))
            and (npu is None or error.npu == npu)
        )

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict carrying ``schema_version``."""
        return {"schema_version": FACTS_SCHEMA_VERSION, **_host_facts_adapter().dump_python(self, mode="json")}

    def to_json(self) -> bytes:
        """:meth:`to_dict` as compact UTF-8 JSON, by pydantic's own encoder rather than
        ``json.dumps(to_dict())``: a verify bundle writes it once per host."""
        return b'{"schema_version":%d,' % FACTS_SCHEMA_VERSION + _host_facts_adapter().dump_json(self)[1:]

    @classmethod
    def from_dict(cls, data: Any) -> "HostFacts":
        """Read what :meth:`to_dict` wrote; a wrong version or shape raises :class:`FactsFormatError`."""
        if not isinstance(data, dict):
            raise FactsFormatError(f"host facts must be a JSON object, not {type(data).__name__}")
        body = dict(data)
        version = body.pop("schema_version", None)
        if version != FACTS_SCHEMA_VERSION:
            raise FactsFormatError(
                f"host facts have schema_version {version!r}; this ascendprep reads version {FACTS_SCHEMA_VERSION}"
                " (gather the facts again)"
            )
        try:
            return _host_facts_adapter().validate_python(body)
        except ValidationError as exc:
            raise FactsFormatError(f"invalid host facts: {exc}") from None


@functools.lru_cache(maxsize=None)
def _host_facts_adapter() -> "TypeAdapter[HostFacts]":
    """pydantic's reader and writer of HostFacts, built on first use rather than at import: a
    verify whose hosts all pass writes no facts.json and reads none."""
    return TypeAdapter(HostFacts)
