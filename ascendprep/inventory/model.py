"""The inventory's schema: what a user may write, field by field, and one expanded server.

The pydantic models check each field on its own (names, hosts, paths, env values: everything that
will later reach a remote shell); the rules across fields and nodes, and the loading with located
errors, are :mod:`ascendprep.inventory.load`'s.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ascendprep.base import hostrange
from ascendprep.inventory.products import A3_SUPERPOD_MAX_SERVERS, product_problem

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
            raise ValueError(
                f"'{value}' is not a valid logical super-pod name (letters, digits, '.', '_', '-'; up to 64)"
            )
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
            raise ValueError(f'{value!r} must be quoted: YAML reads it as a number (write "{value}")')
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
    #: A key of ``inventory.products.PRODUCTS``; a product named by the vendor but not documented
    #: far enough to prepare is refused with what is missing.
    product: str
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

    @field_validator("product")
    @classmethod
    def _product(cls, value: str) -> str:
        problem = product_problem(value)
        if problem:
            raise ValueError(problem)
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
