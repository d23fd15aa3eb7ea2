"""Fault injection: break one node the way real clusters break, and put it right again.

Device faults (a link down, an NPU alarm, ...) live in the simulator's shared state and are
handed to it. Node faults change the node itself (its files, its sshd, its link speed); each is
recorded in ``faults.json`` with whatever ``heal`` needs to undo exactly that change.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

from ascendprep.lab import blockerfaults, jobenvfaults, network, topofaults
from ascendprep.lab.nodefs import HCCN_CONF
from ascendprep.lab.sim import state as sim_state
from ascendprep.lab.spec import VERSION_RE, drifted_version
from ascendprep.lab.system import LabError

if TYPE_CHECKING:
    from ascendprep.lab.running import RunningLab

#: Faults that live in the simulated devices (the simulator defines and applies them).
DEVICE_FAULTS = sim_state.FAULT_KINDS
NODE_FAULTS = (
    (
        "stale-hccn-conf",
        "cann-drift",
        "torch-npu-drift",
        "sshd-down",
        "slow",
        "hostname-loopback",
        "hostname-missing",
        "port-listener",
        "nic-no-address",
    )
    + jobenvfaults.JOBENV_FAULTS
    + topofaults.TOPO_FAULTS
)
FAULT_KINDS = DEVICE_FAULTS + NODE_FAULTS
DEFAULT_SLOW_RATE = "8mbit"
HOSTS_FILE = "/etc/hosts"
_SIZE_RE = re.compile(r"^([0-9]{1,10})([KMG]?)$")


def parse_size(text: str) -> int:
    """``30M``, ``512K``, ``1G`` or plain bytes (powers of 1024), for ``--size``."""
    match = _SIZE_RE.match(text.strip().upper())
    if not match:
        raise LabError(f"--size {text!r}: give bytes, or a number with K, M or G (e.g. 30M)")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2) or " ")


def inject(
    lab: "RunningLab",
    node: str,
    kind: str,
    *,
    npu: Optional[int] = None,
    rate: Optional[str] = None,
    version: Optional[str] = None,
    size: Optional[str] = None,
    port: Optional[int] = None,
    recover_s: Optional[float] = None,
) -> dict[str, Any]:
    """Put fault ``kind`` in force on ``node``; returns its record (as ``lab status`` shows it).

    ``size`` (hccn-flood): what each hccn_tool call prints, e.g. ``30M`` (the default).
    ``port`` (port-listener): the TCP port a process listens on (60000, the default); (the
    Ascend 950 ``ub-*`` faults): the UB port of die 0 it hits (default every port of the NPU).
    ``recover_s`` (ub-partial-link): seconds after which the port is back on all its lanes.
    """
    target = lab.node(node)
    if kind not in FAULT_KINDS:
        raise LabError(f"unknown fault {kind!r}; choose one of: {', '.join(FAULT_KINDS)}")
    if npu is not None and not 0 <= npu < target.npus:
        raise LabError(f"--npu {npu}: {node} has NPUs 0-{target.npus - 1}")
    if npu is not None and kind in NODE_FAULTS and kind != "stale-hccn-conf":
        raise LabError(f"--npu does not apply to {kind} (it affects the whole node)")
    if kind == "stale-hccn-conf" and npu is None:
        raise LabError("stale-hccn-conf needs --npu (whose address_<npu> line goes stale)")
    if rate is not None and kind != "slow":
        raise LabError("--rate only applies to the 'slow' fault")
    if version is not None and kind not in ("cann-drift", "torch-npu-drift"):
        raise LabError("--version only applies to cann-drift and torch-npu-drift")
    if size is not None and kind != "hccn-flood":
        raise LabError("--size only applies to the 'hccn-flood' fault")
    ub_fault = kind.startswith("ub-")
    if port is not None and kind != "port-listener" and not ub_fault:
        raise LabError("--port only applies to the 'port-listener' fault and the ub-* faults")
    if recover_s is not None and kind != "ub-partial-link":
        raise LabError("--recover-after only applies to the 'ub-partial-link' fault")
    if kind in DEVICE_FAULTS:
        from ascendprep.lab.sim import state

        flood = parse_size(size) if size is not None else None
        try:
            if ub_fault:
                state.set_fault(lab.state_dir, node, kind, npu=npu, port=port, recover_s=recover_s)
            else:
                state.set_fault(lab.state_dir, node, kind, npu=npu, size=flood)
        except ValueError as exc:
            raise LabError(str(exc)) from None
        record = {"node": node, "kind": kind, "npu": npu, "level": "device"}
        if ub_fault and port is not None:
            record["port"] = port
        if kind == "hccn-flood":
            record["size"] = flood if flood is not None else state.DEFAULT_FLOOD_BYTES
        return record
    with _locked_records(lab) as records:
        if any(r["node"] == node and r["kind"] == kind and r.get("npu") == npu for r in records):
            raise LabError(f"{kind} is already in force on {node}; heal it first")
        record: dict[str, Any] = {"node": node, "kind": kind, "npu": npu, "level": "node"}
        if kind == "port-listener":
            record["port"] = blockerfaults.check_port(port)
        _INJECT[kind](lab, record, rate=rate, version=version)
        records.append(record)
    return _public(record)


def heal(lab: "RunningLab", node: Optional[str] = None, kind: Optional[str] = None) -> list[dict[str, Any]]:
    """Undo faults (all, one node's, or one kind), newest first; returns what was healed."""
    if node is not None:
        lab.node(node)
    if kind is not None and kind not in FAULT_KINDS:
        raise LabError(f"unknown fault {kind!r}; choose one of: {', '.join(FAULT_KINDS)}")
    healed: list[dict[str, Any]] = []
    with _locked_records(lab) as records:
        for record in reversed(list(records)):
            if (node is None or record["node"] == node) and (kind is None or record["kind"] == kind):
                _HEAL[record["kind"]](lab, record)
                records.remove(record)
                healed.append(_public(record))
    healed += _heal_device_faults(lab, node, kind)
    return healed


def active_faults(lab: "RunningLab") -> list[dict[str, Any]]:
    """Every fault in force: the simulator's device faults, then the node faults."""
    return _device_faults(lab) + [_public(r) for r in _read_records(lab)]


# --- device faults (simulator state) --------------------------------------------------------


def _device_faults(lab: "RunningLab") -> list[dict[str, Any]]:
    from ascendprep.lab.sim import state

    return [
        {
            "node": f["node"],
            "kind": f["kind"],
            "npu": f.get("npu"),
            "level": "device",
            **({"size": f["size"]} if "size" in f else {}),
        }
        for f in state.list_faults(lab.state_dir)
    ]


def _heal_device_faults(lab: "RunningLab", node: Optional[str], kind: Optional[str]) -> list[dict[str, Any]]:
    from ascendprep.lab.sim import state

    selected = [
        f for f in _device_faults(lab) if (node is None or f["node"] == node) and (kind is None or f["kind"] == kind)
    ]
    if selected and (kind is None or kind in DEVICE_FAULTS):
        state.clear_faults(lab.state_dir, node, kind)
    return selected


# --- node faults ----------------------------------------------------------------------------


def _stale_hccn_conf(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    from ascendprep.lab.sim import hccnconf

    before = lab.node_op(record["node"], {"op": "read", "path": str(HCCN_CONF)})
    stale = hccnconf.make_stale(before["text"] or "", record["npu"])
    lab.node_op(record["node"], {"op": "write", "path": str(HCCN_CONF), "text": stale})
    record["saved"] = {"before": before["text"], "stale": stale}


def _heal_stale_hccn_conf(lab: "RunningLab", record: dict[str, Any]) -> None:
    """Restore the file as it was, unless something rewrote it since (then it is not ours)."""
    saved = record["saved"]
    now = lab.node_op(record["node"], {"op": "read", "path": str(HCCN_CONF)})
    if now["text"] != saved["stale"]:
        return
    if saved["before"] is None:
        lab.node_op(record["node"], {"op": "remove", "path": str(HCCN_CONF)})
    else:
        lab.node_op(record["node"], {"op": "write", "path": str(HCCN_CONF), "text": saved["before"]})


def _cann_drift(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    versions = lab.spec.versions.cann_tree()
    record["version"] = _check_version(version or drifted_version(versions["cann"]), versions["cann"])
    lab.node_op(
        record["node"],
        {"op": "install-cann", "versions": {**versions, "cann": record["version"]}, "arch": platform.machine()},
    )


def _heal_cann_drift(lab: "RunningLab", record: dict[str, Any]) -> None:
    lab.node_op(
        record["node"], {"op": "install-cann", "versions": lab.spec.versions.cann_tree(), "arch": platform.machine()}
    )


def _torch_npu_drift(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    wanted = lab.spec.versions.torch_npu
    record["version"] = _check_version(version or drifted_version(wanted), wanted)
    _install_torch_npu(lab, record["node"], record["version"])


def _heal_torch_npu_drift(lab: "RunningLab", record: dict[str, Any]) -> None:
    _install_torch_npu(lab, record["node"], lab.spec.versions.torch_npu)


def _install_torch_npu(lab: "RunningLab", node: str, version: str) -> None:
    python = lab.python
    lab.node_op(
        node,
        {
            "op": "install-torch-npu",
            "purelib": str(python.purelib),
            "version": version,
            "torch_version": python.torch or lab.spec.versions.torch_npu,
        },
    )


def _sshd_down(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    lab.stop_sshd(record["node"])


def _heal_sshd_down(lab: "RunningLab", record: dict[str, Any]) -> None:
    lab.start_sshd(record["node"])


def _slow(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    """Shape both directions: the host-side veth (towards the node) and the node's eth0."""
    try:
        record["rate"] = network.check_rate(rate or DEFAULT_SLOW_RATE)
    except ValueError as exc:
        raise LabError(f"--rate: {exc}") from None
    node = lab.node(record["node"])
    network.add_tbf(node.veth, record["rate"])
    network.add_tbf("eth0", record["rate"], netns=node.netns)
    # The simulated NPU ports share the node's fate: hccn_tool's pings from and to it wait out
    # the shaper's bucket (lab/sim/hccn_tool.py, cmd_ping).
    with sim_state.edit_node(lab.state_dir, record["node"]) as doc:
        doc["shaped_rate"] = record["rate"]


def _heal_slow(lab: "RunningLab", record: dict[str, Any]) -> None:
    node = lab.node(record["node"])
    network.remove_root_qdisc(node.veth)
    network.remove_root_qdisc("eth0", netns=node.netns)
    with sim_state.edit_node(lab.state_dir, record["node"]) as doc:
        doc.pop("shaped_rate", None)


def _hostname_mapping(
    lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]
) -> None:
    """The node's /etc/hosts maps its own name as real hosts do (lab/hostsfile.py)."""
    from ascendprep.lab.hostsfile import render_node_hosts

    mapping = record["kind"].split("-", 1)[1]
    before = lab.node_op(record["node"], {"op": "read", "path": HOSTS_FILE})
    changed = render_node_hosts(lab.spec.node_list(), record["node"], mapping)
    lab.node_op(record["node"], {"op": "write", "path": HOSTS_FILE, "text": changed})
    record["saved"] = {"before": before["text"], "changed": changed}


def _heal_hostname_mapping(lab: "RunningLab", record: dict[str, Any]) -> None:
    """Restore /etc/hosts as it was, unless something rewrote it since (then it is not ours)."""
    saved = record["saved"]
    now = lab.node_op(record["node"], {"op": "read", "path": HOSTS_FILE})
    if now["text"] == saved["changed"] and saved["before"] is not None:
        lab.node_op(record["node"], {"op": "write", "path": HOSTS_FILE, "text": saved["before"]})


_INJECT = {
    "stale-hccn-conf": _stale_hccn_conf,
    "cann-drift": _cann_drift,
    "torch-npu-drift": _torch_npu_drift,
    "sshd-down": _sshd_down,
    "slow": _slow,
    "hostname-loopback": _hostname_mapping,
    "hostname-missing": _hostname_mapping,
    "port-listener": blockerfaults.start_listener,
    "nic-no-address": blockerfaults.move_address,
    **{kind: jobenvfaults.inject for kind in jobenvfaults.JOBENV_FAULTS},
    **{kind: topofaults.inject for kind in topofaults.TOPO_FAULTS},
}
_HEAL = {
    "stale-hccn-conf": _heal_stale_hccn_conf,
    "cann-drift": _heal_cann_drift,
    "torch-npu-drift": _heal_torch_npu_drift,
    "sshd-down": _heal_sshd_down,
    "slow": _heal_slow,
    "hostname-loopback": _heal_hostname_mapping,
    "hostname-missing": _heal_hostname_mapping,
    "port-listener": blockerfaults.stop_listener,
    "nic-no-address": blockerfaults.restore_address,
    **{kind: jobenvfaults.heal for kind in jobenvfaults.JOBENV_FAULTS},
    **{kind: topofaults.heal for kind in topofaults.TOPO_FAULTS},
}


def _check_version(version: str, current: str) -> str:
    if not VERSION_RE.match(version):
        raise LabError(f"--version {version!r} is not a version")
    if version == current:
        raise LabError(f"--version {version}: that is the version the lab already has")
    return version


def _public(record: dict[str, Any]) -> dict[str, Any]:
    """A record without the saved file contents (status output stays small)."""
    return {key: value for key, value in record.items() if key != "saved"}


# --- faults.json ----------------------------------------------------------------------------


def _read_records(lab: "RunningLab") -> list[dict[str, Any]]:
    try:
        return json.loads(lab.paths.faults_json.read_text())["faults"]
    except FileNotFoundError:
        return []


@contextmanager
def _locked_records(lab: "RunningLab") -> Iterator[list[dict[str, Any]]]:
    """faults.json under an exclusive lock; the list is written back when the block ends.

    Written back even when the block fails part-way, so faults already put in force (or already
    healed) before the failure stay recorded correctly.
    """
    lock_path: Path = lab.paths.lab_dir / ".faults.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        records = _read_records(lab)
        try:
            yield records
        finally:
            temp = lab.paths.faults_json.with_suffix(".tmp")
            temp.write_text(json.dumps({"schema_version": 1, "faults": records}, indent=2) + "\n")
            os.replace(temp, lab.paths.faults_json)
