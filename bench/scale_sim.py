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

The recorded gather text is cut once into literal text and these places (``_Pieces``), so a
host's transcript is one join rather than a chain of regex substitutions over 64 KB per host;
bench/tests/test_scale_sim.py holds every join equal to those substitutions.

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

from ascendprep.remote.result import ExecResult

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
        nodes.append(
            {"name": f"node[{start + 1:04d}-{start + count:04d}]", "host": f"10.64.{group}.[10-{10 + count - 1}]"}
        )
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

#: The places in a recorded gather text where hosts differ (see :class:`_Pieces`): the script's
#: nonce, the node's name and ``net.route``'s destination and answer; ``("ip", recorded address)``
#: and ``("sha", path, recorded hash)`` places are made per address and per managed file.
_NONCE, _NODE, _ROUTE = ("nonce",), ("node",), ("route",)
#: At most this many distinct scripts (nonce aside) have their sections' pieces kept: plan and
#: verify ask for different sections, every host of one command for the same.
_ASKED_KEPT = 16


class _Pieces:
    """A recorded gather text cut, once, into literal text and the places where hosts differ.

    A host's transcript is then one join, not a chain of regex substitutions over its 64 KB: those
    cost ~6 ms per host, more than the controller's own work, and although the benchmark subtracts
    the simulator's CPU, its regex work between two hosts' parses pushed the controller's code and
    data out of the CPU caches (bench/HISTORY.md, "pa2"). A real SSH transport hands over bytes.

    The places are those the module doc lists: the recorded nonce, each recorded address of the
    node (its management address, device, detect and gateway addresses), the node's name as a
    word, each ``sha256sum`` line's hash, and ``net.route``'s destination and answer. What is
    alike on every host of the fleet (the management prefix, env.sh's HCCL_CONNECT_TIMEOUT) is
    written into the literal text here. bench/tests/test_scale_sim.py holds the joins to the
    substitutions they stand for, host by host.
    """

    def __init__(
        self, template: _Template, node: str, addresses: "set[str]", host_prefix: int, connect_timeout: str
    ) -> None:
        self.template = template
        nonce = template.nonce
        self._place = re.compile(
            rf"(?P<nonce>{re.escape(nonce)})|(?P<ip>{_IPV4.pattern})|(?P<node>(?<![\w-]){re.escape(node)}(?![\w-]))"
            r"|^(?P<sha>[0-9a-f]{64})(?=  (?P<path>\S+)$)",
            re.M,
        )
        self._addresses = addresses
        self._fleet_wide = lambda text: _CONNECT_TIMEOUT.sub(
            lambda m: m.group(1) + connect_timeout,
            text.replace("/24 scope global eth0", f"/{host_prefix} scope global eth0"),
        )
        #: Every place any section holds (each host's values are looked up for all of them).
        self.places: "set[tuple]" = {_NONCE, _NODE, _ROUTE}
        self.head = self._cut(template.head)
        self.tail = self._cut(template.tail)
        routes = [name for name, _ in template.sections if name == "net.route"]
        if len(routes) > 1:
            raise ValueError("recorded transcript has more than one net.route section")
        self.sections = [
            (name, self._cut_route(text) if name == "net.route" else self._cut(text))
            for name, text in template.sections
        ]
        self._asked: Dict[str, list] = {}

    def _cut(self, text: str) -> list:
        """``text`` (with the fleet-wide changes made) as literal strings and places, in order."""
        text = self._fleet_wide(text)
        pieces: list = []
        start = 0
        for match in self._place.finditer(text):
            if match.group("nonce"):
                place: tuple = _NONCE
            elif match.group("node"):
                place = _NODE
            elif match.group("sha"):
                place = ("sha", match.group("path"), match.group("sha"))
            elif match.group(0) in self._addresses:
                place = ("ip", match.group(0))
            else:
                continue  # an address the recorded node does not own: the same on every host
            pieces += [text[start : match.start()], place]
            start = match.end()
            self.places.add(place)
        pieces.append(text[start:])
        return [piece for piece in pieces if piece != ""]

    def _cut_route(self, text: str) -> list:
        """``net.route``'s pieces: its destination and answer are one place."""
        marker = f"@@{self.template.nonce} "
        begin = f"{marker}begin net.route dest="
        stderr = text.index(f"{marker}stderr")
        if not text.startswith(begin):
            raise ValueError("recorded net.route section is not one destination's")
        return self._cut(begin) + [_ROUTE] + self._cut(text[stderr:])

    def asked(self, script: str, nonce: str) -> list:
        """The pieces of only the sections ``script`` runs, in the recorded order (see
        :meth:`_Template.asked`); worked out once per distinct script, its nonce aside."""
        key = script.replace(nonce, "")
        pieces = self._asked.get(key)
        if pieces is None:
            names = set(_SCRIPT_SECTION.findall(script))
            pieces = (
                self.head + [piece for name, section in self.sections if name in names for piece in section] + self.tail
            )
            if len(self._asked) < _ASKED_KEPT:
                self._asked[key] = pieces
        return pieces


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
        import yaml

        from ascendprep.desired.state import build_desired
        from ascendprep.inventory.load import inventory_from_text

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
        from ascendprep.desired.envfiles import connect_timeout_for

        #: env.sh scales HCCL_CONNECT_TIMEOUT with the node count: the value a login shell of this
        #: fleet's hosts sees once applied (the recording is of a 2-node lab's).
        self.connect_timeout = str(connect_timeout_for(len(desired.nodes)))
        self.gather_pieces = _Pieces(
            self.gather, self.recorded_node, set(recorded_addresses.values()), host_prefix, self.connect_timeout
        )
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
        """The recorded gather text as host ``name`` prints it for ``script`` (see the module doc):
        one join of the recorded text's pieces with this host's values in their places."""
        values = self._gather_values(name, nonce)
        return "".join(
            [piece if piece.__class__ is str else values[piece] for piece in self.gather_pieces.asked(script, nonce)]
        )

    def _gather_values(self, name: str, nonce: str) -> Dict[tuple, str]:
        """What goes in each place of the recorded gather text where host ``name`` differs."""
        addresses, hashes = _host_values(self.desired, name)
        old_to_new = {old: addresses[key] for key, old in self._recorded_addresses.items() if key in addresses}
        values: Dict[tuple, str] = {_NONCE: nonce, _NODE: name, _ROUTE: self._route_to_master(addresses["host"])}
        for place in self.gather_pieces.places:
            if place[0] == "ip":
                values[place] = old_to_new.get(place[1], place[1])
            elif place[0] == "sha":
                values[place] = hashes.get(place[1], place[2])
        return values

    def _route_to_master(self, own: str) -> str:
        """``net.route``'s destination and answer: the recorded node was the master (its route is
        ``local``); others reach it on eth0."""
        master = self.desired.inventory.master.host
        route = (
            f"local {own} dev lo src {own} uid 0 \n    cache <local> \n"
            if master == own
            else f"{master} dev eth0 src {own} uid 0 \n    cache \n"
        )
        route += "\n" if self.gather.version >= 2 else ""  # the script's own newline after the stream
        return f"{master}\n{route}"

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
            out += section(
                f"ping npu={npu} target={target}",
                [line.replace("{npu}", npu).replace("{target}", target) for line in self.ping_reply],
            )
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
    for line in lines[start + 1 :]:
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
