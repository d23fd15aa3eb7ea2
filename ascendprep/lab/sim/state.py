"""The live model of every simulated NPU in a lab, shared by all nodes through the state dir.

Layout (lab contract): ``<state_dir>/lab.json`` (copy of the lab description) and one JSON
document per node, ``<state_dir>/devices/<node>.json``. A node document holds the node's device
list (index = hccn_tool devid) and its injected faults::

    {"schema_version": 1, "node": "node1", "product": "atlas-a2", "npus": 8,
     "driver_profile": "current", "faults": [{"kind": "link-down", "npu": 3}],
     "devices": [{"ip": null, "netmask": null, "gateway": null, "netdetect": null,
                  "admin_up": true, "optical_present": true, "tls_enable": 0,
                  "cfg_status": "NONE", "lldp": {"switch": "leaf-1", "port": "200GE1/0/1"},
                  "link_up_count": 1, "link_down_count": 0, "link_history": [[1718000000.0, true]],
                  "counters": {}}, ...]}

Concurrency: the tools of several nodes run at once, and scripts run ``hccn_tool`` for all NPUs
of a node in parallel. Writers take an exclusive ``flock`` on ``devices/<node>.lock`` (a separate
file, because documents are replaced by rename) and write through a temp file + ``os.replace``,
so readers never lock and never see half a document.

Only stdlib imports: this module is on the start-up path of every simulated tool call.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

from . import counters
from .driver_profiles import DEFAULT_DRIVER_PROFILE, check_profile
from .profiles import check_chip, profile
from .superpod import A3_FAULTS

#: The Ascend 950 UB port faults (lab/sim/ub950.py); a stdlib-only list, like A3_FAULTS.
UB_FAULTS = (
    "ub-port-down",
    "ub-lane-downgrade",
    "ub-partial-link",
    "ub-crc-growing",
    "ub-crc-static",
    "ub-link-flap",
    "ub-old-flap",
)

SCHEMA_VERSION = 1
LAB_FILE = "lab.json"
DEVICES_DIR = "devices"

#: Fault kinds of the lab contract. ``npu=None`` in a fault means every NPU of the node.
FAULT_KINDS = (
    "link-down",
    "net-health-fail",
    "lldp-empty",
    "tls-mismatch",
    "npu-alarm",
    "npu-critical",
    "hccn-hang",
    "hccn-busy",
    "npu-smi-dcmi",  # npu-smi's DCMI cannot open the NPUs (held elsewhere): every call fails, -8020
    "hccn-flood",
    "npu-busy",  # a process still holds the NPU: npu-smi info lists it
    # grey failures of the port's physical layer, rendered by lab/sim/optics.py
    "optical-low-power",
    "optical-los",
    "optical-hot",
    "port-100g",
    "fec-mismatch",
    "optical-copper",
    "optical-not-present-readings",
    # grey failures: counters that grow (lab/sim/counters.py), health event codes (npu_smi.py)
    "fcs-errors",
    "pfc-storm",
    "npu-subhealth",
    "npu-unknown-code",
    # the A3 HCCS plane and super-pod identity (lab/sim/superpod.py), per die
    *A3_FAULTS,
    # the Ascend 950 UB ports (lab/sim/ub950.py), per port
    *UB_FAULTS,
)
#: Faults whose effect grows from the moment they are injected: their record keeps ``since``.
GROWING_FAULTS = ("fcs-errors", "pfc-storm")


#: ``hccn-flood``: bytes each hccn_tool call prints when no size is given (more than every
#: output cap, the controller's HOST_OUTPUT_CAP included).
DEFAULT_FLOOD_BYTES = 30 * 1024 * 1024
#: The largest flood a fault may ask for (the simulator writes it on every call).
MAX_FLOOD_BYTES = 1024 * 1024 * 1024

#: How many link changes a device remembers for ``-link_stat -g`` ([I]: the driver's
#: ``LINK_STAT_MAX_IDX`` is not in the public headers; captures show at most a handful).
LINK_HISTORY_MAX = 10


class LabStateError(ValueError):
    """The state dir or a request against it is invalid; the message names what and where."""


# --------------------------------------------------------------------------- lab description


def _check_name(kind: str, name: object) -> str:
    """Node and lab names become file names: letters, digits, ``.``, ``_``, ``-``; no leading dot."""
    if not isinstance(name, str) or not name or name[0] in ".-":
        raise LabStateError(f"{kind} name {name!r} must be a non-empty string not starting with '.' or '-'")
    for char in name:
        if not (char.isascii() and (char.isalnum() or char in "._-")):
            raise LabStateError(f"{kind} name {name!r} may only use letters, digits, '.', '_', '-'")
    return name


def _check_devid_count(product: str, npus: object, where: str) -> int:
    counts = profile(product)["devid_counts"]
    if not isinstance(npus, int) or isinstance(npus, bool) or npus not in counts:
        allowed = ", ".join(str(c) for c in counts)
        raise LabStateError(f"{where}: npus={npus!r} is not valid for {product} (allowed: {allowed})")
    return npus


def default_cabling(product: str, node_names: list[str], npus: int) -> dict[str, dict[str, dict]]:
    """Which switch port each NPU port is cabled to, per node: ``{node: {"<npu>": {switch, port}}}``.

    Rail-optimised, as large clusters are built (docs/ascend-reference.md §3.3): the same NPU index of
    every server goes to the same leaf, one port per server. Atlas 800 (910) follows its four
    planes instead: NPUs i and i+4 share leaf ``leaf-(i mod 4 + 1)`` (docs/ascend-reference.md §3.1).
    """
    prof = profile(product)
    _check_devid_count(product, npus, "default_cabling")
    cabling: dict[str, dict[str, dict]] = {}
    for index, name in enumerate(node_names):
        _check_name("node", name)
        ports: dict[str, dict] = {}
        for npu in range(npus):
            if product == "atlas-800":
                switch = f"leaf-{npu % 4 + 1}"
                port_number = index * 2 + npu // 4 + 1
            else:
                switch = f"leaf-{npu + 1}"
                port_number = index + 1
            ports[str(npu)] = {"switch": switch, "port": f"{prof['port_prefix']}1/0/{port_number}"}
        cabling[name] = ports
    return cabling


def validate_lab(lab: object) -> dict:
    """Check the lab description written by the infrastructure; return it unchanged."""
    if not isinstance(lab, dict):
        raise LabStateError("lab description must be a JSON object")
    _check_name("lab", lab.get("name"))
    product = lab.get("product")
    try:
        profile(str(product))
    except ValueError as exc:
        raise LabStateError(f"lab.product: {exc}") from None
    nodes = lab.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise LabStateError("lab.nodes must be a non-empty list")
    seen: set[str] = set()
    for position, node in enumerate(nodes):
        where = f"lab.nodes[{position}]"
        if not isinstance(node, dict):
            raise LabStateError(f"{where} must be an object")
        name = _check_name("node", node.get("name"))
        if name in seen:
            raise LabStateError(f"{where}: duplicate node name {name!r}")
        seen.add(name)
        npus = _check_devid_count(str(product), node.get("npus"), where)
        try:
            check_profile(node.get("driver_profile", DEFAULT_DRIVER_PROFILE), f"{where}.driver_profile")
            if node.get("chip") is not None:
                check_chip(str(product), node["chip"], f"{where}.chip")
        except ValueError as exc:
            raise LabStateError(str(exc)) from None
        _check_super_pod(str(product), node.get("super_pod"), where)
        cabling = node.get("cabling", {})
        if not isinstance(cabling, dict):
            raise LabStateError(f"{where}.cabling must be an object")
        for key, port in cabling.items():
            if not (isinstance(key, str) and key.isdigit() and int(key) < npus):
                raise LabStateError(f"{where}.cabling: key {key!r} is not an NPU index below {npus}")
            if not (
                isinstance(port, dict) and isinstance(port.get("switch"), str) and isinstance(port.get("port"), str)
            ):
                raise LabStateError(f"{where}.cabling[{key!r}] needs string 'switch' and 'port'")
    return lab


def _check_super_pod(product: str, pod: object, where: str) -> None:
    """``super_pod`` of a node: absent, or (A3 only) ``{"id", "server_index", "size"}`` of small integers."""
    if pod is None:
        return
    if product != "atlas-a3":
        raise LabStateError(f"{where}.super_pod: only atlas-a3 servers are in super-pods")
    if not isinstance(pod, dict) or set(pod) != {"id", "server_index", "size"}:
        raise LabStateError(f"{where}.super_pod must be an object with id, server_index and size")
    for key, value in pod.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1024:
            raise LabStateError(f"{where}.super_pod.{key}: {value!r} is not an integer 0..1023")


# --------------------------------------------------------------------------- documents


def new_device(lldp: dict | None, when: float) -> dict:
    """A freshly booted NPU port: no addresses, link up (one recorded LINK UP), TLS off."""
    return {
        "ip": None,
        "netmask": None,
        "gateway": None,
        "netdetect": None,
        "admin_up": True,
        "optical_present": True,
        "tls_enable": 0,
        "cfg_status": "NONE",
        "lldp": dict(lldp) if lldp else None,
        "link_up_count": 1,
        "link_down_count": 0,
        "link_history": [[when, True]],
        "counters": {},
    }


def new_node_document(product: str, node: dict, when: float) -> dict:
    """The initial document of one node of the lab description."""
    cabling = node.get("cabling", {})
    return {
        "schema_version": SCHEMA_VERSION,
        "node": node["name"],
        "product": product,
        "npus": node["npus"],
        "driver_profile": node.get("driver_profile", DEFAULT_DRIVER_PROFILE),
        "chip": node.get("chip"),
        "super_pod": node.get("super_pod"),
        "faults": [],
        "devices": [new_device(cabling.get(str(i)), when) for i in range(node["npus"])],
    }


def _devices_dir(state_dir: str | os.PathLike) -> str:
    return os.path.join(os.fspath(state_dir), DEVICES_DIR)


def node_path(state_dir: str | os.PathLike, node: str) -> str:
    """Path of a node's device document."""
    return os.path.join(_devices_dir(state_dir), node + ".json")


