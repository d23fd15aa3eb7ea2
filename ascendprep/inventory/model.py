"""The inventory: one YAML file that describes a cluster, validated with located errors.

``load_inventory(path)`` returns an :class:`Inventory` whose ``nodes`` are expanded from host
ranges, or raises :class:`~ascendprep.base.yamlsource.InputError` listing every problem as
``file:line: field.path: message``. Everything that will later be sent into a remote shell
(host names, user names, paths, env values, sysctl values) is validated here, at load time.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ascendprep.base import hostrange
from ascendprep.inventory.groups import FLAT, AddressGroup, form_of, resolve_groups
from ascendprep.inventory import ranktable_rules, superpods as superpod_rules
from ascendprep.inventory import sysctl as sysctl_rules
from ascendprep.inventory.products import A3_SUPERPOD_MAX_SERVERS, PRODUCTS, Product
from ascendprep.base.yamlsource import InputError, Located, YamlDocument, format_path, load_yaml_file, parse_yaml

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
HOSTNAME_LABEL_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ABS_PATH_RE = re.compile(r"^/[A-Za-z0-9._/+-]*$")
IFNAME_SPEC_RE = re.compile(r"^\^?=?[A-Za-z0-9_.:-]+(,\^?=?[A-Za-z0-9_.:-]+)*$")
VERSION_TEXT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")


def check_host(text: str) -> str:
    """Accept an IPv4 address or an RFC 1123 host name; anything else is an error."""
    if re.fullmatch(r"[0-9.]+", text):
        try:
            ipaddress.IPv4Address(text)
        except ValueError:
            raise ValueError(f"'{text}' is not an IPv4 address or hostname") from None
        return text
    labels = text.rstrip(".").split(".")
    if len(text) > 253 or not all(HOSTNAME_LABEL_RE.match(label) for label in labels):
        raise ValueError(f"'{text}' is not an IPv4 address or hostname")
    return text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class DeviceGroup(_Strict):
    """One entry of ``device_network.groups``: nodes (by name range or labels) with their own
    device subnets and gateways, one per rail (A2) or plane (Atlas 800: 4, A3: 2)."""

    name: Optional[str] = None
    nodes: Union[str, List[str], None] = None
    match: Optional[Dict[str, str]] = None
    subnet: Optional[ipaddress.IPv4Network] = None
    subnets: Optional[List[ipaddress.IPv4Network]] = Field(None, min_length=1)
    gateway: Optional[ipaddress.IPv4Address] = None
    gateways: Optional[List[ipaddress.IPv4Address]] = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not NAME_RE.match(value):
            raise ValueError(f"'{value}' is not a valid group name (letters, digits, '.', '_', '-')")
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: Union[str, List[str], None]) -> Union[str, List[str], None]:
        for pattern in [value] if isinstance(value, str) else (value or []):
            for name in _expand(pattern):
                if not NAME_RE.match(name):
                    raise ValueError(f"'{name}' is not a valid node name (letters, digits, '.', '_', '-')")
        return value

    @field_validator("match")
    @classmethod
    def _match(cls, value: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        if value is not None and not value:
            raise ValueError("match needs at least one label, such as {leaf: l01}")
        return value


class GroupRule(_Strict):
    """``device_network.rule``: one supernet cut into one /prefix per group per rail (or plane);
    the groups are the values of the node label ``by`` (rack, leaf, pod, …)."""

    supernet: ipaddress.IPv4Network
    by: str
    prefix: int = Field(ge=8, le=30)
    rails: Optional[int] = Field(None, ge=1, le=16)
    gateway: Literal["first", "last", "none"] = "first"

    @field_validator("by")
    @classmethod
    def _by(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"'{value}' is not a label name such as rack, leaf or pod")
        return value


class DeviceNetwork(_Strict):
    """The NPUs' RoCE network: where device IPs come from and how NPUs detect their health.

    Three forms: flat (``subnet(s)``/``gateway(s)`` for the whole cluster), explicit ``groups``,
    or a ``rule`` that expands a supernet per label value (see :mod:`ascendprep.inventory.groups`).
    """

    subnet: Optional[ipaddress.IPv4Network] = None
    subnets: Optional[List[ipaddress.IPv4Network]] = None
    gateway: Optional[ipaddress.IPv4Address] = None
    gateways: Optional[List[ipaddress.IPv4Address]] = None
    groups: Optional[List[DeviceGroup]] = Field(None, min_length=1)
    rule: Optional[GroupRule] = None
    detect: Optional[Literal["gateway", "peer", "explicit"]] = None
    layout: Literal["auto", "conventional", "dense"] = "auto"
    tls: Optional[bool] = None


class Ssh(_Strict):
    """How to reach the nodes."""

    user: str = "root"
    port: int = Field(22, ge=1, le=65535)
    key: Optional[str] = None
    known_hosts: Union[str, List[str], None] = None
    jump_host: Optional[str] = None
    forks: int = Field(64, ge=1, le=1024)
    connect_timeout: float = Field(10, gt=0, le=600)
    command_timeout: float = Field(300, gt=0, le=86400)
    sudo: bool = False

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        if not USER_RE.match(value):
            raise ValueError(f"'{value}' is not a valid user name")
        return value

    @field_validator("jump_host")
    @classmethod
    def _jump(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return None
        parse_jump_host(value)
        return value


def parse_jump_host(text: str) -> tuple[Optional[str], str, int]:
    """``[user@]host[:port]`` → (user, host, port); raises ValueError with a readable message."""
    match = re.fullmatch(r"(?:([^@:\s]+)@)?([^@:\s]+)(?::(\d+))?", text)
    if not match:
        raise ValueError(f"'{text}' is not of the form [user@]host[:port]")
    user, host, port = match.group(1), match.group(2), match.group(3)
    if user is not None and not USER_RE.match(user):
        raise ValueError(f"'{user}' is not a valid user name")
    check_host(host)
    port_number = int(port) if port else 22
    if not 1 <= port_number <= 65535:
        raise ValueError(f"port {port_number} is out of range 1-65535")
    return user, host, port_number


class Cabling(_Strict):
    """The switch and port an NPU's cable should end at (checked against LLDP)."""

    switch: str
    port: str


