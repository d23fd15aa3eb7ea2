"""plan, apply and plan again against the lab, by lab size, next to Ansible doing the same changes.

    sudo python3 bench/bench_plan_apply.py                                  # 1, 8, 16, 32 nodes
    sudo python3 bench/bench_plan_apply.py --sizes 8 --no-ansible
    sudo python3 bench/bench_plan_apply.py --ansible-playbook /tmp/ansible-venv/bin/ansible-playbook --json out.json

Run by hand as root (not part of the test suite). For each size N it brings fresh atlas-a2 labs of
N nodes up (named ``bench-N-PID``, on a free /24) and takes each down again, also on failure:

1. the CLI as a user runs it, each command a child process: ``plan`` (fresh lab, every change
   pending), ``apply``, ``plan`` again (no changes). Wall time, the child's CPU time, and its
   max RSS (``os.wait4``: the ascendprep process, which holds every SSH connection itself);
2. on a second fresh lab, the Python API with one ``Session``: ``gather_facts`` then
   ``apply_changes``, reading ``session.exec_counts()`` after each: SSH execs per host per phase
   (the target is 1);
3. on another fresh lab, the hand-batched floor (``bench/floor_client.py``: one paramiko
   connection and one script per host making the same changes, read-backs checked), then
   ``ascendprep plan --detailed-exitcode`` must find nothing to change;
4. on a third fresh lab, ``ansible-playbook bench/ansible/playbook.yml`` (forks = N,
   pipelining, the lab's key and known_hosts), with its ``ssh``/``sftp``/``scp`` wrapped to count
   invocations per host; afterwards ``ascendprep plan --detailed-exitcode`` must find nothing to
   change, proving that Ansible did the same changes.

Once (on the first size's second lab) it also measures what the lab itself costs: the gather
script run inside node1 without SSH against the same script over SSH, and one simulated
hccn_tool call (each starts a Python interpreter). From those it prints the "lab bound" of each
phase: the CPU the simulated tools of N nodes need, spread over this machine's cores, i.e. the
wall time no SSH client could beat on this machine.

Last it prints issue 12's ratios per size: plan+apply against the floor (target <= 2.5), Ansible
against plan+apply (target >= 5), the converged re-plan against the floor (target <= 1.5), by
wall time and by total CPU (ascendprep's or the client's own plus the nodes'; steadier on a
shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import render_gather_script
from ascendprep.inventory.load import load_inventory
from ascendprep.lab import lifecycle
from ascendprep.lab.lab import Lab
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.system import missing_requirements
from ascendprep.lab.testing import free_test_subnet
from ascendprep.plan.diff import diff_host
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import apply_changes, gather_facts, host_accesses

sys.path.insert(0, str(Path(__file__).resolve().parent / "ansible"))
from render_project import PLAYBOOK, write_project  # noqa: E402  (bench/ansible is not a package)

CORES = os.cpu_count() or 1
#: A gather transcript section per call of a simulated tool: ``@@<hex> begin hccn.ip npu=0``.
TOOL_SECTION = re.compile(r"^@@[0-9a-f]+ begin (hccn|npu_smi)\.", re.MULTILINE)
CALLS_TIMED = 20


@dataclass(frozen=True)
class Measured:
    """One command: wall s, its own CPU s (its process tree), max RSS (largest process), exit
    status, and the CPU s it caused on the lab nodes (sshd sessions and all they ran)."""

    wall: float
    cpu: float
    max_rss_mb: float
    rc: int
    node_cpu: float = 0.0


@dataclass(frozen=True)
class ExecCounts:
    """SSH execs per host in each phase of one Session (min and max over the hosts)."""

    gather: tuple[int, int]
    apply: tuple[int, int]


@dataclass(frozen=True)
class LabCost:
    """What one node's gather costs with and without SSH, and one simulated tool call."""

    in_node_wall: float
    in_node_cpu: float
    ssh_round_trip: float
    ssh_exec: float
    tool_call_cpu: float
    tool_calls: int


@dataclass(frozen=True)
class AnsibleRun:
    """A playbook run that reached ascendprep's target state, and its SSH invocations per host."""

    run: Measured
    ssh_calls: tuple[int, int]


