"""What a lab is made of, decided before anything is touched: names, addresses, versions.

Everything here is pure: given the same :class:`LabSpec` the same node names, IP addresses,
namespace and link names come out, so ``lab down`` can find what ``lab up`` made even when the
record of it was lost, and tests can check the derivations without root.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional

from ascendprep.base.limits import TOOL_LATENCY_MAX_MS
from ascendprep.inventory.products import PRODUCTS
from ascendprep.lab.sim.driver_profiles import DEFAULT_DRIVER_PROFILE, DRIVER_PROFILES
from ascendprep.lab.sim.profiles import check_chip

LAB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")
MAX_NODES = 64
#: Node i (1-based) gets host number FIRST_NODE_HOST + i in the management subnet: .11, .12, ...
FIRST_NODE_HOST = 10
DEFAULT_SUBNET = "10.231.0.0/24"
#: atlas-a3 labs: servers per super-pod unless ``--pod-servers`` says otherwise, and the most a
#: pod may hold (the driver's ``A3_SUPERPOD_MAX_NUMS``, docs/a3-superpod.md §2).
DEFAULT_POD_SERVERS = 2
POD_SERVERS_MAX = 48

DEFAULT_CANN = "8.0.RC3"
DEFAULT_DRIVER = "24.1.rc2"
DEFAULT_FIRMWARE = "7.3.0.1.231"  # what the Ascend docs name for CANN 8.0.RC3 on 910B
#: What an Ascend 950 (atlas-350) lab installs when not told: the oldest CANN and driver line the
#: Atlas 350 runs on (CANN 9.0.0 GA added the card; the 950 hccn_tool guide shows driver
#: 25.7.rc1: docs/ascend950.md#versions), so its verify is not about an old stack.
DEFAULT_CANN_950 = "9.0.0"
DEFAULT_DRIVER_950 = "25.7.rc1"
#: torch_npu metadata version when torch itself is not installed (otherwise torch's own version).
DEFAULT_TORCH_NPU = "2.13.0"
#: How a node's /etc/hosts maps its own hostname (see ascendprep/lab/hostsfile.py).
HOSTNAME_MAPPINGS = ("resolve", "loopback", "missing")


def default_torch_npu() -> str:
    """The torch_npu version the lab's metadata claims: the installed torch's, as real torch_npu
    releases track torch's version (2.5.1 for torch 2.5.1), so the lab's stack stays consistent
    whichever torch this machine has; :data:`DEFAULT_TORCH_NPU` without torch."""
    import importlib.metadata

    try:
        return importlib.metadata.version("torch").split("+", 1)[0]
    except importlib.metadata.PackageNotFoundError:
        return DEFAULT_TORCH_NPU


class LabSpecError(ValueError):
    """A lab description that cannot be built; the message names the option and the fix."""


@dataclass(frozen=True)
class Versions:
    """Software versions installed in every node (the inventory's ``software`` section).

    ``cann`` and ``driver`` left None take the product's defaults in :meth:`LabSpec.validated`
    (:func:`default_stack`): ``lab up`` and a :class:`LabSpec` built in code get the same stack.
    """

    cann: Optional[str] = None
    driver: Optional[str] = None
    firmware: str = DEFAULT_FIRMWARE
    torch_npu: str = field(default_factory=default_torch_npu)

    def cann_tree(self) -> dict[str, str]:
        """The keys ``cann.install_cann_tree`` expects (of a validated spec's versions)."""
        if self.cann is None or self.driver is None:
            raise LabSpecError(
                "the CANN and driver versions are filled by LabSpec.validated(); validate the spec first"
            )
        return {"cann": self.cann, "driver": self.driver, "firmware": self.firmware}


def default_stack(product_id: str) -> tuple[str, str]:
    """(CANN, driver) a lab of ``product_id`` installs when not told: the 950 line for an
    Ascend 950 product (the Atlas 350 needs CANN 9.0.0 and driver 25.7.rc1 or later), else the
    A2/A3 defaults."""
    product = PRODUCTS.get(product_id)
    if product is not None and product.is_950:
        return DEFAULT_CANN_950, DEFAULT_DRIVER_950
    return DEFAULT_CANN, DEFAULT_DRIVER


@dataclass(frozen=True)
class NodeSpec:
    """One simulated server: its name, where it is reached, and the links that carry it."""

    index: int
    name: str
    mgmt_ip: str
    netns: str
    veth: str
    npus: int
    #: Which driver generation the node's simulated hccn_tool/npu-smi speak (``current``/``legacy``).
    driver_profile: str = DEFAULT_DRIVER_PROFILE


@dataclass(frozen=True)
class LabSpec:
    """The arguments of ``lab up``; :meth:`validated` fills the defaults and checks them."""

    name: str = "lab"
    nodes: int = 4
    product: str = "atlas-a2"
    npus: Optional[int] = None
    subnet: str = DEFAULT_SUBNET
    versions: Versions = field(default_factory=Versions)
    #: Driver generation of every node (``--driver-profile``) ...
    driver_profile: str = DEFAULT_DRIVER_PROFILE
    #: ... and per-node exceptions, ``(("node2", "legacy"), ...)`` (``--node-driver-profile``).
    node_driver_profiles: tuple[tuple[str, str], ...] = ()
    #: The chip name npu-smi shows (``--chip 910B4``); None: the product's usual one.
    chip: Optional[str] = None
    #: Whether the nodes' sshd offers the sftp subsystem (``lab up --no-sftp``: a hardened host
    #: without it, where uploads must go through the exec channel).
    sftp: bool = True
    #: How each node's /etc/hosts maps its own name: resolve | loopback | missing (lab/hostsfile.py).
    hostnames: str = "resolve"
    #: Milliseconds every simulated hccn_tool / npu-smi call sleeps before answering
    #: (``--tool-latency-ms``): a real driver's round trip, so timings show tool calls, not CPU.
    tool_latency_ms: int = 0
    #: atlas-a3 only: servers per super-pod (``--pod-servers``), in node order: node1..K in pod 0,
    #: the next K in pod 1, ... (lab/sim/superpod.py). None: the product's default (A3: 2, so a
    #: 4-node lab is 2 pods; other products: not in pods); 0: A3 servers outside any pod.
    pod_servers: Optional[int] = None

    def validated(self) -> "LabSpec":
        """Return a copy with ``npus`` resolved; raise :class:`LabSpecError` on bad values."""
        if not LAB_NAME_RE.match(self.name):
            raise LabSpecError(
                f"--name {self.name!r}: use letters, digits, '.', '_' or '-' (up to 64, starting with a letter or digit)"
            )
        if not 1 <= self.nodes <= MAX_NODES:
            raise LabSpecError(f"--nodes {self.nodes}: a lab has 1 to {MAX_NODES} nodes")
        product = PRODUCTS.get(self.product)
        if product is None:
            raise LabSpecError(f"--product {self.product!r}: choose one of {', '.join(sorted(PRODUCTS))}")
        npus = product.default_npus if self.npus is None else self.npus
        if npus not in product.allowed_npus:
            allowed = ", ".join(str(n) for n in product.allowed_npus)
            raise LabSpecError(f"--npus {npus}: {product.id} servers have {allowed} NPUs")
        if product.id == "atlas-a3" and npus % 2:
            raise LabSpecError(f"--npus {npus}: atlas-a3 device ids come in pairs (two dies per NPU)")
        _check_subnet(self.subnet, self.nodes)
        if self.hostnames not in HOSTNAME_MAPPINGS:
            raise LabSpecError(f"--hostnames {self.hostnames!r}: choose one of {', '.join(HOSTNAME_MAPPINGS)}")
        cann, driver = default_stack(product.id)
        versions = replace(self.versions, cann=self.versions.cann or cann, driver=self.versions.driver or driver)
        for option, value in asdict(versions).items():
            if not VERSION_RE.match(value):
                raise LabSpecError(f"--{option.replace('_', '-')} {value!r} is not a version")
        self._check_driver_profiles()
        if (
            isinstance(self.tool_latency_ms, bool)
            or not isinstance(self.tool_latency_ms, int)
            or not 0 <= self.tool_latency_ms <= TOOL_LATENCY_MAX_MS
        ):
            raise LabSpecError(
                f"--tool-latency-ms {self.tool_latency_ms!r}: use 0 to {TOOL_LATENCY_MAX_MS} milliseconds"
            )
        if self.chip is not None:
            try:
                check_chip(product.id, self.chip, f"--chip {self.chip}")
            except ValueError as exc:
                raise LabSpecError(str(exc)) from None
        pod_servers = self._checked_pod_servers(product.id)
        return replace(
            self, npus=npus, subnet=str(ipaddress.IPv4Network(self.subnet)), pod_servers=pod_servers, versions=versions
        )

    def _checked_pod_servers(self, product: str) -> int:
        value = self.pod_servers
        if product != "atlas-a3":
            if value:
                raise LabSpecError(f"--pod-servers {value}: only atlas-a3 servers are in super-pods")
            return 0
        if value is None:
            return DEFAULT_POD_SERVERS
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= POD_SERVERS_MAX:
            raise LabSpecError(f"--pod-servers {value!r}: use 0 (no super-pod) to {POD_SERVERS_MAX} servers per pod")
        return value

    def super_pod_of(self, index: int) -> Optional[dict[str, int]]:
        """Node ``index``'s (1-based) pod record for the simulator, None when it is in no pod."""
        servers = self.pod_servers or 0
        if self.product != "atlas-a3" or servers <= 0:
            return None
        npus = self.npus if self.npus is not None else PRODUCTS[self.product].default_npus
        pod, position = divmod(index - 1, servers)
        return {"id": pod, "server_index": position, "size": servers * npus // 2}

    def _check_driver_profiles(self) -> None:
        known = ", ".join(DRIVER_PROFILES)
        if self.driver_profile not in DRIVER_PROFILES:
            raise LabSpecError(f"--driver-profile {self.driver_profile!r}: choose one of {known}")
        names = {f"node{i}" for i in range(1, self.nodes + 1)}
        seen: set[str] = set()
        for node, profile in self.node_driver_profiles:
            option = f"--node-driver-profile {node}={profile}"
            if node not in names:
                raise LabSpecError(f"{option}: the lab has no node {node!r} (nodes are node1 to node{self.nodes})")
            if node in seen:
                raise LabSpecError(f"{option}: {node} is given a driver profile twice")
            if profile not in DRIVER_PROFILES:
                raise LabSpecError(f"{option}: unknown driver profile {profile!r} (choose one of {known})")
            seen.add(node)

    def driver_profile_of(self, node: str) -> str:
        """The driver profile of ``node``: its own setting, else the lab's."""
        return dict(self.node_driver_profiles).get(node, self.driver_profile)

    # --- derived names (call on a validated spec) -------------------------------------------

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet)

    @property
    def bridge_ip(self) -> str:
        """The host's own address on the lab bridge (the first host of the subnet)."""
        return str(self.network.network_address + 1)

    @property
    def bridge(self) -> str:
        """Bridge name: ``apb`` + a hash of the lab name (interface names stop at 15 chars)."""
        return f"apb{short_hash(self.name)}"

    def node_list(self) -> list[NodeSpec]:
        npus = self.npus if self.npus is not None else PRODUCTS[self.product].default_npus
        base = self.network.network_address + FIRST_NODE_HOST
        return [
            NodeSpec(
                index=i,
                name=f"node{i}",
                mgmt_ip=str(base + i),
                netns=netns_name(self.name, f"node{i}"),
                veth=f"apv{short_hash(self.name)}n{i}",
                npus=npus,
                driver_profile=self.driver_profile_of(f"node{i}"),
            )
            for i in range(1, self.nodes + 1)
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LabSpec":
        pairs = tuple((str(node), str(profile)) for node, profile in data.get("node_driver_profiles", ()))
        return cls(**{**data, "versions": Versions(**data["versions"]), "node_driver_profiles": pairs})

    def differences(self, other: "LabSpec") -> list[str]:
        """Human-readable ``field: ours → theirs`` lines where two specs disagree."""
        mine, theirs = _flatten(self.to_dict()), _flatten(other.to_dict())
        return [f"{key}: {mine[key]} → {theirs[key]}" for key in mine if mine[key] != theirs.get(key)]


def netns_name(lab: str, node: str) -> str:
    return f"ascendprep-{lab}-{node}"


def netns_pattern(lab: str) -> re.Pattern[str]:
    """Matches exactly this lab's namespaces (lab ``a`` never claims lab ``a-node1``'s)."""
    return re.compile(rf"^ascendprep-{re.escape(lab)}-node[0-9]+$")


def short_hash(text: str) -> str:
    """Six hex digits that tell labs apart inside 15-character interface names."""
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def host_range(prefix: str, first: int, last: int) -> str:
    """``node[1-4]`` for a span, the plain name for a single node (the inventory's range syntax)."""
    return f"{prefix}{first}" if first == last else f"{prefix}[{first}-{last}]"


def device_pool(nodes: int, npus: int, base: str = "10.20.0.0") -> str:
    """The smallest subnet (at most /24) starting at ``base`` that holds every device IP."""
    needed = nodes * npus + 2  # plus network and broadcast addresses
    prefix = 24
    while (1 << (32 - prefix)) < needed:
        prefix -= 1
    return str(ipaddress.IPv4Network(f"{base}/{prefix}", strict=False))


def drifted_version(version: str) -> str:
    """A version that differs from ``version`` in its last number (8.0.RC3 → 8.0.RC2)."""
    match = list(re.finditer(r"\d+", version))
    if not match:
        return version + ".1"
    last = match[-1]
    number = int(last.group())
    new = number - 1 if number > 0 else number + 1
    return version[: last.start()] + str(new) + version[last.end() :]


def _check_subnet(text: str, nodes: int) -> None:
    try:
        network = ipaddress.IPv4Network(text)
    except ValueError as exc:
        raise LabSpecError(f"--subnet {text!r}: {exc} (write it like {DEFAULT_SUBNET})") from None
    if network.prefixlen > 24:
        raise LabSpecError(f"--subnet {text}: the management subnet must be a /24 or larger")
    if not network.is_private:
        raise LabSpecError(f"--subnet {text}: use a private range (10/8, 172.16/12, 192.168/16)")
    if FIRST_NODE_HOST + nodes >= network.num_addresses - 1:
        raise LabSpecError(f"--subnet {text}: too small for {nodes} nodes")


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