class NodeEntry(_Strict):
    """One entry of ``nodes:``; ``name`` and ``host`` may be ranges such as ``node[01-64]``."""

    host: str
    name: Optional[str] = None
    port: Optional[int] = Field(None, ge=1, le=65535)
    user: Optional[str] = None
    npus: Optional[int] = Field(None, ge=1, le=16)
    labels: Dict[str, str] = Field(default_factory=dict)
    device_ips: Dict[int, ipaddress.IPv4Address] = Field(default_factory=dict)
    detect_ips: Dict[int, ipaddress.IPv4Address] = Field(default_factory=dict)
    cabling: Dict[int, Cabling] = Field(default_factory=dict)
    #: A3 only: the physical ``Super Pod ID`` (``npu-smi info -t spod-info``) of these servers.
    super_pod: Optional[int] = Field(None, ge=0, le=2**31 - 1)
    #: A3 only: the ``Server Index`` in the pod of the first server of this entry (the next ones
    #: count up); defaults to the server's position among its pod's servers in this file.
    server_index: Optional[int] = Field(None, ge=0, le=A3_SUPERPOD_MAX_SERVERS - 1)
    #: A3 only: a logical super-pod (a split of the physical one) these servers belong to.
    logical_super_pod: Optional[str] = None

    @field_validator("logical_super_pod")
    @classmethod
    def _logical(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not NAME_RE.match(value):
            raise ValueError(f"'{value}' is not a valid logical super-pod name (letters, digits, '.', '_', '-'; up to 64)")
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        for host in _expand(value):
            check_host(host)
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return None
        for name in _expand(value):
            if not NAME_RE.match(name):
                raise ValueError(f"'{name}' is not a valid node name (letters, digits, '.', '_', '-')")
        return value

    @field_validator("user")
    @classmethod
    def _user(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not USER_RE.match(value):
            raise ValueError(f"'{value}' is not a valid user name")
        return value


class Software(_Strict):
    """The versions every node is expected to run, and the interpreter to use there."""

    cann: Optional[str] = None
    driver: Optional[str] = None
    firmware: Optional[str] = None
    torch: Optional[str] = None
    torch_npu: Optional[str] = None
    torchvision: Optional[str] = None
    python: Optional[str] = None
    python_path: str = "/usr/bin/python3"

    @field_validator("cann", "driver", "firmware", "torch", "torch_npu", "torchvision", "python", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (int, float)):
            raise ValueError(f"{value!r} must be quoted: YAML reads it as a number (write \"{value}\")")
        if not isinstance(value, str) or not VERSION_TEXT_RE.match(value):
            raise ValueError(f"{value!r} is not a version")
        return value

    @field_validator("python_path")
    @classmethod
    def _python_path(cls, value: str) -> str:
        if not ABS_PATH_RE.match(value):
            raise ValueError(f"'{value}' is not an absolute path of safe characters")
        return value


class Training(_Strict):
    """Where the training job's rendezvous lives and which host NIC HCCL uses."""

    master: Optional[str] = None
    master_port: int = Field(29500, ge=1024, le=65535)
    socket_ifname: Optional[str] = None
    #: Launch from a rank table: set_env.sh exports RANK_TABLE_FILE (the table is written either way).
    rank_table: bool = False

    @field_validator("socket_ifname")
    @classmethod
    def _ifname(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not IFNAME_SPEC_RE.match(value):
            raise ValueError(f"'{value}' is not a HCCL_SOCKET_IFNAME value such as eth0, =eth0 or ^docker")
        return value


class InventoryModel(_Strict):
    """The inventory file as written (before host ranges are expanded)."""

    name: str
    product: Literal["atlas-800", "atlas-a2", "atlas-a3"]
    npus_per_node: Optional[int] = Field(None, ge=1, le=16)
    device_network: DeviceNetwork = Field(default_factory=DeviceNetwork)
    ssh: Ssh = Field(default_factory=Ssh)
    nodes: List[NodeEntry] = Field(min_length=1)
    sysctl: Dict[str, Union[int, str]] = Field(default_factory=dict)
    #: sysctl keys outside the allow-list (net.core/ipv4/ipv6) that the operator sets on purpose.
    sysctl_opt_in: List[str] = Field(default_factory=list)
    firewall: Literal["disable", "check", "leave"] = "check"
    software: Software = Field(default_factory=Software)
    env: Dict[str, str] = Field(default_factory=dict)
    #: env variables outside the shapes HCCL, CANN and torch_npu read that the operator exports on purpose.
    env_opt_in: List[str] = Field(default_factory=list)
    training: Training = Field(default_factory=Training)
    #: Grey-failure thresholds by name (data/grey_thresholds.yaml lists the names and defaults).
    thresholds: Dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"'{value}' is not a valid cluster name (letters, digits, '.', '_', '-'; up to 64)")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: Dict[str, str]) -> Dict[str, str]:
        for key, setting in value.items():
            if not ENV_KEY_RE.match(key):
                raise ValueError(f"'{key}' is not an environment variable name")
            if "\n" in setting or "\x00" in setting:
                raise ValueError(f"{key}: a value cannot contain a newline or NUL")
        return value


def _expand(pattern: str) -> list[str]:
    try:
        return hostrange.expand(pattern)
    except hostrange.HostRangeError as exc:
        raise ValueError(str(exc)) from None


# --------------------------------------------------------------------------------------------
# The loaded inventory: nodes expanded, paths resolved, cross-field rules checked.


@dataclass(frozen=True)
class Node:
    """One server of the cluster, after range expansion."""

    index: int
    name: str
    host: str
    port: int
    user: str
    npus: int
    labels: dict[str, str]
    device_ips: dict[int, ipaddress.IPv4Address]
    detect_ips: dict[int, ipaddress.IPv4Address]
    cabling: dict[int, Cabling]
    #: Index of the ``nodes:`` entry this node came from, for error messages.
    entry: int
    #: A3 super-pod membership (None outside a super-pod): the physical pod, the server's index
    #: in it (defaults filled in at load), and the logical pod it is split into, if any.
    super_pod: Optional[int] = None
    server_index: Optional[int] = None
    logical_super_pod: Optional[str] = None

    @property
    def pod_key(self) -> Optional[str]:
        """The (logical) super-pod this server is in, as the rank table's ``super_pod_id``."""
        if self.super_pod is None:
            return None
        return self.logical_super_pod if self.logical_super_pod is not None else str(self.super_pod)


@dataclass(frozen=True)
class Inventory:
    """A validated inventory: the model as written plus the expanded nodes and resolved paths."""

    source: str
    model: InventoryModel
    product: Product
    npus_per_node: int
    nodes: tuple[Node, ...]
    key_file: Optional[Path]
    known_hosts: tuple[Path, ...]
    #: Lines of fields in the source, so later rule checks can still point at a line.
    document: YamlDocument = field(repr=False, compare=False)
    #: The address groups (one for the flat form) and, per ``Node.index``, its group's index.
    address_groups: tuple[AddressGroup, ...] = ()
    group_of: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def master(self) -> Node:
        wanted = self.model.training.master
        if wanted is None:
            return self.nodes[0]
        return next(node for node in self.nodes if node.name == wanted)

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Optional[type[BaseModel]]:
    """The pydantic model that owns the last key of ``loc`` (for "did you mean")."""
    current: Any = model
    skip_key = False
    for part in loc[:-1]:
        if isinstance(part, int) or skip_key:
            skip_key = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(part)
        if info is None:
            return None
        skip_key = _is_mapping(info.annotation)
        current = _unwrap(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    """Strip Optional/List/Dict down to the model inside, if any."""
    for _ in range(4):
        origin = get_origin(annotation)
        if origin is None:
            return annotation
        args = [a for a in get_args(annotation) if a is not type(None)]
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            return models[0]
        annotation = args[-1] if args else annotation
    return annotation


def _is_mapping(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Union:
        return any(_is_mapping(a) for a in get_args(annotation))
    return origin is dict


def _pydantic_problems(doc: YamlDocument, exc: ValidationError) -> list[Located]:
    problems = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        kind = error["type"]
        value = error.get("input")
        if kind == "extra_forbidden":
            owner = _model_at(InventoryModel, loc)
            known = list(owner.model_fields) if owner else []
            key = str(loc[-1])
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else (f" (known keys: {', '.join(known)})" if known else "")
            message = f"unknown key '{key}'{hint}"
        elif kind == "missing":
            message = "required key is missing"
        elif kind == "value_error":
            message = error["msg"].removeprefix("Value error, ")
        elif isinstance(value, (str, int, float, bool)) or value is None:
            message = f"{value!r}: {error['msg']}"
        else:
            message = error["msg"]
        problems.append(doc.problem(loc, message))
    return problems


def _resolve(base: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path)


def _expand_nodes(doc: YamlDocument, model: InventoryModel, default_npus: int, product: Product) -> tuple[list[Node], list[Located]]:
    nodes: list[Node] = []
    problems: list[Located] = []
    for entry_index, entry in enumerate(model.nodes):
        where = ("nodes", entry_index)
        hosts = hostrange.expand(entry.host)
        names = hostrange.expand(entry.name) if entry.name else [h.split(".")[0] if not re.fullmatch(r"[0-9.]+", h) else h for h in hosts]
        if len(names) != len(hosts):
            problems.append(doc.problem(where + ("name",), f"expands to {len(names)} names but host expands to {len(hosts)} hosts"))
            continue
        npus = entry.npus or default_npus
        if npus not in product.allowed_npus:
            path = where + ("npus",) if entry.npus else ("npus_per_node",)
            problems.append(doc.problem(path, f"{product.title} takes {_allowed(product)} NPUs per node, not {npus}"))
        per_node = {"device_ips": entry.device_ips, "detect_ips": entry.detect_ips, "cabling": entry.cabling}
        for key, mapping in per_node.items():
            if mapping and len(hosts) > 1:
                problems.append(doc.problem(where + (key,), f"per-NPU {key} need an entry of its own (this one expands to {len(hosts)} nodes)"))
            for npu in mapping:
                if not 0 <= npu < npus:
                    problems.append(doc.problem(where + (key, str(npu)), f"NPU {npu} does not exist on a node with {npus} NPUs"))
        for offset, (name, host) in enumerate(zip(names, hosts)):
            nodes.append(
                Node(
                    index=len(nodes),
                    name=name,
                    host=host,
                    port=entry.port or model.ssh.port,
                    user=entry.user or model.ssh.user,
                    npus=npus,
                    labels=dict(entry.labels),
                    device_ips=dict(entry.device_ips),
                    detect_ips=dict(entry.detect_ips),
                    cabling=dict(entry.cabling),
                    entry=entry_index,
                    super_pod=entry.super_pod,
                    server_index=None if entry.server_index is None else entry.server_index + offset,
                    logical_super_pod=entry.logical_super_pod,
                )
            )
    return nodes, problems


def _allowed(product: Product) -> str:
    values = product.allowed_npus
    if values == tuple(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return ", ".join(str(v) for v in values)


def _cross_checks(doc: YamlDocument, model: InventoryModel, nodes: list[Node], product: Product) -> list[Located]:
    problems: list[Located] = []
    seen_names: dict[str, Node] = {}
    seen_hosts: dict[tuple[str, int], Node] = {}
    for node in nodes:
        if node.name in seen_names:
            problems.append(doc.problem(("nodes", node.entry, "name"), f"node name '{node.name}' is used twice (also nodes[{seen_names[node.name].entry}])"))
        seen_names.setdefault(node.name, node)
        key = (node.host, node.port)
        if key in seen_hosts:
            problems.append(doc.problem(("nodes", node.entry, "host"), f"host '{node.host}' is listed twice (also nodes[{seen_hosts[key].entry}])"))
        seen_hosts.setdefault(key, node)
    master = model.training.master
    if master is not None and master not in seen_names:
        close = difflib.get_close_matches(master, list(seen_names), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        problems.append(doc.problem(("training", "master"), f"'{master}' is not a node of this inventory{hint}"))
    net = model.device_network
    if net.layout == "conventional" and product.id != "atlas-800":
        problems.append(doc.problem(("device_network", "layout"), "the conventional layout exists only for atlas-800"))
    if form_of(net) != FLAT:
        if net.detect == "explicit":
            problems.extend(_explicit_detect_problems(doc, nodes))
        return problems
    if net.subnet is not None and net.subnets is not None:
        problems.append(doc.problem(("device_network", "subnets"), "give either subnet or subnets, not both"))
    if net.gateway is not None and net.gateways is not None:
        problems.append(doc.problem(("device_network", "gateways"), "give either gateway or gateways, not both"))
    subnet_count = len(net.subnets) if net.subnets else (1 if net.subnet else 0)
    if product.planes and subnet_count not in (0, product.planes):
        problems.append(doc.problem(("device_network", "subnets"), f"{product.title} needs exactly {product.planes} subnets (one per plane), got {subnet_count}"))
    if product.id != "atlas-800" and subnet_count == 0:
        problems.append(doc.problem(("device_network",), f"{product.title} needs device_network.subnet (or subnets): there is no conventional default"))
    if net.gateways is not None and subnet_count and len(net.gateways) != subnet_count:
        problems.append(doc.problem(("device_network", "gateways"), f"one gateway per subnet: {subnet_count} subnets but {len(net.gateways)} gateways"))
    if net.detect == "gateway" and net.gateway is None and net.gateways is None:
        problems.append(doc.problem(("device_network", "detect"), "detect: gateway needs device_network.gateway (or gateways)"))
    if net.detect == "explicit":
        problems.extend(_explicit_detect_problems(doc, nodes))
    return problems


def _explicit_detect_problems(doc: YamlDocument, nodes: list[Node]) -> list[Located]:
    problems = []
    for node in nodes:
        missing = [npu for npu in range(node.npus) if npu not in node.detect_ips]
        if missing:
            problems.append(doc.problem(("nodes", node.entry, "detect_ips"), f"detect: explicit needs a detect IP for every NPU; {node.name} lacks NPU {', '.join(map(str, missing))}"))
    return problems


def _sysctl_problems(doc: YamlDocument, model: InventoryModel) -> list[Located]:
    """Keys outside the allow-list without opt-in, and values unfit for a root shell (sysctl.py)."""
    problems = []
    for key, value in model.sysctl.items():
        problem = sysctl_rules.key_problem(key, model.sysctl_opt_in) or sysctl_rules.value_problem(key, value)
        if problem is None and key == sysctl_rules.RESERVED_PORTS:
            try:
                sysctl_rules.parse_port_ranges(str(value))
            except sysctl_rules.PortRangeError as exc:
                problem = f"{key}: {exc}"
        if problem:
            problems.append(doc.problem(("sysctl", key), problem))
    for index, key in enumerate(model.sysctl_opt_in):
        problem = sysctl_rules.opt_in_problem(key, model.sysctl)
        if problem:
            problems.append(doc.problem(("sysctl_opt_in", index), problem))
    return problems


# --------------------------------------------------------------------------------------------
# Which variables an inventory may export.
#
# env.sh is sourced (through set_env.sh) by every training shell and by verify's own probes, as
# the SSH user (root by default): the launch shell, ``import torch_npu`` and the all-reduce's
# torchrun. A variable there reaches every program those shells start. As sysctl.py does for
# kernel keys: the shapes HCCL, CANN and torch_npu read are allowed, anything else needs the
# inventory's ``env_opt_in``, and variables that make a shell, the dynamic loader or an
# interpreter run other code are refused outright.

#: Families HCCL, CANN and torch_npu read (docs/ascend-reference.md §5.2, docs/a3-superpod.md §3):
#: allowed without more.
ENV_ALLOWED_PREFIXES = ("HCCL_", "ASCEND_", "TORCH_", "NPU_", "PYTORCH_NPU_")

#: Variables outside those families that the reference names for Ascend training: the rendezvous
#: (torchrun), the rank table and its companions (§6), ModelZoo's env_npu.sh (§5.2), and the host
#: NIC of gloo and NCCL (set_env.sh binds them).
ENV_REFERENCED = frozenset({
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NNODES", "NODE_RANK",
    "NPROC_PER_NODE", "RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "MINDSPORE_HCCL_CONFIG_PATH",
    "TASK_QUEUE_ENABLE", "COMBINED_ENABLE", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "OMP_NUM_THREADS",
})

#: Within the allowed families, where CANN loads its own code from (§5.1: CANN's set_env.sh, which
#: env.sh sources first, exports them). Another value makes every shell that sources env.sh, root's
#: probes included, load operators and kernels from elsewhere: an opt-in, not a default.
ENV_CODE_LOCATIONS = frozenset({"ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "ASCEND_CUSTOM_OPP_PATH"})

_LOADER = "makes the dynamic loader load other code into every program started after env.sh (root's probes included)"
_SHELL = "makes the shell that sources env.sh run other code or other programs"
_GLIBC = "makes glibc load other modules or files (glibc ignores it in set-uid programs for that reason)"
_PYTHON = "makes Python import other code (verify imports torch_npu under env.sh, as root by default)"

#: Prefixes never exported, not even with opt-in, and why.
ENV_DENIED_PREFIXES: dict[str, str] = {
    "LD_": _LOADER,
    "PYTHON": _PYTHON,
    "ASCENDPREP_": "is ascendprep's own control, not the job's",
}

#: Variables never exported, not even with opt-in, and why: the shell's own hooks and search path,
#: glibc's list of variables it ignores in set-uid programs because they load code or files
#: (``UNSECURE_ENVVARS``), and interpreters' and libraries' module paths.
ENV_DENIED: dict[str, str] = {
    **{name: _SHELL for name in ("PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE")},
    "HOME": "moves the home of the user verify's probes run as (root by default): its profile and Python's user site-packages, whose code they import",
    **{name: _GLIBC for name in ("GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE", "NIS_PATH",
                                  "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR")},
    **{name: "makes OpenSSL load other engines and providers (code)" for name in ("OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES")},
    **{name: "makes another interpreter load other code" for name in ("PERL5LIB", "PERLLIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS", "LESSOPEN", "LESSCLOSE")},
}


def env_denied(name: str) -> Optional[str]:
    """Why ``name`` is never exported, or None."""
    if name in ENV_DENIED:
        return ENV_DENIED[name]
    return next((why for prefix, why in ENV_DENIED_PREFIXES.items() if name.startswith(prefix)), None)


def is_allowed_variable(name: str) -> bool:
    """True for variables an inventory may export without opting in."""
    if name in ENV_CODE_LOCATIONS or env_denied(name) is not None:
        return False
    return name.startswith(ENV_ALLOWED_PREFIXES) or name in ENV_REFERENCED


def variable_problem(name: str, opt_in: Iterable[str]) -> Optional[str]:
    """Why the inventory's ``env:`` may not export ``name``, or None."""
    denied = env_denied(name)
    if denied is not None:
        return f"{name} {denied}; ascendprep never exports it, not even with env_opt_in"
    if is_allowed_variable(name) or name in set(opt_in):
        return None
    if name in ENV_CODE_LOCATIONS:
        return f"{name} says where CANN loads its code from (CANN's set_env.sh sets it); to override it, list it under env_opt_in"
    families = ", ".join(prefix + "*" for prefix in ENV_ALLOWED_PREFIXES)
    return f"{name} is not a variable HCCL, CANN or torch_npu reads ({families}, MASTER_ADDR, …); to export it anyway, list it under env_opt_in"


def env_opt_in_problem(name: str, env: Mapping[str, str]) -> Optional[str]:
    """An opt-in entry must name a variable the inventory exports, outside the allowed shapes."""
    denied = env_denied(name)
    if denied is not None:
        return f"{name} {denied}; it cannot be opted in"
    if name not in env:
        return f"{name} is opted in but not set under env"
    if is_allowed_variable(name):
        return f"{name} is allowed without opt-in; remove it from env_opt_in"
    return None


def _env_problems(doc: YamlDocument, model: InventoryModel) -> list[Located]:
    """Variables outside the allowed shapes without opt-in, and those never exported."""
    problems = []
    for name in model.env:
        problem = variable_problem(name, model.env_opt_in)
        if problem:
            problems.append(doc.problem(("env", name), problem))
    for index, name in enumerate(model.env_opt_in):
        problem = env_opt_in_problem(name, model.env)
        if problem:
            problems.append(doc.problem(("env_opt_in", index), problem))
    return problems


def _threshold_problems(doc: YamlDocument, model: InventoryModel) -> list[Located]:
    """Threshold names the data file does not know and values out of their range (grey_thresholds.py)."""
    from ascendprep.inventory.thresholds import override_problem

    problems = []
    for key, value in model.thresholds.items():
        problem = override_problem(key, value)
        if problem:
            problems.append(doc.problem(("thresholds", key), problem))
    return problems


def load_inventory(path: Union[str, Path]) -> Inventory:
    """Load, validate and expand an inventory file; raise :class:`InputError` on any problem."""
    path = Path(path)
    return inventory_from_document(load_yaml_file(path), base_dir=path.parent)


def inventory_from_text(text: str, file: str = "inventory.yaml", base_dir: Optional[Path] = None) -> Inventory:
    """Like :func:`load_inventory`, from text (tests, benchmarks, the lab)."""
    return inventory_from_document(parse_yaml(text, file), base_dir=base_dir or Path("."))


def inventory_from_document(doc: YamlDocument, base_dir: Path) -> Inventory:
    if not isinstance(doc.data, dict):
        raise InputError([Located(doc.file, 1, "", "the inventory must be a mapping of keys (name, product, nodes, …)")])
    try:
        model = InventoryModel.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(_pydantic_problems(doc, exc)) from None
    product = PRODUCTS[model.product]
    default_npus = model.npus_per_node or product.default_npus
    nodes, problems = _expand_nodes(doc, model, default_npus, product)
    if not problems:
        problems = _cross_checks(doc, model, nodes, product)
    groups: tuple[AddressGroup, ...] = ()
    if not problems:
        nodes, problems = superpod_rules.resolve(doc, model, nodes, product)
    if not problems:
        groups, problems = resolve_groups(doc, model.device_network, nodes, product)
    if not problems:
        problems = superpod_rules.reserved_range_problems(doc, model, groups, nodes, product)
    if not problems:
        problems = ranktable_rules.inventory_problems(doc, model, nodes, product)
    problems += _sysctl_problems(doc, model)
    problems += _env_problems(doc, model)
    problems += _threshold_problems(doc, model)
    if problems:
        raise InputError(problems)
    group_of = [0] * len(nodes)
    for group in groups:
        for index in group.nodes:
            group_of[index] = group.index
    known = model.ssh.known_hosts
    known_list = [known] if isinstance(known, str) else list(known or [])
    return Inventory(
        source=doc.file,
        model=model,
        product=product,
        npus_per_node=default_npus,
        nodes=tuple(nodes),
        key_file=_resolve(base_dir, model.ssh.key) if model.ssh.key else None,
        known_hosts=tuple(_resolve(base_dir, k) for k in known_list),
        document=doc,
        address_groups=groups,
        group_of=tuple(group_of),
    )


__all__ = ["Inventory", "InventoryModel", "Node", "load_inventory", "inventory_from_text", "InputError", "format_path"]
