"""An in-process simulated fleet for the scale benchmark: recorded lab transcripts, replayed
per host with that host's own values (issue 12, "4,096 nodes from one control host").

The transcripts in ``bench/scale_data/`` are what one healthy atlas-a2 lab node (8 NPUs) printed
for the real gather and ping scripts (``bench/scale_capture.py`` records them). For a simulated
host the transport answers each script with the recorded text, changed where hosts differ:

- the script's own nonce (read from the script, so the real parser accepts the output);
- the node name, its management address and its device / detect addresses (from the desired
  state of the benchmark's inventory, so a converged host matches its plan exactly);
- the sha256 of each managed file (the content the desired state renders for that host);
- the ping sections: one per pair the rendered ping script asks for, with the recorded reply.

Everything after the transport is the real code: parse_gather_output, the diff, the checks,
the reports, the plan file and the verify bundle.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ascendprep.fleet.result import ExecResult

DATA = Path(__file__).resolve().parent / "scale_data"
FRESH, CONVERGED = "fresh", "converged"
#: The benchmark's hosts share one management /16 (10.64.0.0/16), as a flat L2 would.
HOST_PREFIX = 16

#: A script's or transcript's header: kind, format version (v2: every stream ends with one
#: newline of the script's own; v1: only a stream that lacked one), nonce.
_HEADER = re.compile(r"@@ascendprep (gather|ping) v(\d+) ([0-9a-f]{16})")
_IPV4 = re.compile(r"(?<![0-9.])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![0-9.])")
_SHA_LINE = re.compile(r"^[0-9a-f]{64}(  (\S+))$", re.M)
#: Section names as the rendered scripts name them (``ap_run hccn.ip ...``, ``ap_hccn hccn.ip``).
_SCRIPT_SECTION = re.compile(r"\bap_\w+ '?([a-z_][a-z0-9_.-]*)'?[ \n]")
_PAIR = re.compile(r"'(\d+) (\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})'")


def scale_inventory_doc(hosts: int) -> dict:
    """The benchmark's inventory: the capture's settings, ``hosts`` nodes of 8 NPUs, one /16."""
    capture = json.loads((DATA / "capture.json").read_text())
    doc = dict(capture["inventory"])
    doc["name"] = f"scale-{hosts}"
    doc["ssh"] = {**doc["ssh"], "key": "id_ed25519", "known_hosts": "known_hosts"}
    nodes = []
    per_group = 200
    for start in range(0, hosts, per_group):
        count = min(per_group, hosts - start)
        group = start // per_group
        nodes.append({"name": f"node[{start + 1:04d}-{start + count:04d}]", "host": f"10.64.{group}.[10-{10 + count - 1}]"})
    doc["nodes"] = nodes
    return doc


def write_scale_inventory(directory: Path, hosts: int) -> Path:
    """The inventory file (with the key and known_hosts files it names) in ``directory``."""
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "id_ed25519").write_text("not a key: the simulated transport never reads it\n")
    (directory / "known_hosts").write_text("")
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump(scale_inventory_doc(hosts), sort_keys=False))
    return path


class _Template:
    """One recorded transcript and the recorded node's values in it."""

    def __init__(self, text: str) -> None:
        match = _HEADER.search(text)
        if match is None:
            raise ValueError("recorded transcript has no ascendprep header")
        self.text = text
        self.version = int(match.group(2))
        self.nonce = match.group(3)
        marker = f"@@{self.nonce} "
        #: (section name, its lines from begin to end), in order, and the done line.
        self.sections: List[Tuple[str, str]] = []
        begin = text.index(marker + "begin ")
        self.head = text[:begin]
        for chunk in text[begin:].split(marker + "begin ")[1:]:
            name = chunk.split(" ", 1)[0].split("\n", 1)[0]
            self.sections.append((name, marker + "begin " + chunk))
        last_name, last = self.sections[-1]
        done = last.rfind(marker + "done")
        self.tail = last[done:] if done >= 0 else ""
        if done >= 0:
            self.sections[-1] = (last_name, last[:done])

    def asked(self, script: str) -> str:
        """The recorded text of only the sections ``script`` runs (a plan that reads fewer probes
        gets fewer sections back), in the recorded order."""
        names = set(_SCRIPT_SECTION.findall(script))
        return self.head + "".join(text for name, text in self.sections if name in names) + self.tail