@dataclass
class SizeResult:
    nodes: int
    cli: dict[str, Measured] = field(default_factory=dict)
    execs: Optional[ExecCounts] = None
    ansible: Optional[AnsibleRun] = None
    floor: Optional[Measured] = None


# --- processes ---------------------------------------------------------------------------------


def run_measured(argv: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """Run ``argv`` with output to ``log`` (not a pipe: ssh masters may outlive it) and time it."""
    with open(log, "wb") as out:
        started = time.perf_counter()
        child = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sessions_of(pid: int) -> list[int]:
    """Live children of process ``pid`` (an sshd listener's per-connection processes)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited while we looked
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def node_cpu(lab: Lab, settle: float = 15.0) -> float:
    """CPU seconds of every SSH session the lab's nodes have finished so far.

    A node's sshd listener reaps its per-connection processes, and the kernel adds their CPU
    time (with that of the shells, tools and Python modules they ran) to the listener's
    cutime/cstime. Waits up to ``settle`` s for sessions still closing, so a command's
    connections are counted once it has exited.
    """
    listeners = [ref.pid for ref in (lab.sshd_process(n.name) for n in lab.nodes) if ref is not None]
    deadline = time.monotonic() + settle
    while any(sessions_of(pid) for pid in listeners) and time.monotonic() < deadline:
        time.sleep(0.2)
    ticks = 0
    for pid in listeners:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def run_on_lab(lab: Lab, argv: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """:func:`run_measured`, adding the CPU the command caused on the lab's nodes."""
    before = node_cpu(lab)
    measured = run_measured(argv, cwd, env, log)
    return replace(measured, node_cpu=node_cpu(lab) - before)


def tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# --- labs --------------------------------------------------------------------------------------


@contextmanager
def fresh_lab(nodes: int) -> Iterator[Lab]:
    """A new lab ``bench-N-PID`` on a free /24, taken down afterwards whatever happens."""
    name = f"bench-{nodes}-{os.getpid()}"
    paths = LabPaths(name)
    lifecycle.tear_down(paths)  # left by an earlier bench that was killed
    try:
        lab = Lab.up(LabSpec(name=name, nodes=nodes, subnet=free_test_subnet(offset=nodes)), paths=paths)
    except BaseException:
        lifecycle.tear_down(paths)  # a half-built lab
        raise
    try:
        yield lab
    finally:
        lab.down()


# --- 1. the CLI --------------------------------------------------------------------------------


def bench_cli(lab: Lab, folder: Path) -> dict[str, Measured]:
    """``plan`` (all changes), ``apply``, ``plan`` (none), each checked by its exit status."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(folder), "COLUMNS": "200"}
    base = [sys.executable, "-m", "ascendprep"]
    inventory = str(lab.inventory_path)
    steps = [
        ("plan", [*base, "plan", inventory, "--detailed-exitcode"], 3),
        ("apply", [*base, "apply"], 0),
        ("replan", [*base, "plan", inventory, "--detailed-exitcode"], 0),
    ]
    results = {}
    for phase, argv, expected in steps:
        log = folder / f"{phase}.log"
        measured = run_on_lab(lab, argv, folder, env, log)
        if measured.rc != expected:
            raise SystemExit(f"ascendprep {phase} exited {measured.rc}, expected {expected}:\n{tail(log)}")
        results[phase] = measured
    return results


# --- 2. the API: execs per host ----------------------------------------------------------------


def count_execs(lab: Lab) -> ExecCounts:
    """gather_facts then apply_changes in one Session, counting execs per host after each."""
    inventory = load_inventory(lab.inventory_path)
    desired = build_desired(inventory)
    with Session(host_accesses(inventory), forks=len(inventory.nodes)) as session:
        gathered = gather_facts(session, inventory)
        after_gather = session.exec_counts()
        changes, tools = {}, {}
        for name, outcome in gathered.items():
            if not outcome.ok or outcome.value is None:
                raise SystemExit(f"gather failed on {name}: {outcome.error}")
            changes[name] = diff_host(desired, name, outcome.value.facts).changes
            tools[name] = outcome.value.facts.hccn_tool
        applied = apply_changes(session, changes, tools)
        after_apply = session.exec_counts()
    for name, done in applied.items():
        if not done.ok or done.value is None:
            raise SystemExit(f"apply failed on {name}: {done.error}")
        failed = [key for key, step in done.value.steps.items() if not step.ok]
        if failed or len(done.value.steps) != len(changes[name]):
            raise SystemExit(
                f"apply on {name}: {len(done.value.steps)} of {len(changes[name])} steps ran, failed: {failed}"
            )
    gather = [after_gather.get(n.name, 0) for n in inventory.nodes]
    apply = [after_apply.get(n.name, 0) - after_gather.get(n.name, 0) for n in inventory.nodes]
    return ExecCounts((min(gather), max(gather)), (min(apply), max(apply)))


# --- the lab's own cost --------------------------------------------------------------------------


def measure_lab_cost(lab: Lab, repeat: int = 3) -> LabCost:
    """node1's gather script inside the node (no SSH) vs over SSH, and one hccn_tool call's CPU."""
    inventory = load_inventory(lab.inventory_path)
    node = inventory.nodes[0]
    script = render_gather_script(npus=node.npus, python_path=inventory.model.software.python_path)
    in_node: list[tuple[float, float]] = []
    for _ in range(repeat):
        cpu, started = children_cpu(), time.perf_counter()
        done = lab.run_in_node(node.name, ["sh", "-s"], input=script, check=False)
        in_node.append((time.perf_counter() - started, children_cpu() - cpu))
        if done.returncode != 0:
            raise SystemExit(f"gather script inside {node.name} exited {done.returncode}: {done.stderr.strip()}")
    calls = len(TOOL_SECTION.findall(done.stdout))
    over_ssh: list[tuple[float, float]] = []
    for _ in range(repeat):  # a new Session each time: the round trip includes the SSH handshake
        with Session(host_accesses(inventory, nodes=[node]), forks=1) as session:
            outcome = gather_facts(session, inventory)[node.name]
        if not outcome.ok or outcome.value is None:
            raise SystemExit(f"gather over SSH on {node.name} failed: {outcome.error}")
        over_ssh.append((outcome.seconds, outcome.value.seconds))
    loop = f"i=0; while [ $i -lt {CALLS_TIMED} ]; do hccn_tool -i 0 -ip -g >/dev/null 2>&1; i=$((i+1)); done"
    cpu = children_cpu()
    lab.run_in_node(node.name, ["sh", "-c", loop], check=False)
    per_call = (children_cpu() - cpu) / CALLS_TIMED
    wall, cpu_used = min(in_node)
    round_trip, exec_only = min(over_ssh)
    return LabCost(wall, cpu_used, round_trip, exec_only, per_call, calls)


# --- 3. Ansible --------------------------------------------------------------------------------


def write_wrappers(folder: Path, log: Path) -> Path:
    """``ssh``/``sftp``/``scp`` that log their arguments, then exec the real program."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in ("ssh", "sftp", "scp"):
        real = shutil.which(tool)
        if real is None:
            raise SystemExit(f"{tool} is not installed; Ansible's ssh connection needs it")
        wrapper = folder / tool
        wrapper.write_text(f"#!/bin/sh\nprintf '%s\\n' \"{tool} $*\" >> '{log}'\nexec '{real}' \"$@\"\n")
        wrapper.chmod(0o755)
    return folder


def calls_per_host(log: Path, addresses: Sequence[str]) -> tuple[int, int]:
    """(min, max) over hosts of logged ssh/sftp/scp invocations naming the host's address."""
    text = log.read_text() if log.exists() else ""
    counts = [len(re.findall(rf"(?<![\d.]){re.escape(a)}(?![\d.])", text)) for a in addresses]
    return min(counts), max(counts)


def stop_control_masters(control_dir: Path) -> None:
    """Close the ssh ControlPersist masters Ansible left (the lab is about to go)."""
    for socket in control_dir.glob("*"):
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket}", "-O", "exit", "bench"], capture_output=True, timeout=15, check=False
        )


