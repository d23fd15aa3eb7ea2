"""Checks for what stops an HCCL job from starting although the network is fine.

* ``npu.busy``: an NPU still held by a process (a job that did not exit): HCCL start-up then
  fails with ``EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training
  process is running``. Read from the process table of ``npu-smi info``; per NPU, naming pid,
  process name and memory. ``verify --allreduce`` refuses to start on such NPUs unless
  ``--allow-busy-npus`` (:func:`busy_npu_refusal`).
* ``node.hccl_ports``: a process listening on, or holding, HCCL's host port block (the block
  of the CANN the node has, from ``HCCL_IF_BASE_PORT``) or, on the master, the master port:
  ``EJ0003: Failed to bind the IP port ... port[60000]``.
* ``node.host_nic``: the NIC HCCL's host sockets use (``HCCL_SOCKET_IFNAME``, or the one holding
  ``HCCL_IF_IP``, as the plan's ``set_env.sh`` exports them) exists, is up, holds the address,
  and is the one that reaches ``MASTER_ADDR``: otherwise "Gloo connectFullMesh failed", "1/8
  clients joined", "get host ip fail by socket Ifname". A master named by hostname is resolved on
  the node first (``getent ahostsv4``): a name that resolves to loopback or not at all fails.

A probe that could not read what a check needs makes it "could not check: <why>" (the runner
does that from the probe errors), never a pass.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ascendprep import compat
from ascendprep.base.findings import Finding, Severity
from ascendprep.base.text import visible
from ascendprep.facts.blocker_model import NpuProcess, SocketUse
from ascendprep.facts.model import InterfaceAddress
from ascendprep.facts.netaddr import ip_literal, is_loopback
from ascendprep.facts.ports import blocking
from ascendprep.verify.checks.context import HostEvidence, NodeContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped

_NEEDS = ("node.reachable",)
BUSY_FIX = "stop the process (kill <pid>, then wait 10 s: the NPU is freed after it exits) or run the job on other NPUs"
PORTS_FIX = (
    "stop the process that holds the port, or move HCCL's block with HCCL_IF_BASE_PORT "
    "(the inventory's env:) or the rendezvous with training.master_port"
)
NIC_FIX = "bring the interface up with its address, or set training.socket_ifname to the NIC that holds the node's cluster address"


# -- npu.busy --------------------------------------------------------------------------------


def _process_text(process: NpuProcess) -> str:
    name = visible(process.name) if process.name else "no name shown (another container's process?)"
    memory = f", {process.memory_mb} MB" if process.memory_mb is not None else ""
    return f"pid {process.pid} ({name}{memory})"


def npu_busy(ctx: NodeContext, npu: int) -> Verdict:
    facts = ctx.facts
    table = facts.npu_processes
    if table is None:
        errors = facts.errors_for("npu_smi.procs")  # node-wide: the runner matches only this NPU's
        if errors:
            return could_not_check(errors[0].message, {"probe_errors": [e.message for e in errors]})
        return skipped("the gather did not read npu-smi's process table (facts from an older ascendprep)")
    where = ctx.npu_smi_places.get(npu)
    if where is None:
        return skipped(f"npu-smi does not list device id {npu} (npu.count and npu.health report that)")
    npu_id, chip = where
    held = [p for p in table.processes if p.npu_id == npu_id and p.chip == chip]
    evidence: Dict[str, Any] = {
        "npu_smi_id": npu_id,
        "chip": chip,
        "processes": [{"pid": p.pid, "name": p.name, "memory_mb": p.memory_mb} for p in held],
    }
    if held:
        pids = " ".join(str(p.pid) for p in held)
        return failed(
            f"NPU {npu_id} chip {chip} is held by "
            + ", ".join(_process_text(p) for p in held)
            + ": a job started now fails with EJ0001 (HCCP cannot start)",
            evidence,
            fix=f"on {ctx.name}, stop pid {pids} (kill {pids}; wait 10 s after it exits) or run the job on other NPUs",
        )
    if npu_id in table.idle_npus:
        return passed(f"no process holds NPU {npu_id}", evidence)
    odd = "; ".join(f"'{visible(row, 200)}'" for row in table.odd_rows[:3])
    evidence["odd_rows"] = list(table.odd_rows)
    return could_not_check(
        f"npu-smi's process table neither lists a process on NPU {npu_id} nor says it is idle"
        + (f"; rows it could not read: {odd}" if odd else ""),
        evidence,
    )


def busy_npus(hosts: Mapping[str, HostEvidence]) -> Dict[str, List[NpuProcess]]:
    """Per node, the processes npu-smi shows on its NPUs (nodes without any are left out)."""
    found: Dict[str, List[NpuProcess]] = {}
    for name, host in hosts.items():
        if host.facts is not None and host.facts.npu_processes is not None and host.facts.npu_processes.processes:
            found[name] = list(host.facts.npu_processes.processes)
    return found


def busy_npu_refusal(hosts: Mapping[str, HostEvidence]) -> Optional[Finding]:
    """The finding that stops ``verify --allreduce`` on busy NPUs (None: nothing holds an NPU).

    Why refuse: an all-reduce on an NPU another job holds fails with EJ0001 and says nothing
    new, or, where it starts, disturbs the job that runs there.
    """
    busy = busy_npus(hosts)
    if not busy:
        return None
    parts = [
        f"{node}: " + ", ".join(f"NPU {p.npu_id} chip {p.chip} {_process_text(p)}" for p in processes)
        for node, processes in busy.items()
    ]
    return Finding(
        "allreduce.busy_npus",
        Severity.ERROR,
        "the all-reduce was not started: NPUs are held by other processes (" + "; ".join(parts) + ")",
        "stop those processes (see npu.busy), or rerun with --allow-busy-npus to run on them anyway",
        evidence={
            node: [{"npu": p.npu_id, "chip": p.chip, "pid": p.pid, "name": p.name} for p in processes]
            for node, processes in busy.items()
        },
    )


# -- node.hccl_ports ----------------------------------------------------------------------


def _owner(item: SocketUse) -> str:
    if item.pid is None:
        return "a process ascendprep cannot see (run verify as root, or with ssh.sudo, to name it)"
    return f"pid {item.pid} ({visible(item.process) if item.process else 'name unknown'})"


_HCCL_BLOCK = "HCCL's host port block"


def hccl_ports(ctx: NodeContext) -> Verdict:
    facts = ctx.facts
    table = facts.port_sockets
    if table is None:
        return skipped("the gather did not read the host's sockets (facts from an older ascendprep)")
    if not table.ranges:
        return could_not_check("the gather did not say which ports it looked at")
    base = table.ranges[0][0]
    cann = facts.versions.cann_version
    try:
        low, high = compat.hccl_port_range(cann, base)
    except ValueError as exc:
        return could_not_check(str(exc))
    wanted: List[Tuple[str, int, int]] = [(_HCCL_BLOCK, low, high)]
    model = ctx.desired.inventory.model
    if ctx.name == ctx.desired.inventory.master.name:
        wanted.append(
            ("the master port (torchrun's rendezvous)", model.training.master_port, model.training.master_port)
        )
    evidence: Dict[str, Any] = {
        "source": table.source,
        "hccl_ports": f"{low}-{high}",
        "cann": cann,
        "master_port": model.training.master_port if len(wanted) > 1 else None,
    }
    problems: List[str] = []
    taken: List[Dict[str, Any]] = []
    for what, first, last in wanted:
        for item in blocking(table.sockets):
            # HCCL binds the host NIC's address, which a loopback-only socket does not collide
            # with; torchrun's store binds every address, which collides with any.
            if first <= item.local_port <= last and not (what == _HCCL_BLOCK and is_loopback(item.local_address)):
                verb = "listens on" if item.state == "LISTEN" else f"holds ({item.state})"
                problems.append(f"{_owner(item)} {verb} {item.local_address}:{item.local_port}, in {what}")
                taken.append(
                    {
                        "port": item.local_port,
                        "state": item.state,
                        "address": item.local_address,
                        "pid": item.pid,
                        "process": item.process,
                    }
                )
    evidence["taken"] = taken
    if problems:
        pids = sorted({str(t["pid"]) for t in taken if t["pid"] is not None})
        fix = (
            f"on {ctx.name}, stop pid {' '.join(pids)} (or "
            if pids
            else f"on {ctx.name}, find and stop the owner (ss -tanp) (or "
        ) + "move HCCL's block with HCCL_IF_BASE_PORT / the rendezvous with training.master_port)"
        return failed(
            "; ".join(problems) + ": a job started now fails with EJ0003 (port already bound)", evidence, fix=fix
        )
    looked = " and ".join(f"{a}-{b}" if a != b else str(a) for _, a, b in wanted)
    return passed(f"no process listens on or holds ports {looked} (read with {table.source})", evidence)


# -- node.host_nic ------------------------------------------------------------------------


def _matches(spec: str, ifname: str) -> bool:
    """HCCL_SOCKET_IFNAME semantics (docs/ascend-reference.md §5.2): ``eth`` prefix, ``=eth0`` exact, ``^``
    excludes (``^eth``, ``^=eth0``); a comma list; only exclusions means "all but these"."""
    items = [item for item in spec.split(",") if item]
    include = [item for item in items if not item.startswith("^")]
    exclude = [item[1:] for item in items if item.startswith("^")]

    def hit(item: str) -> bool:
        return ifname == item[1:] if item.startswith("=") else ifname.startswith(item)

    if any(hit(item) for item in exclude):
        return False
    return any(hit(item) for item in include) if include else ifname != "lo"


def _in_subnet(address: str, holder: InterfaceAddress) -> bool:
    """Whether ``address`` (an IPv4 literal: MASTER_ADDR as ``ip_literal`` gives it) is on the
    network of ``holder`` (an ``inet`` address, whatever text the host printed for it). Both are
    IPv4; text that is not an IPv4 address or prefix length is on no such network."""
    try:
        return ipaddress.IPv4Address(address) in ipaddress.IPv4Network((holder.address, holder.prefixlen), strict=False)
    except ValueError:
        return False


def _master_by_name(
    ctx: NodeContext, name: str, setting: str, ifname: str, holder: InterfaceAddress, evidence: Dict[str, Any]
) -> str | Verdict:
    """The address a master named by hostname has on this node (what torchrun and gloo there
    connect to: the first of getaddrinfo's answers), or the verdict when it has none to route to.
    A name that resolves to loopback (Debian's ``127.0.1.1 <hostname>`` line, copied to other
    nodes) or not at all is a known trap: the ranks look for the master on themselves, or nowhere."""
    resolved = ctx.facts.master_addresses
    evidence["master_name"] = name
    if resolved is None:
        errors = ctx.facts.errors_for("net.master")
        if errors:
            return could_not_check(errors[0].message, evidence)
        return passed(
            f"{setting}: {ifname} is up with {holder.address} (the master is named by hostname and was not "
            "looked up here: facts from an older ascendprep)",
            evidence,
        )
    evidence["master_resolves_to"] = list(resolved)
    hosts_fix = f"on {ctx.name}, map '{name}' to the master's cluster address in /etc/hosts (or DNS), or give the master's address as its host in the inventory"
    if not resolved:
        return failed(
            f"MASTER_ADDR {name} does not resolve on {ctx.name} (getent ahostsv4 finds no address): "
            "torchrun and gloo there cannot reach the master",
            evidence,
            fix=hosts_fix,
        )
    first = resolved[0]
    if is_loopback(first):
        return failed(
            f"MASTER_ADDR {name} resolves to {first} (loopback) on {ctx.name}: its ranks would look for the "
            "master on this node itself",
            evidence,
            fix=hosts_fix.replace("(or DNS)", f"instead of {first} (or DNS)"),
        )
    return first


def host_nic(ctx: NodeContext) -> Verdict:
    facts = ctx.facts
    inventory = ctx.desired.inventory
    spec = inventory.model.training.socket_ifname
    if_ip = ip_literal(ctx.node.node.host)
    if spec is None and if_ip is None:
        return skipped(
            "set_env.sh sets neither HCCL_SOCKET_IFNAME nor HCCL_IF_IP for this node (plan.hccl_if says why)"
        )
    if facts.links is None:
        return skipped("the gather did not read the host's NICs (facts from an older ascendprep)")
    links = {link.ifname: link for link in facts.links}
    v4 = [a for a in facts.addresses if a.family == "inet"]
    if spec is not None:
        setting = f"HCCL_SOCKET_IFNAME={spec}"
        named = sorted(name for name in links if _matches(spec, name))
        evidence: Dict[str, Any] = {"setting": setting, "matching": named}
        if not named:
            return failed(
                f"no interface of {ctx.name} matches {setting} (it has {', '.join(sorted(links)) or 'none'})",
                evidence,
                fix=NIC_FIX,
            )
        usable = [n for n in named if links[n].up and any(a.ifname == n for a in v4)]
        if not usable:
            states = ", ".join(
                f"{n} {'up' if links[n].up else 'down'}"
                + ("" if any(a.ifname == n for a in v4) else " without an IPv4 address")
                for n in named
            )
            return failed(f"{setting} matches {states}: HCCL finds no address to bind", evidence, fix=NIC_FIX)
        ifname = usable[0]
        holder = next(a for a in v4 if a.ifname == ifname)
    else:
        setting = f"HCCL_IF_IP={if_ip}"
        found = next((a for a in v4 if a.address == if_ip), None)
        evidence = {"setting": setting}
        if found is None:
            on = ", ".join(f"{a.ifname} {a.address}/{a.prefixlen}" for a in v4 if a.ifname != "lo") or "none"
            return failed(
                f"no interface of {ctx.name} holds {setting} (its IPv4 addresses: {on})",
                evidence,
                fix=f"on {ctx.name}, put {if_ip} back on its NIC (ip addr add {if_ip}/<prefix> dev <nic>), or correct the node's host in the inventory",
            )
        holder = found
        ifname = holder.ifname
        link = links.get(ifname)
        if link is None or not link.up:
            return failed(
                f"{ifname}, which holds {setting}, is down",
                {**evidence, "interface": ifname},
                fix=f"on {ctx.name}, ip link set {ifname} up (and check its cable)",
            )
    evidence.update({"interface": ifname, "address": f"{holder.address}/{holder.prefixlen}"})
    by_address = ip_literal(inventory.master.host)
    resolved = (
        by_address
        if by_address is not None
        else _master_by_name(ctx, inventory.master.host, setting, ifname, holder, evidence)
    )
    if isinstance(resolved, Verdict):
        return resolved
    master: str = resolved
    evidence["master_addr"] = master
    label = master if by_address is not None else f"{inventory.master.host} ({master})"
    route = facts.route_to_master
    if _in_subnet(master, holder) or master == holder.address:
        return passed(
            f"{setting}: {ifname} is up with {holder.address}/{holder.prefixlen}, on MASTER_ADDR {label}'s network",
            evidence,
        )
    if route is None:
        errors = facts.errors_for("net.route")
        return could_not_check(
            errors[0].message if errors else f"the route to MASTER_ADDR {label} was not read", evidence
        )
    evidence["route"] = {"dev": route.dev, "via": route.via, "src": route.src}
    if route.dev is None:
        return failed(
            f"{ctx.name} has no route to MASTER_ADDR {label}",
            evidence,
            fix=f"on {ctx.name}, add a route to {master} through {ifname}",
        )
    if route.dev != ifname:
        return failed(
            f"{setting} binds {ifname} ({holder.address}), but the route to MASTER_ADDR {label} leaves through "
            f"{route.dev}: HCCL and gloo advertise an address on the wrong network",
            evidence,
            fix=f"on {ctx.name}, route {master} through {ifname}, or set training.socket_ifname to {route.dev}",
        )
    return passed(
        f"{setting}: {ifname} is up with {holder.address} and routes to MASTER_ADDR {label}"
        + (f" via {route.via}" if route.via else ""),
        evidence,
    )


CHECKS: List[Check] = [
    Check(
        "npu.busy",
        ("npu",),
        "npu",
        Severity.ERROR,
        "no process holds the NPU (npu-smi info's process table)",
        BUSY_FIX,
        npu_busy,
        probes=("npu_smi.procs",),
        requires=("node.reachable", "node.npu_smi"),
    ),
    Check(
        "node.hccl_ports",
        ("node",),
        "node",
        Severity.ERROR,
        "no process listens on or holds HCCL's host ports or the master port",
        PORTS_FIX,
        hccl_ports,
        probes=("ports",),
        requires=_NEEDS,
    ),
    Check(
        "node.host_nic",
        ("node",),
        "node",
        Severity.ERROR,
        "the NIC of HCCL_SOCKET_IFNAME / HCCL_IF_IP exists, is up, holds the address and reaches MASTER_ADDR",
        NIC_FIX,
        host_nic,
        probes=("net.links", "net.addrs", "net.master"),
        requires=_NEEDS,
    ),
]