#: The login environment's HCCL_CONNECT_TIMEOUT as the job probe prints it (name, set flag, value).
_CONNECT_TIMEOUT = re.compile(r"^(ascendprep-env\tHCCL_CONNECT_TIMEOUT\t1\t)\d+$", re.M)


def _host_values(desired, name: str) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(address map from the recorded node's to ``name``'s, sha256 per managed path) of a node."""
    node = desired.nodes[name]
    addresses = {"host": node.node.host}
    for npu in node.hccn:
        addresses[f"ip{npu.npu}"] = npu.ip
        if npu.netdetect:
            addresses[f"detect{npu.npu}"] = npu.netdetect
        if npu.gateway:
            addresses[f"gateway{npu.npu}"] = npu.gateway
    hashes = {f.path: hashlib.sha256(f.content.encode()).hexdigest() for f in node.files}
    return addresses, hashes


class SimulatedFleet:
    """Answers for every host of ``desired`` (the benchmark inventory's desired state)."""

    def __init__(self, desired, state: str = CONVERGED, host_prefix: int = HOST_PREFIX) -> None:
        from ascendprep.desired import build_desired
        from ascendprep.inventory import inventory_from_text

        import yaml

        capture = json.loads((DATA / "capture.json").read_text())
        recorded = build_desired(inventory_from_text(yaml.safe_dump(capture["inventory"]), base_dir=DATA))
        self.recorded_node = capture["node"]
        recorded_addresses, _ = _host_values(recorded, self.recorded_node)
        self._recorded_addresses = recorded_addresses
        self.gather = _Template((DATA / f"a2-{state}.gather.txt").read_text())
        ping = _Template((DATA / "a2-converged.ping.txt").read_text())
        self.ping_reply = _ping_reply(ping)
        self.ping_version = ping.version
        self.desired = desired
        self.host_prefix = host_prefix
        from ascendprep.envfiles import connect_timeout_for

        #: env.sh scales HCCL_CONNECT_TIMEOUT with the node count: the value a login shell of this
        #: fleet's hosts sees once applied (the recording is of a 2-node lab's).
        self.connect_timeout = str(connect_timeout_for(len(desired.nodes)))
        #: CPU seconds (thread time) spent inside the simulated transports: not the controller's.
        self.simulation_cpu = 0.0
        self._lock = threading.Lock()

    def transcript(self, name: str, script: str) -> str:
        """What host ``name`` prints for ``script`` (a rendered gather or ping script)."""
        match = _HEADER.search(script)
        if match is None:
            raise ValueError("not a gather or ping script")
        kind, _, nonce = match.groups()
        if kind == "ping":
            return self._ping(script, nonce)
        return self._gather(name, script, nonce)

    def _gather(self, name: str, script: str, nonce: str) -> str:
        addresses, hashes = _host_values(self.desired, name)
        old_to_new = {old: addresses[key] for key, old in self._recorded_addresses.items() if key in addresses}
        text = self.gather.asked(script).replace(self.gather.nonce, nonce)
        text = _IPV4.sub(lambda m: old_to_new.get(m.group(0), m.group(0)), text)
        text = re.sub(rf"(?<![\w-]){re.escape(self.recorded_node)}(?![\w-])", name, text)
        text = text.replace("/24 scope global eth0", f"/{self.host_prefix} scope global eth0")
        text = self._route_to_master(text, nonce, addresses["host"])
        text = _CONNECT_TIMEOUT.sub(lambda m: m.group(1) + self.connect_timeout, text)
        return _SHA_LINE.sub(lambda m: hashes[m.group(2)] + m.group(1) if m.group(2) in hashes else m.group(0), text)

    def _route_to_master(self, text: str, nonce: str, own: str) -> str:
        """The recorded node was the master (its route is ``local``); others reach it on eth0."""
        master = self.desired.inventory.master.host
        route = f"local {own} dev lo src {own} uid 0 \n    cache <local> \n" if master == own else f"{master} dev eth0 src {own} uid 0 \n    cache \n"
        route += "\n" if self.gather.version >= 2 else ""  # the script's own newline after the stream
        section = re.compile(rf"(@@{nonce} begin net.route dest=)\S+\n.*?(?=@@{nonce} stderr)", re.S)
        return section.sub(lambda m: f"{m.group(1)}{master}\n{route}", text, count=1)

    def _ping(self, script: str, nonce: str) -> str:
        pairs_line = next((line for line in script.splitlines() if line.startswith("ap_run pairs ")), "")
        pairs = _PAIR.findall(pairs_line)
        m = f"@@{nonce} "
        # v2 (the recording's format): each stream, then the script's own newline (an empty line)
        closing = [""] if self.ping_version >= 2 else []

        def section(begin: str, stdout: List[str]) -> List[str]:
            return [f"{m}begin {begin}", *stdout, *closing, f"{m}stderr", *closing, f"{m}end rc=0 tries=1"]

        out = [f"@@ascendprep ping v{self.ping_version} {nonce}"]
        out += section("settings", ["timeout=15"])
        out += section("pairs", [f"{npu} {target}" for npu, target in pairs])
        out += section("tool.hccn_tool", ["/usr/local/bin/hccn_tool"])
        for npu, target in pairs:
            out += section(f"ping npu={npu} target={target}", [line.replace("{npu}", npu).replace("{target}", target) for line in self.ping_reply])
        out.append(f"{m}done")
        return "\n".join(out) + "\n"

    def transport_for(self, access) -> "SimulatedTransport":
        return SimulatedTransport(self, access.name)


def _ping_reply(template: _Template) -> List[str]:
    """The recorded stdout of the first ping section, with its npu and target made placeholders."""
    marker = f"@@{template.nonce} "
    lines = template.text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(marker + "begin ping "))
    attrs = dict(pair.split("=", 1) for pair in lines[start].split(" ")[3:])
    body = []
    for line in lines[start + 1:]:
        if line.startswith(marker):
            break
        body.append(line.replace(attrs["target"], "{target}").replace(f"device {attrs['npu']} ", "device {npu} "))
    if template.version >= 2 and body and body[-1] == "":
        body.pop()  # the script's own newline after the stream, not the reply's
    return body


class SimulatedTransport:
    """The Transport protocol over :class:`SimulatedFleet`: no network, no remote CPU."""

    def __init__(self, fleet: SimulatedFleet, name: str) -> None:
        self.fleet, self.name = fleet, name
        self._execs = 0

    @property
    def exec_count(self) -> int:
        return self._execs

    def run_script(self, script: str, timeout: Optional[float] = None) -> ExecResult:
        started = time.thread_time()
        self._execs += 1
        stdout = self.fleet.transcript(self.name, script)
        spent = time.thread_time() - started
        with self.fleet._lock:
            self.fleet.simulation_cpu += spent
        return ExecResult(0, stdout, "", 0.0)

    def put(self, data: bytes, remote_path: str, mode: int) -> None:
        raise NotImplementedError("the scale benchmark measures plan and verify, which write nothing on hosts")

    def fetch(self, remote_path: str, cap: int = 0, timeout: Optional[float] = None) -> bytes:
        raise NotImplementedError("the scale benchmark measures plan and verify, which fetch nothing")

    def close(self) -> None:
        pass
