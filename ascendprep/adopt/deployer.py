"""The vendor deployer's inventory (ascend-deployer's ``inventory_file``) read as what is there.

ascend-deployer (MindCluster 7.3 user guide, "Configuring the inventory file",
hiascend.com ``…/mindcluster/730/ascenddeployer/deployerug/deployer_0025.html``; the format as
read here is docs/inventory-import.md §2) is an Ansible INI file. The sections read here:

* ``[worker]`` (and ``[master]``): the servers, one per line, ``IP ansible_ssh_user="root"``;
* ``[hccn]``: one line per server whose NPUs it addresses,
  ``IP ansible_ssh_user="root" deviceip=A0,A1,…,A7 detectip=D0,…,D7`` (one address per NPU, in
  device-id order);
* ``[hccn:vars]``: what every ``[hccn]`` host shares: ``gateways`` (one for all NPUs or one per
  NPU), ``netmask``, and deployer settings this reader leaves alone (``roce_port=4791``,
  ``bitmap``, ``dscp_tc``, ``common_network``). A host line may set these for itself too.

Why not :mod:`configparser`: an Ansible host line is a host followed by ``key=value`` words with
shell quoting (Ansible splits it with ``shlex``), which configparser reads as one option named
``10.0.0.1 ansible_ssh_user``; and configparser keeps no line numbers, which every error here
needs. So each line is split with :mod:`shlex` as Ansible does, and every problem is reported as
``file:line: what: why``.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Optional

from ascendprep.adopt.seen import Conflict, NodeSeen, NpuSeen, Seen
from ascendprep.base import hostrange
from ascendprep.base.limits import IMPORT_TEXT_MAX_BYTES
from ascendprep.base.yamlsource import InputError, Located, read_input_text
from ascendprep.inventory.model import NAME_RE, USER_RE, check_host
from ascendprep.inventory.products import Product

_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
#: Ansible's numeric host range ``node[01:08]``.
_ANSIBLE_RANGE = re.compile(r"\[(\d+):(\d+)\]")
#: Sections whose hosts are servers of the cluster.
_SERVER_SECTIONS = ("worker", "master")
_PER_NPU_KEYS = ("deviceip", "detectip", "gateways", "netmask")


class _Line:
    """One host line: the host, its ``key=value`` settings and where it stood."""

    def __init__(self, host: str, values: dict[str, str], line: int):
        self.host = host
        self.values = values
        self.line = line


def read_deployer(path: Path, product: Optional[Product]) -> Seen:
    """The servers and NPU addresses of a deployer ``inventory_file``; every problem located."""
    return parse_deployer(read_input_text(path, IMPORT_TEXT_MAX_BYTES), str(path), product)


def parse_deployer(text: str, file: str, product: Optional[Product]) -> Seen:
    problems: list[Located] = []
    sections: dict[str, list[_Line]] = {}
    variables: dict[str, dict[str, tuple[str, int]]] = {}
    section: Optional[str] = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1).strip()
            continue
        if section is None:
            problems.append(
                Located(file, number, "", "a line before any [section]; hosts belong in [worker] or [hccn]")
            )
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            problems.append(Located(file, number, f"[{section}]", f"cannot split the line as Ansible does: {exc}"))
            continue
        if not words:
            continue
        if section.endswith(":vars"):
            for word in words:
                key, sep, value = word.partition("=")
                if not sep or not key:
                    problems.append(Located(file, number, f"[{section}]", f"'{_short(word)}' is not key=value"))
                    continue
                variables.setdefault(section[: -len(":vars")], {})[key.strip()] = (value.strip(), number)
            continue
        if ":" in section:  # [group:children] and the like name groups, not hosts
            continue
        values: dict[str, str] = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or not key:
                problems.append(
                    Located(file, number, f"[{section}] {_short(words[0])}", f"'{_short(word)}' is not key=value")
                )
                continue
            values[key] = value
        sections.setdefault(section, []).append(_Line(words[0], values, number))
    if problems:
        raise InputError(problems)
    if not sections.get("hccn"):
        raise InputError(
            [Located(file, None, "[hccn]", "no [hccn] section with deviceip= lines: the file says no NPU addresses")]
        )
    seen = _servers(file, sections, variables.get("hccn", {}), product)
    return seen


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _server_hosts(file: str, sections: dict[str, list[_Line]], problems: list[Located]) -> list[str]:
    hosts: list[str] = []
    for name in _SERVER_SECTIONS:
        for line in sections.get(name, []):
            pattern = _ANSIBLE_RANGE.sub(lambda m: f"[{m.group(1)}-{m.group(2)}]", line.host)
            try:
                hosts.extend(hostrange.expand(pattern))
            except hostrange.HostRangeError as exc:
                problems.append(Located(file, line.line, f"[{name}]", str(exc)))
    return hosts


def _servers(
    file: str, sections: dict[str, list[_Line]], shared: dict[str, tuple[str, int]], product: Optional[Product]
) -> Seen:
    problems: list[Located] = []
    conflicts: list[Conflict] = []
    workers = _server_hosts(file, sections, problems)
    nodes: list[NodeSeen] = []
    names: dict[str, int] = {}
    for entry in sections["hccn"]:
        where = f"[hccn] {_short(entry.host)}"
        address = entry.values.get("ansible_host", entry.host)
        try:
            check_host(address)
            check_host(entry.host)
        except ValueError as exc:
            problems.append(Located(file, entry.line, where, str(exc)))
            continue
        name = entry.host if re.fullmatch(r"[0-9.]+", entry.host) else entry.host.split(".")[0]
        if not NAME_RE.match(name):
            problems.append(Located(file, entry.line, where, f"'{name}' cannot be a node name"))
            continue
        if name in names:
            problems.append(
                Located(file, entry.line, where, f"the host is listed twice in [hccn] (also line {names[name]})")
            )
            continue
        names[name] = entry.line
        user = entry.values.get("ansible_ssh_user") or entry.values.get("ansible_user")
        if user is not None and not USER_RE.match(user):
            problems.append(Located(file, entry.line, where, f"'{_short(user)}' is not a valid user name"))
            continue
        lists: dict[str, list[str]] = {}
        for key in _PER_NPU_KEYS:
            text, line = (entry.values[key], entry.line) if key in entry.values else shared.get(key, ("", entry.line))
            lists[key] = [item.strip() for item in text.split(",")] if text.strip() else []
        ips = lists["deviceip"]
        if not ips:
            problems.append(Located(file, entry.line, where, "no deviceip= list: which addresses do its NPUs have?"))
            continue
        count = len(ips)
        if product is not None and count not in product.allowed_npus:
            most = max(product.allowed_npus)
            problems.append(
                Located(
                    file,
                    entry.line,
                    where + " deviceip",
                    f"{count} device IPs, but an {product.title} has at most {most} NPUs (device ids 0-{most - 1})"
                    if count > most
                    else f"{count} device IPs: an {product.title} takes {product.allowed_npus} NPUs",
                )
            )
            continue
        expected = shared.get("npu_num")
        if "npu_num" in entry.values:
            expected = (entry.values["npu_num"], entry.line)
        if expected is not None and expected[0].isdigit() and int(expected[0]) != count:
            problems.append(
                Located(
                    file,
                    entry.line,
                    where + " deviceip",
                    f"{count} device IPs but npu_num={expected[0]} (line {expected[1]}): an NPU is missing or extra",
                )
            )
            continue
        per_npu: dict[str, list[Optional[str]]] = {}
        bad = False
        for key in _PER_NPU_KEYS:
            values = lists[key]
            if len(values) not in (0, 1, count):
                problems.append(
                    Located(
                        file,
                        entry.line,
                        f"{where} {key}",
                        f"{len(values)} values for {count} NPUs: give one, or one per NPU",
                    )
                )
                bad = True
                continue
            expanded: list[Optional[str]] = (
                list(values) if len(values) == count else [values[0] if values else None] * count
            )
            for devid, value in enumerate(expanded):
                if value is None:
                    continue
                problem = _address_problem(value, key, product)
                if problem:
                    problems.append(Located(file, entry.line, f"{where} {key}", f"NPU {devid}: {problem}"))
                    bad = True
            per_npu[key] = expanded
        if bad:
            continue
        # No gateways= means the deployer sets none; no netmask or detectip means the file does not say.
        said = frozenset(
            ["ip", "gateway"] + [k for k, key in (("netmask", "netmask"), ("detect", "detectip")) if lists[key]]
        )
        npus = {
            devid: NpuSeen(
                devid,
                ip=per_npu["deviceip"][devid],
                netmask=per_npu["netmask"][devid],
                gateway=per_npu["gateways"][devid],
                detect=per_npu["detectip"][devid],
                said=said,
            )
            for devid in range(count)
        }
        nodes.append(NodeSeen(name=name, host=address, npus=npus, user=user, where=f"{file}:{entry.line}"))
    if problems:
        raise InputError(problems)
    counts = Counter(len(node.npus) for node in nodes)
    usual = counts.most_common(1)[0][0]
    for node in nodes:
        if len(node.npus) != usual:
            conflicts.append(
                Conflict(
                    "npu_count",
                    f"{node.name} ({node.where}) lists {_count(len(node.npus), 'device IP')} where the other hosts list "
                    f"{usual}: imported as a server of {_count(len(node.npus), 'NPU')}; is an NPU missing?",
                    node.name,
                    error=False,
                )
            )
    listed = {node.host for node in nodes} | {node.name for node in nodes}
    for host in workers:
        if host not in listed and host.split(".")[0] not in listed:
            conflicts.append(
                Conflict(
                    "no_device_ips",
                    f"{host} is a server of [worker]/[master] but has no [hccn] line: its NPUs' addresses are unknown and it is not imported",
                    host,
                    error=False,
                )
            )
    return Seen(nodes=nodes, sources=[f"deployer {file}"], conflicts=conflicts)


def _address_problem(value: str, key: str, product: Optional[Product]) -> Optional[str]:
    """Why ``value`` cannot be the NPU's ``key``, or None."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return f"'{_short(value)}' is not an IP address"
    if address.version == 6:
        what = product.title if product is not None else "an Ascend server"
        return f"{value} is IPv6: {what} device IPs, netmasks, gateways and detect IPs are IPv4 (hccn_tool -ip -s address A netmask M)"
    if key == "netmask":
        try:
            ipaddress.IPv4Network(f"0.0.0.0/{value}")
        except ValueError:
            return f"{value} is not a netmask (contiguous ones, such as 255.255.255.0)"
    return None
