"""The desired state of a cluster: everything ``apply`` will make true, computed from the inventory.

Pure: ``build_desired(inventory)`` reads nothing but the inventory and the shipped data. What a
host already has (its reserved ports, its current values) enters later, in the diff.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass, field
from typing import Optional, Union

from ascendprep import compat
from ascendprep.base.findings import Finding, Severity
from ascendprep.base.paths import ENV_SH, RANK_TABLE, SET_ENV_SH
from ascendprep.desired import envfiles
from ascendprep.desired.ranktable import build_rank_table, render_rank_table
from ascendprep.desired.ranktable2 import topology_files
from ascendprep.inventory import sysctl
from ascendprep.inventory.addressing import IpPlan, plan_device_ips
from ascendprep.inventory.load import Inventory
from ascendprep.inventory.model import Node
from ascendprep.inventory.ranktable_rules import RANK_TABLE_MAX_BYTES, check_path, check_rank_table

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
    """Ascend 950: why plan writes no rank table. HCCL there accepts only version 2.0 (EI0014
    otherwise), whose addresses are the NPUs' UB EIDs, read from the hosts (``hccn_tool -g
    -dev_info``); :func:`ascendprep.desired.ranktable2.build_rank_table_v2` builds and checks it
    from them. A 1.0 table, which the earlier generations get here, would only make HCCL fail."""
    files = ", ".join(topology_files(inventory)) or "none documented"
    return Finding(
        "ranktable.v2_from_hosts",
        Severity.INFO,
        f"{inventory.product.title}: HCCL reads only rank table 2.0, whose addresses are each NPU's EIDs read on the hosts; plan writes no 1.0 table for it. HCCL also reads the factory topology file ({files})",
        "launch with root-info (no RANK_TABLE_FILE), or build the 2.0 table from the EIDs of 'hccn_tool -g -dev_info -i N' (docs/ascend950.md)",
    )


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
