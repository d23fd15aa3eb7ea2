"""Node faults for what stops an HCCL job although the NPU network is fine.

* ``port-listener`` (``--port``, default 60000): a real process listening on that TCP port in
  the node, as a job that did not exit keeps HCCL's first host port (``EJ0003``). The unlike
  variant is the same fault on a port outside HCCL's block and the master port (``--port
  61000``): nothing may fail then.
* ``nic-no-address``: the node's NIC towards the cluster (``eth0``) loses its address; the address
  moves to a spare NIC ``ascnic0`` (one end of a veth pair inside the node, as a /32), and the subnet stays routed through the bare
  ``eth0``. SSH keeps working (Linux answers for a local address on any NIC), but the NIC that
  holds ``HCCL_IF_IP`` is not the one that reaches the master: what ``node.host_nic`` reports.

Each inject records what its heal needs (the listener's pid and start time; the address moved).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Optional

from ascendprep.lab import nodeproc
from ascendprep.lab.system import LabError, ProcessRef, is_running, process_start, start_daemon, stop_processes, tool

if TYPE_CHECKING:
    from ascendprep.lab.running import RunningLab

DEFAULT_PORT = 60000
DUMMY_NIC = "ascnic0"
DUMMY_PEER = "ascnic0p"
LISTEN_TIMEOUT_S = 10.0

#: The listener: bind every address on the port, say so, then wait to be stopped.
_LISTENER = (
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
    "s.bind(('0.0.0.0', int(sys.argv[1])))\n"
    "s.listen(16)\n"
    "print('listening', flush=True)\n"
    "while True:\n"
    "    time.sleep(3600)\n"
)


def check_port(port: Optional[int]) -> int:
    value = DEFAULT_PORT if port is None else port
    if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
        raise LabError(f"--port {port!r}: give a TCP port from 1024 to 65535")
    return value


def start_listener(lab: "RunningLab", record: dict[str, Any], **_: Any) -> None:
    node = record["node"]
    port = record["port"]
    log = lab.paths.log(node, f"port-listener-{port}")
    log.write_text("")
    argv = nodeproc.in_node_argv(lab.holder(node), [lab.python.executable, "-c", _LISTENER, str(port)])
    ref = start_daemon(argv, log)
    record["process"] = ref.to_dict()
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while "listening" not in log.read_text(errors="replace"):
        if not is_running(ref):
            raise LabError(
                f"{node}: the listener on port {port} did not start: {log.read_text(errors='replace').strip()[-300:]}"
            )
        if time.monotonic() > deadline:
            stop_processes([ref])
            raise LabError(f"{node}: the listener on port {port} was not listening after {LISTEN_TIMEOUT_S:g}s")
        time.sleep(0.02)


def stop_listener(lab: "RunningLab", record: dict[str, Any]) -> None:
    data = record.get("process") or {}
    if "pid" in data and process_start(int(data["pid"])) == int(data["start"]):
        stop_processes([ProcessRef(int(data["pid"]), int(data["start"]))])


def _ip(lab: "RunningLab", node: str, *args: str) -> None:
    lab.run_in_node(node, [tool("ip"), *args])


def move_address(lab: "RunningLab", record: dict[str, Any], **_: Any) -> None:
    node = lab.node(record["node"])
    network = lab.spec.network
    address = f"{node.mgmt_ip}/{network.prefixlen}"
    record["saved"] = {"address": address, "subnet": str(network)}
    # A veth pair inside the node (kernels without the dummy module have veth: the lab uses it).
    _ip(lab, node.name, "link", "add", DUMMY_NIC, "type", "veth", "peer", "name", DUMMY_PEER)
    _ip(lab, node.name, "link", "set", DUMMY_PEER, "up")
    _ip(lab, node.name, "link", "set", DUMMY_NIC, "up")
    _ip(lab, node.name, "addr", "add", f"{node.mgmt_ip}/32", "dev", DUMMY_NIC)
    _ip(lab, node.name, "addr", "del", address, "dev", "eth0")
    _ip(lab, node.name, "route", "add", str(network), "dev", "eth0", "src", node.mgmt_ip)


def restore_address(lab: "RunningLab", record: dict[str, Any]) -> None:
    node = lab.node(record["node"])
    saved = record["saved"]
    lab.run_in_node(node.name, [tool("ip"), "route", "del", saved["subnet"], "dev", "eth0"], check=False)
    lab.run_in_node(node.name, [tool("ip"), "link", "del", DUMMY_NIC], check=False)
    _ip(lab, node.name, "addr", "add", saved["address"], "dev", "eth0")
