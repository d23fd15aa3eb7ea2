"""The desired state of a cluster: everything ``apply`` will make true, computed from the inventory.

Pure: ``build_desired(inventory)`` reads nothing but the inventory and the shipped data. What a
host already has (its reserved ports, its current values) enters later, in the diff.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Union

from ascendprep import compat
from ascendprep.base.findings import Finding, Severity
from ascendprep.base.paths import ENV_SH, RANK_TABLE, SET_ENV_SH
from ascendprep.desired import envfiles
from ascendprep.desired.ranktable import build_rank_table, render_rank_table
from ascendprep.desired.ranktable2 import rank_table_v2_from_facts, topology_files
from ascendprep.inventory import sysctl
from ascendprep.inventory.addressing import IpPlan, plan_device_ips
from ascendprep.inventory.load import Inventory
from ascendprep.inventory.model import Node
from ascendprep.inventory.ranktable2_rules import check_rank_table_v2
from ascendprep.inventory.ranktable_rules import RANK_TABLE_MAX_BYTES, check_path, check_rank_table

if TYPE_CHECKING:
    from ascendprep.facts.model import HostFacts

SOFTWARE_KEYS = ("cann", "driver", "firmware", "python", "torch", "torch_npu", "torchvision")


@dataclass(frozen=True)
class HccnSettings:
    """What ``hccn_tool`` should report for one NPU."""

    npu: int
    ip: str
    netmask: str
    gateway: Optional[str]
    netdetect: Optional[str]
    tls: Optional[int]


@dataclass(frozen=True)
class FileToWrite:
    """A file apply writes on a node, with the content it must have (facts.ManagedFile is the
    host's side: whether it exists and its sha256)."""

    path: str
    content: str
    mode: int = 0o644
    #: "cluster" when identical on every node, "node" when rendered per node.
    scope: str = "node"


@dataclass
class NodeDesired:
    node: Node
    rank: int
    nproc: int
    hccn: list[HccnSettings]
    #: Kernel settings with "at least" semantics (somaxconn, tcp_max_syn_backlog, overrides).
    sysctl_minimums: dict[str, Union[int, str]]
    #: Port ranges that must be in net.ipv4.ip_local_reserved_ports (merged with the host's).
    reserved_ports: list[tuple[int, int]]
    files: list[FileToWrite]
    torchrun: str


@dataclass
class DesiredState:
    inventory: Inventory
    ipplan: IpPlan
    nodes: dict[str, NodeDesired]
    software: dict[str, Optional[str]]
    firewall: str
    #: HCCL's host port range for the CANN the inventory expects (compat.hccl_port_range):
    #: what the reserved ports must cover and what a firewall must let through.
    hccl_ports: tuple[int, int] = field(default_factory=lambda: compat.hccl_port_range(None))
    findings: list[Finding] = field(default_factory=list)

    @property
    def invalid(self) -> bool:
        """Rule violations in the inventory itself (exit code "invalid input")."""
        return any(f.severity is Severity.ERROR and f.id.startswith(("ipplan.", "ranktable.")) for f in self.findings)


def _if_ip(node: Node) -> Optional[str]:
    try:
        return str(ipaddress.IPv4Address(node.host))
    except ValueError:
        return None


def torchrun_command(
    python_path: str,
    nnodes: int,
    node_rank: int,
    nproc: int,
    master_addr: str,
    master_port: int,
    script: str = "train.py",
) -> str:
    """The exact launch line for one node (``python -m torch.distributed.run`` is torchrun)."""
    argv = [
        python_path,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--node_rank={node_rank}",
        f"--nproc_per_node={nproc}",
        f"--master_addr={master_addr}",
        f"--master_port={master_port}",
        script,
    ]
    return f". {shlex.quote(SET_ENV_SH)} && " + " ".join(shlex.quote(a) for a in argv)


def hccl_ports(inventory: Inventory) -> tuple[int, int]:
    """HCCL's host port range for the CANN the inventory expects: the one place it is decided."""
    return compat.hccl_port_range(inventory.model.software.cann)


def required_port_ranges(inventory: Inventory) -> list[tuple[int, int]]:
    """HCCL's host port range for the expected CANN, plus any the inventory reserves itself."""
    ranges = [hccl_ports(inventory)]
    extra = inventory.model.sysctl.get(sysctl.RESERVED_PORTS)
    if extra is not None:
        ranges.extend(sysctl.parse_port_ranges(str(extra)))
    return sysctl.normalise(ranges)


def _software_findings(versions: dict[str, Optional[str]], chip: Optional[str]) -> list[Finding]:
    findings = []
    for issue in compat.check_stack(versions, chip=chip):
        severity = Severity(issue.severity)
        findings.append(
            Finding(issue.id, severity, issue.message, issue.fix, evidence={"sources": list(issue.sources)})
        )
    return findings


def rank_table_findings(table: dict, inventory: Inventory, rendered_bytes: Optional[int] = None) -> list[Finding]:
    """The HCCL parser rules the planned table breaks (ranktable_rules), as plan errors: a table
    HCCL would refuse is never written (torch_npu would drop it silently)."""
    # The indented rendering is longer than the compact JSON HCCL measures: below the cap, so is that.
    compact = rendered_bytes if rendered_bytes is not None and rendered_bytes <= RANK_TABLE_MAX_BYTES else None
    violations = check_path(RANK_TABLE) + check_rank_table(table, inventory.product, compact_bytes=compact)
    return [
        Finding(
            f"ranktable.{v.rule}",
            Severity.ERROR,
            f"the rank table HCCL would load breaks rule {v}",
            "see docs/ranktable-rules.md; change the inventory so the table passes",
            evidence={"rule": v.rule},
        )
        for v in violations
    ]


def v2_rank_table_pending(inventory: Inventory) -> Finding:
    """Ascend 950: where the rank table comes from. HCCL there accepts only version 2.0 (EI0014
    otherwise), whose addresses are the NPUs' UB EIDs, read from the hosts (``hccn_tool -g
    -dev_info``): the table is planned once every host is read (:func:`plan_rank_table_v2`), never
    from the inventory alone, and never as 1.0, which would only make HCCL fail."""
    files = ", ".join(topology_files(inventory)) or "none documented"
    return Finding(
        "ranktable.v2_from_hosts",
        Severity.INFO,
        f"{inventory.product.title}: HCCL reads only rank table 2.0, whose addresses are each NPU's EIDs read on the hosts; the live plan builds it from every host's 'hccn_tool -g -dev_info' and writes it to {RANK_TABLE}. HCCL also reads the factory topology file ({files})",
        "run 'ascendprep plan' against the hosts to plan the table (docs/ascend950.md)",
    )


def plan_rank_table_v2(desired: DesiredState, facts: Mapping[str, Optional["HostFacts"]]) -> list[Finding]:
    """Ascend 950: plan the rank table 2.0 built from every node's ``-dev_info`` (its EIDs and UB
    ports) as the managed file ``RANK_TABLE`` on every node, the same bytes everywhere.

    ``facts``: per node name, what plan (or apply's re-read) gathered; None or absent for a node
    not read. The table is all or nothing: a node whose EIDs were not read gets an error finding
    naming it and no node gets a table (a table missing ranks makes HCCL fail on every server,
    EI0014, or hang waiting for them). A table that breaks one of HCCL's 2.0 rules (V1-V9,
    :mod:`ascendprep.inventory.ranktable2_rules`) is not planned either: an error per rule.
    Returns the findings: errors, and none of the desired state's nodes gains the file; or one
    INFO finding saying what was planned and the factory topology file HCCL reads beside the
    table (``/usr/local/Ascend/driver/topo/950/<product>.json``: the job needs it visible, a
    container that mounts only ``driver/lib64`` fails with EI0014)."""
    inventory = desired.inventory
    single = [node.name for node in inventory.nodes if node.npus < 2]
    if single:
        # A one-card server has no UB port (950 guide): there is no EID to build the table from.
        return [
            Finding(
                "ranktable.v2_single_card",
                Severity.INFO,
                f"{inventory.product.title}: no rank table 2.0 is planned: {', '.join(single[:5])}{' …' if len(single) > 5 else ''} has one card, which has no UB port and so no EID for the table",
                "launch with root-info (no RANK_TABLE_FILE)",
            )
        ]
    read = {name: host for name, host in facts.items() if host is not None}
    table, problems = rank_table_v2_from_facts(inventory, read)
    if table is None:
        by_node: dict[str, list[str]] = {}
        for problem in problems:
            name = problem.split(" ", 1)[0].rstrip(":")
            by_node.setdefault(name if name in desired.nodes else "", []).append(problem)
        return [
            Finding(
                "ranktable.v2_eids",
                Severity.ERROR,
                f"{name or 'the cluster'}: no rank table 2.0 is planned for any node: the UB EIDs it needs were not all read ({'; '.join(lines)})",
                "make 'hccn_tool -g -dev_info -i N' answer on every NPU of every node (docs/ascend950.md), then plan again",
                node=name or None,
            )
            for name, lines in by_node.items()
        ]
    content = render_rank_table(table)
    violations = check_rank_table_v2(table, compact_bytes=len(content.encode()))
    if violations:
        return [
            Finding(
                f"ranktable.{v.rule}",
                Severity.ERROR,
                f"the rank table 2.0 built from the hosts' EIDs breaks rule {v}; it is not planned",
                "see docs/ascend950.md (rank table 2.0 rules V1-V9); fix what the hosts report or the inventory",
                evidence={"rule": v.rule},
            )
            for v in violations
        ]
    for node in desired.nodes.values():
        node.files = [f for f in node.files if f.path != RANK_TABLE]
        node.files.append(FileToWrite(RANK_TABLE, content, scope="cluster"))
    files = ", ".join(topology_files(inventory)) or "none documented"
    return [
        Finding(
            "ranktable.v2_planned",
            Severity.INFO,
            f"rank table 2.0 ({table['rank_count']} ranks, from every node's EIDs) planned as {RANK_TABLE} on every node; HCCL reads the factory topology file {files} beside it",
            f"point the job at the table with RANK_TABLE_FILE={RANK_TABLE} (training.rank_table: true writes it to set_env.sh), and keep all of /usr/local/Ascend/driver visible in containers",
            evidence={"topology_files": list(topology_files(inventory))},
        )
    ]


def build_desired(inventory: Inventory) -> DesiredState:
    """Everything the cluster should look like once applied, plus every rule finding."""
    plan = plan_device_ips(inventory)
    model = inventory.model
    tls = None if model.device_network.tls is None else int(model.device_network.tls)
    nnodes = len(inventory.nodes)
    master = inventory.master
    ports = required_port_ranges(inventory)
    minimums = sysctl.minimums(model.sysctl)
    env_sh = envfiles.render_env_sh(model.env, nodes=nnodes)
    rank_table: Optional[str] = None
    table_findings: list[Finding] = []
    if inventory.product.is_950:
        # HCCL on the 950 reads only 2.0, built from the NPUs' EIDs (desired.ranktable2): never a 1.x table.
        table_findings.append(v2_rank_table_pending(inventory))
    else:
        table = build_rank_table(inventory, plan)
        rank_table = render_rank_table(table)
        # Address rule errors are reported once, by the IP plan (a duplicate address would repeat as R11).
        if not any(f.severity is Severity.ERROR for f in plan.findings):
            table_findings = rank_table_findings(table, inventory, len(rank_table))
    python_path = model.software.python_path

    nodes: dict[str, NodeDesired] = {}
    if_ips = {node.name: _if_ip(node) for node in inventory.nodes}
    rank = 0
    for node in inventory.nodes:
        if_ip = if_ips[node.name]
        hccn = [HccnSettings(a.npu, a.ip, a.netmask, a.gateway, a.detect, tls) for a in plan.by_node.get(node.name, [])]
        rendezvous = envfiles.rendezvous_values(
            master_addr=master.host,
            master_port=model.training.master_port,
            nnodes=nnodes,
            node_rank=node.index,
            nproc_per_node=node.npus,
            if_ip=if_ip,
            socket_ifname=model.training.socket_ifname,
            rank_table=model.training.rank_table,
            logic_superpod=node.logical_super_pod,
        )
        files = [
            FileToWrite(ENV_SH, env_sh, scope="cluster"),
            FileToWrite(SET_ENV_SH, envfiles.render_set_env_sh(rendezvous, bind_address=if_ip)),
        ]
        if rank_table is not None:
            files.append(FileToWrite(RANK_TABLE, rank_table, scope="cluster"))
        nodes[node.name] = NodeDesired(
            node=node,
            rank=rank,
            nproc=node.npus,
            hccn=hccn,
            sysctl_minimums=minimums,
            reserved_ports=ports,
            files=files,
            torchrun=torchrun_command(
                python_path, nnodes, node.index, node.npus, master.host, model.training.master_port
            ),
        )
        rank += node.npus

    software = {key: getattr(model.software, key) for key in SOFTWARE_KEYS}
    findings = list(plan.findings) + table_findings + _software_findings(software, inventory.product.compat_chip)
    for node in inventory.nodes:
        if if_ips[node.name] is None and model.training.socket_ifname is None:
            findings.append(
                Finding(
                    "plan.hccl_if",
                    Severity.WARNING,
                    f"{node.name}: host '{node.host}' is a name, so HCCL_IF_IP cannot be set; HCCL will pick a NIC by its own order",
                    "set training.socket_ifname (HCCL_SOCKET_IFNAME) or give the node's IP as host",
                    node=node.name,
                )
            )
    return DesiredState(inventory, plan, nodes, software, model.firewall, hccl_ports(inventory), findings)