def bench_ansible(lab: Lab, folder: Path, playbook_bin: str) -> AnsibleRun:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "ssh-calls.log"
    control_dir = folder / "cp"
    control_dir.mkdir(exist_ok=True)
    config = write_project(folder, lab.inventory_path, len(lab.nodes), write_wrappers(folder / "bin", log), control_dir)
    env = {**os.environ, "HOME": str(folder), "ANSIBLE_CONFIG": str(config), "ANSIBLE_NOCOLOR": "1"}
    before = node_cpu(lab)
    try:
        measured = run_measured([playbook_bin, str(PLAYBOOK)], folder, env, folder / "ansible.log")
    finally:
        stop_control_masters(control_dir)
    measured = replace(measured, node_cpu=node_cpu(lab) - before)
    if measured.rc != 0:
        raise SystemExit(f"ansible-playbook exited {measured.rc}:\n{tail(folder / 'ansible.log')}")
    check = subprocess.run(
        [sys.executable, "-m", "ascendprep", "plan", str(lab.inventory_path), "--detailed-exitcode"],
        cwd=folder, env={**os.environ, "HOME": str(folder), "COLUMNS": "200"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if check.returncode != 0:
        raise SystemExit(
            f"after Ansible, ascendprep plan still finds changes (exit {check.returncode}):\n{check.stdout[-3000:]}"
        )
    return AnsibleRun(measured, calls_per_host(log, [n.mgmt_ip for n in lab.nodes]))


# --- 4. the hand-batched floor ------------------------------------------------------------------

FLOOR_CLIENT = Path(__file__).resolve().parent / "floor_client.py"


def bench_floor(lab: Lab, folder: Path) -> Measured:
    """bench/floor_client.py as a child process (its targets saved first, untimed); then plan must
    find nothing left to change."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(folder), "COLUMNS": "200"}
    targets = folder / "targets.json"  # worked out before the clock starts: a floor knows its answers
    saved = subprocess.run(
        [sys.executable, str(FLOOR_CLIENT), str(lab.inventory_path), "--save-targets", str(targets)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if saved.returncode != 0:
        raise SystemExit(f"the floor client could not work out its targets:\n{saved.stderr[-3000:]}")
    measured = run_on_lab(
        lab, [sys.executable, str(FLOOR_CLIENT), "--targets", str(targets)], folder, env, folder / "floor.log"
    )
    if measured.rc != 0:
        raise SystemExit(f"the floor client exited {measured.rc}:\n{tail(folder / 'floor.log')}")
    check = subprocess.run(
        [sys.executable, "-m", "ascendprep", "plan", str(lab.inventory_path), "--detailed-exitcode"],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if check.returncode != 0:
        raise SystemExit(
            f"after the floor client, ascendprep plan still finds changes (exit {check.returncode}):\n{check.stdout[-3000:]}"
        )
    return measured


# --- one size ----------------------------------------------------------------------------------


def fastest(runs: Sequence[Measured]) -> Measured:
    return min(runs, key=lambda m: m.wall)


def bench_size(
    nodes: int, workdir: Path, playbook_bin: Optional[str], repeat: int, want_cost: bool
) -> tuple[SizeResult, Optional[LabCost]]:
    """Every measurement for one lab size; CLI and Ansible runs ``repeat`` times, fastest kept."""
    result = SizeResult(nodes)
    cli_runs: list[dict[str, Measured]] = []
    for attempt in range(repeat):
        with fresh_lab(nodes) as lab:
            cli_runs.append(bench_cli(lab, workdir / f"cli-{nodes}-{attempt}"))
    result.cli = {phase: fastest([run[phase] for run in cli_runs]) for phase in cli_runs[0]}
    floors = []
    for attempt in range(repeat):
        with fresh_lab(nodes) as lab:
            floors.append(bench_floor(lab, workdir / f"floor-{nodes}-{attempt}"))
    result.floor = fastest(floors)
    cost = None
    with fresh_lab(nodes) as lab:
        if want_cost:
            cost = measure_lab_cost(lab)
        result.execs = count_execs(lab)
    if playbook_bin is not None:
        runs = []
        for attempt in range(repeat):
            with fresh_lab(nodes) as lab:
                runs.append(bench_ansible(lab, workdir / f"ansible-{nodes}-{attempt}", playbook_bin))
        result.ansible = min(runs, key=lambda r: r.run.wall)
    return result, cost


# --- report ------------------------------------------------------------------------------------


def span(pair: tuple[int, int]) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]}-{pair[1]}"


def cli_table(results: list[SizeResult]) -> list[str]:
    lines = [
        "ascendprep CLI: wall s / own CPU s / node CPU s / max RSS MB; SSH execs per host (API, one Session)",
        f"{'nodes':>5} | {'plan (fresh lab)':>26} | {'apply':>26} | {'plan again (no changes)':>26} | {'execs gather':>12} | {'execs apply':>11}",
    ]
    for r in results:
        cells = [
            f"{m.wall:6.2f} /{m.cpu:5.2f} /{m.node_cpu:6.1f} /{m.max_rss_mb:4.0f}"
            for m in (r.cli["plan"], r.cli["apply"], r.cli["replan"])
        ]
        execs = (span(r.execs.gather), span(r.execs.apply)) if r.execs else ("n/a", "n/a")
        lines.append(
            f"{r.nodes:>5} | {cells[0]:>26} | {cells[1]:>26} | {cells[2]:>26} | {execs[0]:>12} | {execs[1]:>11}"
        )
    return lines


def ansible_table(results: list[SizeResult]) -> list[str]:
    lines = [
        "Ansible, the same changes on a fresh lab (forks = nodes, pipelining) vs ascendprep on its fresh lab",
        f"{'nodes':>5} | {'wall s':>7} | {'own CPU s':>9} | {'node CPU s':>10} | {'max RSS MB':>10} | {'ssh calls/host':>14} | "
        f"{'apply/ansible':>13} | {'plan+apply/ansible':>18} | {'CPU plan+apply/ansible':>22}",
    ]
    for r in results:
        if r.ansible is None:
            continue
        a = r.ansible.run
        plan, apply = r.cli["plan"], r.cli["apply"]
        ours_cpu = plan.cpu + plan.node_cpu + apply.cpu + apply.node_cpu
        lines.append(
            f"{r.nodes:>5} | {a.wall:>7.2f} | {a.cpu:>9.1f} | {a.node_cpu:>10.1f} | {a.max_rss_mb:>10.0f} | {span(r.ansible.ssh_calls):>14} | "
            f"{apply.wall / a.wall:>13.2f} | {(plan.wall + apply.wall) / a.wall:>18.2f} | {ours_cpu / (a.cpu + a.node_cpu):>22.2f}"
        )
    return lines


def total_cpu(measured: Measured) -> float:
    return measured.cpu + measured.node_cpu


def ratio_table(results: list[SizeResult]) -> list[str]:
    """Issue 12's targets: plan+apply <= 2.5x the floor, >= 5x faster than Ansible, re-plan <= 1.5x the floor."""
    lines = [
        "issue 12's ratios (wall / total CPU = own + nodes'); targets: plan+apply/floor <= 2.5, ansible/(plan+apply) >= 5, replan/floor <= 1.5",
        f"{'nodes':>5} | {'floor wall s / CPU s':>20} | {'plan+apply / floor':>18} | {'ansible / (plan+apply)':>22} | {'replan / floor':>14}",
    ]
    for r in results:
        if r.floor is None:
            continue
        plan, apply, replan, floor = r.cli["plan"], r.cli["apply"], r.cli["replan"], r.floor
        both_wall, both_cpu = plan.wall + apply.wall, total_cpu(plan) + total_cpu(apply)
        ours = f"{both_wall / floor.wall:.2f} / {both_cpu / total_cpu(floor):.2f}"
        theirs = "n/a"
        if r.ansible is not None:
            a = r.ansible.run
            theirs = f"{a.wall / both_wall:.2f} / {total_cpu(a) / both_cpu:.2f}"
        again = f"{replan.wall / floor.wall:.2f} / {total_cpu(replan) / total_cpu(floor):.2f}"
        lines.append(
            f"{r.nodes:>5} | {floor.wall:>9.2f} / {total_cpu(floor):>8.1f} | {ours:>18} | {theirs:>22} | {again:>14}"
        )
    return lines


def cost_lines(cost: LabCost, results: list[SizeResult]) -> list[str]:
    lines = [
        "The lab's own cost (node1 of the first size, best of 3):",
        f"  gather script inside the node, no SSH: {cost.in_node_wall:.2f} s wall, {cost.in_node_cpu:.2f} s CPU "
        f"({cost.tool_calls} simulated tool calls; one hccn_tool call = {cost.tool_call_cpu * 1000:.0f} ms CPU, a Python start)",
        f"  the same script over SSH by ascendprep, one host: {cost.ssh_exec:.2f} s exec, {cost.ssh_round_trip:.2f} s with the connect",
        f"  lab bound of a phase on this machine (not the hand-batched floor) = its node CPU / {CORES} cores (the nodes share these cores with ascendprep):",
    ]
    for r in results:
        plan, apply = r.cli["plan"], r.cli["apply"]
        lines.append(
            f"    {r.nodes:>2} nodes: plan {plan.node_cpu / CORES:5.1f} s of {plan.wall:6.2f} s, apply {apply.node_cpu / CORES:5.1f} s of {apply.wall:6.2f} s"
        )
    return lines


def report(results: list[SizeResult], cost: Optional[LabCost]) -> str:
    lines = [
        f"machine: {CORES} CPUs, {os.uname().sysname} {os.uname().release}, load average now {os.getloadavg()[0]:.2f}",
        "",
    ]
    lines += cli_table(results)
    if any(r.ansible for r in results):
        lines += [""] + ansible_table(results)
    if any(r.floor for r in results):
        lines += [""] + ratio_table(results)
    if cost is not None:
        lines += [""] + cost_lines(cost, results)
    return "\n".join(lines)


def find_playbook_bin(given: Optional[str]) -> Optional[str]:
    for candidate in (given, shutil.which("ansible-playbook"), "/tmp/ansible-venv/bin/ansible-playbook"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,8,16,32", help="comma-separated node counts")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="CLI and Ansible runs per size, each on a fresh lab (the fastest is shown)",
    )
    parser.add_argument("--no-ansible", action="store_true", help="skip the Ansible comparison")
    parser.add_argument(
        "--ansible-playbook", help="ansible-playbook to run (default: PATH, then /tmp/ansible-venv/bin)"
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--keep", type=Path, help="keep logs and the Ansible projects in this folder")
    args = parser.parse_args()
    problems = missing_requirements()
    if problems:
        print("cannot run a lab here:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    playbook_bin = None
    if not args.no_ansible:
        playbook_bin = find_playbook_bin(args.ansible_playbook)
        if playbook_bin is None:
            print(
                "ansible-playbook not found. Install it outside the project, e.g.\n"
                "  python3 -m venv /tmp/ansible-venv && /tmp/ansible-venv/bin/pip install ansible-core\n"
                "or run with --no-ansible.",
                file=sys.stderr,
            )
            return 1
    sizes = [int(n) for n in args.sizes.split(",")]
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-plan-apply-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: list[SizeResult] = []
    cost: Optional[LabCost] = None
    try:
        for index, nodes in enumerate(sizes):
            started = time.perf_counter()
            result, measured_cost = bench_size(nodes, workdir, playbook_bin, max(1, args.repeat), want_cost=index == 0)
            cost = cost or measured_cost
            results.append(result)
            print(
                f"[{nodes} nodes done in {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.2f}]",
                file=sys.stderr,
                flush=True,
            )
    finally:
        if results:
            print(report(results, cost), flush=True)
        if args.json is not None:
            raw = {"cores": CORES, "cost": asdict(cost) if cost else None, "sizes": [asdict(r) for r in results]}
            args.json.write_text(json.dumps(raw, indent=1) + "\n")
        if args.keep is None:
            shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
