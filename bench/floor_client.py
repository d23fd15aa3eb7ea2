"""The hand-batched floor: ascendprep's changes made by the least work an SSH client can do.

    python3 bench/floor_client.py INVENTORY [--forks N] [--hccn-tool PATH]
    python3 bench/floor_client.py INVENTORY --save-targets FILE     # work out the values, run nothing
    python3 bench/floor_client.py --targets FILE [--forks N]          # run them (what bench times)

The yardstick of issue 12: what "plan + apply" would cost if someone wrote one shell script per
host by hand, knowing the answers in advance. One paramiko connection per host, one exec, one
script that

- sets each NPU's device IP and detect IP (``hccn_tool -i N -ip -s`` / ``-netdetect -s``), no read
  before (it does not check what is there, so it is not idempotent and not safe: that is the
  point of a floor);
- writes the live kernel settings into ``/proc/sys`` (the same "at least" values and reserved
  ports ascendprep sets on a fresh node);
- writes the files ascendprep manages (the sysctl drop-in, env.sh, set_env.sh, the rank table),
  each through a temp file and a rename;
- reads each NPU's address back once (``-ip -g``), and the client checks it.

The target values come from ``ascendprep plan --offline --format json`` (the same source as
bench/ansible/render_project.py), so after this script ``ascendprep plan --detailed-exitcode``
finds nothing to change on a fresh lab node: bench_plan_apply.py checks that, which proves the
floor did the same changes. No gateway or TLS: the script refuses an inventory that plans them
(the lab's does not), rather than silently doing less than ascendprep.

A floor knows its answers in advance: with ``--save-targets`` the values (and each host's SSH
address, key and known_hosts) are worked out once and saved; ``--targets`` then runs them without
importing ascendprep or planning anything, which is what bench_plan_apply.py times.

Exit status: 0 when every host's script succeeded and every read-back matched, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

#: hccn_tool where the driver installs it (the lab installs it there too).
DEFAULT_HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
#: What the whole script may take on one host before the client gives up on it.
SCRIPT_TIMEOUT = 300
_READBACK = re.compile(r"^@@floor-ip (\d+)@@$")
_IPADDR = re.compile(r"^ipaddr:\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class NpuTarget:
    npu: int
    ip: str
    netmask: str
    detect: Optional[str]


@dataclass(frozen=True)
class HostTarget:
    """One node's changes, as the offline plan gives them."""

    name: str
    host: str
    port: int
    user: str
    npus: tuple[NpuTarget, ...]
    sysctl: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Targets:
    """Every host's changes and how to reach it (what --save-targets writes)."""

    hosts: tuple[HostTarget, ...]
    key_file: Optional[str]
    known_hosts: tuple[str, ...]
    connect_timeout: float

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Targets":
        data = json.loads(text)
        hosts = tuple(
            HostTarget(h["name"], h["host"], int(h["port"]), h["user"], tuple(NpuTarget(**n) for n in h["npus"]),
                       tuple((k, v) for k, v in h["sysctl"]), tuple((p, c) for p, c in h["files"]))
            for h in data["hosts"]
        )  # fmt: skip
        return cls(hosts, data["key_file"], tuple(data["known_hosts"]), float(data["connect_timeout"]))


def load_targets(inventory_path: Path) -> Targets:
    """Every node's changes from ``ascendprep plan --offline --format json``, and its SSH access."""
    from ascendprep.base.paths import SYSCTL_FILE
    from ascendprep.desired.envfiles import render_sysctl_conf
    from ascendprep.inventory.load import load_inventory

    sys.path.insert(0, str(Path(__file__).resolve().parent / "ansible"))
    from render_project import offline_plan, sysctl_values  # bench/ansible is not a package

    inventory = load_inventory(inventory_path)
    plan = offline_plan(inventory_path)
    values = sysctl_values(plan)
    cluster_files = [(f["path"], f["content"]) for f in plan["cluster_files"]]
    access = {node.name: node for node in inventory.nodes}
    targets = []
    for node in plan["nodes"]:
        npus = []
        for npu in node["npu"]:
            if npu.get("gateway") is not None or npu.get("tls") is not None:
                raise SystemExit(
                    f"{node['name']} npu {npu['npu']}: the floor sets no gateway or TLS; use an inventory without them"
                )
            npus.append(NpuTarget(int(npu["npu"]), npu["ip"], npu["netmask"], npu.get("detect")))
        own_files = [(f["path"], f["content"]) for f in node["files"] if "content" in f]
        files = [(SYSCTL_FILE, render_sysctl_conf(values)), *cluster_files, *own_files]
        entry = access[node["name"]]
        targets.append(
            HostTarget(
                node["name"], entry.host, entry.port, entry.user, tuple(npus), tuple(values.items()), tuple(files)
            )
        )
    key = str(inventory.key_file) if inventory.key_file else None
    return Targets(
        tuple(targets),
        key,
        tuple(str(path) for path in inventory.known_hosts),
        float(inventory.model.ssh.connect_timeout),
    )