def _write_json_atomic(path: str, data: dict) -> None:
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=1, sort_keys=True))
        handle.write("\n")
    os.replace(temp, path)


def load_lab(state_dir: str | os.PathLike) -> dict:
    """The lab description copied into the state dir by :func:`init_state`."""
    path = os.path.join(os.fspath(state_dir), LAB_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise LabStateError(f"{path}: not found (was the lab state initialised?)") from None
    except ValueError as exc:
        raise LabStateError(f"{path}: not valid JSON: {exc}") from None


def read_node(state_dir: str | os.PathLike, node: str) -> dict:
    """A consistent snapshot of one node's document (no lock needed: writes are atomic)."""
    path = node_path(state_dir, node)
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        raise LabStateError(f"{path}: no simulated devices for node {node!r}") from None
    except ValueError as exc:
        raise LabStateError(f"{path}: not valid JSON: {exc}") from None
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise LabStateError(f"{path}: schema_version {doc.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    return doc


def read_all_nodes(state_dir: str | os.PathLike) -> dict[str, dict]:
    """Snapshots of every node of the lab, in lab order (the simulated switch's view)."""
    lab = load_lab(state_dir)
    return {node["name"]: read_node(state_dir, node["name"]) for node in lab.get("nodes", [])}


# --------------------------------------------------------------------------- link state


def faults_for(doc: dict, devid: int) -> set[str]:
    """Fault kinds that apply to ``devid`` of this node (node-wide faults included)."""
    return {f["kind"] for f in doc.get("faults", []) if f.get("npu") is None or f.get("npu") == devid}


def link_is_up(doc: dict, devid: int) -> bool:
    """Physical link state: admin up, optics present and no injected ``link-down`` fault."""
    device = doc["devices"][devid]
    return bool(device["admin_up"] and device["optical_present"]) and "link-down" not in faults_for(doc, devid)


def record_link_change(device: dict, up: bool, when: float) -> None:
    """Count a link transition and remember it for ``-link_stat -g`` (oldest first, capped)."""
    device["link_up_count" if up else "link_down_count"] += 1
    history = device["link_history"]
    history.append([when, up])
    del history[:-LINK_HISTORY_MAX]


class edit_node:
    """``with edit_node(state_dir, node) as doc:`` lock, read, let the caller mutate, write back.

    On a clean exit the document is written atomically, after recording a link-history entry
    for every device whose physical link state changed during the edit (so faults, ``-link -s``
    and optics changes all leave the trace that ``-link_stat -g`` shows). On an exception
    nothing is written.
    """

    def __init__(self, state_dir: str | os.PathLike, node: str) -> None:
        self._state_dir = os.fspath(state_dir)
        self._node = node
        self._fd = -1
        self._doc: dict = {}
        self._links_before: list[bool] = []

    def __enter__(self) -> dict:
        lock_path = os.path.join(_devices_dir(self._state_dir), self._node + ".lock")
        try:
            self._fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            raise LabStateError(f"{_devices_dir(self._state_dir)}: state dir not initialised") from None
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            self._doc = read_node(self._state_dir, self._node)
        except BaseException:
            self._release()
            raise
        self._links_before = [link_is_up(self._doc, i) for i in range(len(self._doc["devices"]))]
        return self._doc

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                now = time.time()
                for devid, was_up in enumerate(self._links_before):
                    is_up = link_is_up(self._doc, devid)
                    if is_up != was_up:
                        record_link_change(self._doc["devices"][devid], is_up, now)
                _write_json_atomic(node_path(self._state_dir, self._node), self._doc)
        finally:
            self._release()

    def _release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


# --------------------------------------------------------------------------- lab lifecycle


def init_state(state_dir: str | os.PathLike, lab: dict, reset: bool = False) -> None:
    """Create ``lab.json`` and ``devices/<node>.json`` for every node of ``lab``.

    New devices have no IP, gateway or netdetect, link UP, health OK, TLS switch 0 and the LLDP
    neighbour of their cabling. With ``reset=False`` an existing node document is kept (a lab
    restart keeps its configured devices); ``reset=True`` rebuilds every document and drops
    documents of nodes that are no longer in the lab.
    """
    validate_lab(lab)
    devices_dir = _devices_dir(state_dir)
    os.makedirs(devices_dir, exist_ok=True)
    if reset:
        for entry in os.listdir(devices_dir):
            if entry.endswith(".json"):
                os.remove(os.path.join(devices_dir, entry))
    _write_json_atomic(os.path.join(os.fspath(state_dir), LAB_FILE), lab)
    now = time.time()
    for node in lab["nodes"]:
        path = node_path(state_dir, node["name"])
        if os.path.exists(path):
            existing = read_node(state_dir, node["name"])
            if existing.get("npus") != node["npus"] or existing.get("product") != lab["product"]:
                raise LabStateError(
                    f"{path}: kept state has product {existing.get('product')!r} with "
                    f"{existing.get('npus')!r} NPUs but the lab now says {lab['product']!r} with "
                    f"{node['npus']!r}; initialise with reset=True"
                )
            wanted = (node.get("driver_profile", DEFAULT_DRIVER_PROFILE), node.get("chip"), node.get("super_pod"))
            if (
                existing.get("driver_profile", DEFAULT_DRIVER_PROFILE),
                existing.get("chip"),
                existing.get("super_pod"),
            ) != wanted:
                with edit_node(
                    state_dir, node["name"]
                ) as doc:  # the driver, chip name or pod, not the devices, changed
                    doc["driver_profile"], doc["chip"], doc["super_pod"] = wanted
            continue
        _write_json_atomic(path, new_node_document(lab["product"], node, now))


def _check_fault(doc: dict, kind: str, npu: int | None) -> None:
    if kind not in FAULT_KINDS:
        raise LabStateError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
    if kind in A3_FAULTS and doc.get("super_pod") is None:
        raise LabStateError(
            f"node {doc['node']!r}: {kind} needs an atlas-a3 node in a super-pod (lab up --product atlas-a3)"
        )
    if kind in UB_FAULTS and doc.get("product") != "atlas-350":
        raise LabStateError(f"node {doc['node']!r}: {kind} needs an Ascend 950 node (lab up --product atlas-350)")
    if npu is not None:
        count = len(doc["devices"])
        if not isinstance(npu, int) or isinstance(npu, bool) or not 0 <= npu < count:
            raise LabStateError(f"node {doc['node']!r}: NPU {npu!r} out of range 0..{count - 1}")


def set_fault(
    state_dir: str | os.PathLike,
    node: str,
    kind: str,
    npu: int | None = None,
    size: int | None = None,
    port: int | None = None,
    recover_s: float | None = None,
) -> None:
    """Inject a device-level fault on one NPU (``npu``) or on every NPU of ``node`` (None).

    ``size``: ``hccn-flood`` only, the bytes each call prints (default :data:`DEFAULT_FLOOD_BYTES`).
    ``port``: the UB faults only, the port (die 0) it hits; None: every port of the NPU.
    ``recover_s``: ``ub-partial-link`` only, seconds after which the port is back on all lanes.
    """
    if size is not None and kind != "hccn-flood":
        raise LabStateError("a size only applies to the hccn-flood fault")
    if port is not None and kind not in UB_FAULTS:
        raise LabStateError("a port only applies to the UB faults (ub-*)")
    if recover_s is not None and kind != "ub-partial-link":
        raise LabStateError("a recovery time only applies to the ub-partial-link fault")
    if kind == "hccn-flood":
        size = DEFAULT_FLOOD_BYTES if size is None else size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_FLOOD_BYTES:
            raise LabStateError(f"hccn-flood size must be 1 to {MAX_FLOOD_BYTES} bytes, not {size!r}")
    with edit_node(state_dir, node) as doc:
        _check_fault(doc, kind, npu)
        fault = {"kind": kind, "npu": npu}
        if kind in UB_FAULTS:
            if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 8):
                raise LabStateError(f"UB port {port!r}: a die has ports 0 to 8")
            fault["port"] = port
            if recover_s is not None:
                fault["recover_s"] = float(recover_s)
            doc["faults"] = [
                f for f in doc["faults"] if not (f["kind"] == kind and f.get("npu") == npu and f.get("port") == port)
            ]
            doc["faults"].append({**fault, "since": time.time()})
            return
        if size is not None:
            doc["faults"] = [f for f in doc["faults"] if not (f["kind"] == kind and f.get("npu") == npu)]
            fault["size"] = size
        if kind in GROWING_FAULTS:
            if not any(f["kind"] == kind and f.get("npu") == npu for f in doc["faults"]):
                doc["faults"].append({**fault, "since": time.time()})
        elif fault not in doc["faults"]:
            doc["faults"].append(fault)


def clear_faults(state_dir: str | os.PathLike, node: str | None = None, kind: str | None = None) -> None:
    """Remove faults: of one node or of all nodes, optionally only those of one ``kind``."""
    if kind is not None and kind not in FAULT_KINDS:
        raise LabStateError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
    names = [node] if node is not None else [n["name"] for n in load_lab(state_dir).get("nodes", [])]
    for name in names:
        with edit_node(state_dir, name) as doc:
            now = time.time()
            kept = [f for f in doc["faults"] if kind is not None and f["kind"] != kind]
            for fault in doc["faults"]:
                if fault not in kept:
                    counters.bank_growth(doc, fault, now)
            doc["faults"] = kept


def list_faults(state_dir: str | os.PathLike) -> list[dict]:
    """Every injected fault of the lab as ``{"node", "kind", "npu"}``, in lab order."""
    faults = []
    for name, doc in read_all_nodes(state_dir).items():
        for fault in doc.get("faults", []):
            faults.append(
                {
                    "node": name,
                    "kind": fault["kind"],
                    "npu": fault.get("npu"),
                    **({"size": fault["size"]} if "size" in fault else {}),
                    **({"port": fault["port"]} if fault.get("port") is not None else {}),
                }
            )
    return faults
