"""The inventory loaded: one YAML file that describes a cluster, validated with located errors.

``load_inventory(path)`` returns an :class:`Inventory` whose ``nodes`` are expanded from host
ranges, or raises :class:`~ascendprep.base.yamlsource.InputError` listing every problem as
``file:line: field.path: message``. Everything that will later be sent into a remote shell
(host names, user names, paths, env values, sysctl values) is validated here, at load time:
the schema's own checks (:mod:`~ascendprep.inventory.model`), then the rules across fields,
nodes, address groups, super-pods and the rank table.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ascendprep.base import hostrange
from ascendprep.base.yamlsource import InputError, Located, YamlDocument, load_yaml_file, parse_yaml
from ascendprep.inventory import ranktable_rules
from ascendprep.inventory import superpods as superpod_rules
from ascendprep.inventory import sysctl as sysctl_rules
from ascendprep.inventory.env import env_opt_in_problem, variable_problem
from ascendprep.inventory.groups import FLAT, AddressGroup, form_of, resolve_groups
from ascendprep.inventory.model import InventoryModel, Node
from ascendprep.inventory.products import PRODUCTS, Product
from ascendprep.inventory.thresholds import override_problem


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
            hint = (
                f" (did you mean '{close[0]}'?)" if close else (f" (known keys: {', '.join(known)})" if known else "")
            )
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


def _expand_nodes(
    doc: YamlDocument, model: InventoryModel, default_npus: int, product: Product
) -> tuple[list[Node], list[Located]]:
    nodes: list[Node] = []
    problems: list[Located] = []
    for entry_index, entry in enumerate(model.nodes):
        where = ("nodes", entry_index)
        hosts = hostrange.expand(entry.host)
        names = (
            hostrange.expand(entry.name)
            if entry.name
            else [h.split(".")[0] if not re.fullmatch(r"[0-9.]+", h) else h for h in hosts]
        )
        if len(names) != len(hosts):
            problems.append(
                doc.problem(where + ("name",), f"expands to {len(names)} names but host expands to {len(hosts)} hosts")
            )
            continue
        npus = entry.npus or default_npus
        if npus not in product.allowed_npus:
            path = where + ("npus",) if entry.npus else ("npus_per_node",)
            problems.append(doc.problem(path, f"{product.title} takes {_allowed(product)} NPUs per node, not {npus}"))
        per_node: dict[str, Mapping[int, object]] = {
            "device_ips": entry.device_ips,
            "detect_ips": entry.detect_ips,
            "cabling": entry.cabling,
        }
        for key, mapping in per_node.items():
            if mapping and len(hosts) > 1:
                problems.append(
                    doc.problem(
                        where + (key,),
                        f"per-NPU {key} need an entry of its own (this one expands to {len(hosts)} nodes)",
                    )
                )
            for npu in mapping:
                if not 0 <= npu < npus:
                    problems.append(
                        doc.problem(where + (key, str(npu)), f"NPU {npu} does not exist on a node with {npus} NPUs")
                    )
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
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "name"),
                    f"node name '{node.name}' is used twice (also nodes[{seen_names[node.name].entry}])",
                )
            )
        seen_names.setdefault(node.name, node)
        key = (node.host, node.port)
        if key in seen_hosts:
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "host"),
                    f"host '{node.host}' is listed twice (also nodes[{seen_hosts[key].entry}])",
                )
            )
        seen_hosts.setdefault(key, node)
    master = model.training.master
    if master is not None and master not in seen_names:
        close = difflib.get_close_matches(master, list(seen_names), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        problems.append(doc.problem(("training", "master"), f"'{master}' is not a node of this inventory{hint}"))
    net = model.device_network
    if product.is_950 and net.tls is not None:
        problems.append(
            doc.problem(
                ("device_network", "tls"),
                f"{product.title}: ascendprep does not plan the TLS switch on Ascend 950 yet; leave tls out (the vendor's 950 hccn_tool guide sets it per device)",
            )
        )
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
        problems.append(
            doc.problem(
                ("device_network", "subnets"),
                f"{product.title} needs exactly {product.planes} subnets (one per plane), got {subnet_count}",
            )
        )
    if product.id != "atlas-800" and subnet_count == 0:
        problems.append(
            doc.problem(
                ("device_network",),
                f"{product.title} needs device_network.subnet (or subnets): there is no conventional default",
            )
        )
    if net.gateways is not None and subnet_count and len(net.gateways) != subnet_count:
        problems.append(
            doc.problem(
                ("device_network", "gateways"),
                f"one gateway per subnet: {subnet_count} subnets but {len(net.gateways)} gateways",
            )
        )
    if net.detect == "gateway" and net.gateway is None and net.gateways is None:
        problems.append(
            doc.problem(("device_network", "detect"), "detect: gateway needs device_network.gateway (or gateways)")
        )
    if net.detect == "explicit":
        problems.extend(_explicit_detect_problems(doc, nodes))
    return problems


def _explicit_detect_problems(doc: YamlDocument, nodes: list[Node]) -> list[Located]:
    problems = []
    for node in nodes:
        missing = [npu for npu in range(node.npus) if npu not in node.detect_ips]
        if missing:
            problems.append(
                doc.problem(
                    ("nodes", node.entry, "detect_ips"),
                    f"detect: explicit needs a detect IP for every NPU; {node.name} lacks NPU {', '.join(map(str, missing))}",
                )
            )
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
        raise InputError(
            [Located(doc.file, 1, "", "the inventory must be a mapping of keys (name, product, nodes, …)")]
        )
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