def render_floor_script(target: HostTarget, hccn_tool: str = DEFAULT_HCCN_TOOL) -> str:
    """The one script a host runs: sets, kernel values, files, read-backs; exit = failures."""
    q = shlex.quote
    tool = q(hccn_tool)
    lines = ["set -u", "fail=0"]
    for npu in target.npus:
        lines.append(
            f"{tool} -i {npu.npu} -ip -s address {q(npu.ip)} netmask {q(npu.netmask)} >/dev/null || fail=$((fail+1))"
        )
    for npu in target.npus:
        if npu.detect is not None:
            lines.append(f"{tool} -i {npu.npu} -netdetect -s address {q(npu.detect)} >/dev/null || fail=$((fail+1))")
    for key, value in target.sysctl:
        lines.append(f"printf '%s\\n' {q(value)} > {q('/proc/sys/' + key.replace('.', '/'))} || fail=$((fail+1))")
    for path, content in target.files:
        folder = path.rsplit("/", 1)[0] or "/"
        lines.append(
            f"mkdir -p {q(folder)} && printf '%s' {q(content)} > {q(path + '.floor')} && chmod 644 {q(path + '.floor')} "
            f"&& mv -f {q(path + '.floor')} {q(path)} || fail=$((fail+1))"
        )
    for npu in target.npus:
        lines.append(f"echo '@@floor-ip {npu.npu}@@'; {tool} -i {npu.npu} -ip -g || fail=$((fail+1))")
    lines.append('exit "$fail"')
    return "\n".join(lines) + "\n"


def readback_problems(target: HostTarget, stdout: str) -> list[str]:
    """What the read-backs show that is not the target address (an empty list: all in place)."""
    seen: dict[int, str] = {}
    current: Optional[int] = None
    for line in stdout.splitlines():
        marker = _READBACK.match(line)
        if marker:
            current = int(marker.group(1))
            continue
        found = _IPADDR.match(line)
        if found and current is not None:
            seen[current] = found.group(1)
    return [
        f"npu {npu.npu}: reads back {seen.get(npu.npu)!r}, expected {npu.ip}"
        for npu in target.npus
        if seen.get(npu.npu) != npu.ip
    ]


@dataclass(frozen=True)
class HostRun:
    name: str
    rc: int
    problems: tuple[str, ...]
    seconds: float


def run_host(
    target: HostTarget, key_file: Optional[str], known_hosts: list[str], hccn_tool: str, connect_timeout: float
) -> HostRun:
    """Connect (host keys checked), run the script once, check the read-backs."""
    import paramiko

    started = time.perf_counter()
    client = paramiko.SSHClient()
    for path in known_hosts:
        client.load_host_keys(path)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            target.host,
            port=target.port,
            username=target.user,
            key_filename=key_file,
            timeout=connect_timeout,
            allow_agent=False,
            look_for_keys=False,
        )
        stdin, stdout, stderr = client.exec_command("sh -s", timeout=SCRIPT_TIMEOUT)
        stdin.write(render_floor_script(target, hccn_tool))
        stdin.channel.shutdown_write()
        out = stdout.read().decode(errors="replace")
        err = stderr.read().decode(errors="replace")
        rc = stdout.channel.recv_exit_status()
    finally:
        client.close()
    problems = readback_problems(target, out)
    if rc != 0:
        problems.insert(0, f"script exited {rc}: {err.strip()[-500:]}")
    return HostRun(target.name, rc, tuple(problems), time.perf_counter() - started)


def run_floor(targets: Targets, forks: Optional[int] = None, hccn_tool: str = DEFAULT_HCCN_TOOL) -> list[HostRun]:
    """Every host at once (``forks`` threads, default one per host)."""

    def one(target: HostTarget) -> HostRun:
        try:
            return run_host(target, targets.key_file, list(targets.known_hosts), hccn_tool, targets.connect_timeout)
        except Exception as error:  # one host's failure is that host's row, never the others'
            return HostRun(target.name, -1, (f"{type(error).__name__}: {error}",), 0.0)

    with ThreadPoolExecutor(max_workers=forks or len(targets.hosts)) as pool:
        return list(pool.map(one, targets.hosts))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inventory", type=Path, nargs="?")
    parser.add_argument("--forks", type=int, default=None, help="hosts at once (default: all)")
    parser.add_argument("--hccn-tool", default=DEFAULT_HCCN_TOOL)
    parser.add_argument("--save-targets", type=Path, help="write the inventory's targets to this file and stop")
    parser.add_argument("--targets", type=Path, help="run the targets saved in this file (no inventory)")
    args = parser.parse_args(argv)
    if (args.inventory is None) == (args.targets is None):
        parser.error("give an INVENTORY or --targets FILE")
    if args.targets is not None:
        targets = Targets.from_json(args.targets.read_text())
    else:
        targets = load_targets(args.inventory.resolve())
    if args.save_targets is not None:
        args.save_targets.write_text(targets.to_json())
        return 0
    started = time.perf_counter()
    runs = run_floor(targets, args.forks, args.hccn_tool)
    failed = [run for run in runs if run.problems]
    for run in failed:
        print(f"{run.name}: " + "; ".join(run.problems), file=sys.stderr)
    print(f"floor: {len(runs) - len(failed)} of {len(runs)} hosts done in {time.perf_counter() - started:.2f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
