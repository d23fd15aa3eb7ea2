"""A healthy cluster, built as facts: what every check should pass on (faults are derived from it).

The facts are made from the desired state itself, the way a host that ascendprep applied looks,
with tool output spellings taken from docs/ascend-reference.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ascendprep.desired.envfiles import render_sysctl_conf
from ascendprep.desired.state import DesiredState, build_desired
from ascendprep.facts.blocker_model import LinkState, NpuProcessTable, PortSockets
from ascendprep.facts.jobenv_model import JobEnv, NnalVersion, ShellEnv, TorchNpuImport, Visibility
from ascendprep.facts.model import (
    CounterSample,
    Firewall,
    FirewallTool,
    HccnConf,
    HostFacts,
    InterfaceAddress,
    LinkRecord,
    LinkStat,
    LldpNeighbor,
    ManagedFile,
    NpuFacts,
    NpuHealth,
    NpuSmiDevice,
    NpuSmiList,
    PingResult,
    PythonEnv,
    SysctlFile,
    TlsState,
    VersionFile,
    Versions,
)
from ascendprep.facts.optics import OpticalInfo, parse_optical_info
from ascendprep.inventory import sysctl
from ascendprep.inventory.load import inventory_from_text
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.model import CheckResult
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import run_checks
from ascendprep.verify.mesh import PingPlan, plan_pings

#: A healthy module's ``-optical -g`` (driver format, the MindCluster capture's thresholds).
HEALTHY_OPTICAL_TEXT = (
    Path(__file__).resolve().parent / "fixtures" / "probes" / "hccn" / "optical_get_thresholds.out"
).read_text()


def healthy_optics() -> OpticalInfo:
    return parse_optical_info(HEALTHY_OPTICAL_TEXT)


INVENTORY = (
    """\
name: unit
product: atlas-a2
npus_per_node: 8
device_network:
  subnet: 10.20.0.0/24
  gateway: 10.20.0.254
  detect: gateway
  tls: false
nodes:
  - name: node1
    host: 10.231.0.11
    cabling:
"""
    + "".join(f"      {npu}: {{switch: leaf-{npu + 1}, port: 200GE1/0/1}}\n" for npu in range(8))
    + """\
  - name: node[2-4]
    host: 10.231.0.[12-14]
firewall: check
software:
  cann: 8.2.RC1
  driver: 25.2.0
  firmware: 7.7.0.1.231
  torch: 2.6.0
  torch_npu: 2.6.0
  torchvision: 0.21.0
  python: "3.10"
"""
)

#: The day compatibility is judged on in these tests (the stack above is a documented one).
TODAY = date(2025, 6, 1)

NOW = "Wed Jun  7 10:08:28 2023"
BOOT = "Tue Jun  6 08:00:00 2023"


def desired_state(text: str = INVENTORY) -> DesiredState:
    return build_desired(inventory_from_text(text))


#: ``-stat -g`` read twice 5 s apart on a healthy idle port: traffic counters move, a few FCS
#: errors and pause frames since boot do not (issue 20: counts since boot are information only).
HEALTHY_STAT_SAMPLES = (
    CounterSample(
        1,
        1000.0,
        {
            "mac_rx_fcs_err_pkt_num": 12,
            "mac_rx_pfc_pkt_num": 3400,
            "mac_rx_total_pkt_num": 9000,
            "roce_rx_err_pkt_num": 0,
        },
    ),
    CounterSample(
        2,
        1005.0,
        {
            "mac_rx_fcs_err_pkt_num": 12,
            "mac_rx_pfc_pkt_num": 3410,
            "mac_rx_total_pkt_num": 9500,
            "roce_rx_err_pkt_num": 0,
        },
    ),
)


def healthy_facts(desired: DesiredState, node: str) -> HostFacts:
    wanted = desired.nodes[node]
    npus: Dict[int, NpuFacts] = {}
    conf: Dict[int, Dict[str, str]] = {}
    for settings in wanted.hccn:
        npus[settings.npu] = NpuFacts(
            devid=settings.npu,
            ip=settings.ip,
            netmask=settings.netmask,
            gateway=settings.gateway,
            gateway_iface=f"eth{settings.npu}" if settings.gateway else None,
            netdetect=settings.netdetect,
            link="UP",
            net_health="Success",
            lldp=LldpNeighbor(
                system_name=f"leaf-{settings.npu + 1}",
                port_ifname=f"200GE1/0/{wanted.node.index + 1}",
                port_id=f"Ifname: 200GE1/0/{wanted.node.index + 1}",
                chassis_id="MAC: 00:e0:fc:00:00:01",
            ),
            tls=TlsState(switch=0, preconfigured=1, certificates=True),
            link_stat=LinkStat(current_time=NOW, up_count=1, down_count=0, records=(LinkRecord(BOOT, "UP"),)),
            optical_present=True,
            speed_mbps=200000,
            optics=healthy_optics(),
            duplex="full",
            fec="rs",
            stat_samples=HEALTHY_STAT_SAMPLES,
        )
        entry = {"address": settings.ip, "netmask": settings.netmask}
        if settings.netdetect:
            entry["netdetect"] = settings.netdetect
        if settings.gateway:
            entry["gateway"] = settings.gateway
        conf[settings.npu] = entry
    raw = "".join(f"{key}_{npu}={value}\n" for npu, entry in conf.items() for key, value in entry.items())
    ports = sysctl.format_port_ranges(wanted.reserved_ports)
    live_sysctl = {key: f"{value}" for key, value in wanted.sysctl_minimums.items()}
    live_sysctl[sysctl.RESERVED_PORTS] = ports
    software = desired.software
    return HostFacts(
        hostname=node,
        addresses=(
            InterfaceAddress("lo", "inet", "127.0.0.1", 8),
            InterfaceAddress("eth0", "inet", wanted.node.host, 24),
        ),
        hostname_addresses=(wanted.node.host,),
        # Issue 17's facts: no process on the NPUs, nothing on HCCL's ports, eth0 up.
        npu_processes=NpuProcessTable(idle_npus=tuple(range(wanted.nproc))),
        port_sockets=PortSockets("ss", ranges=((60000, 60031), (29500, 29500))),
        links=(
            LinkState("lo", ("LOOPBACK", "UP", "LOWER_UP"), "UNKNOWN"),
            LinkState("eth0", ("BROADCAST", "MULTICAST", "UP", "LOWER_UP"), "UP"),
        ),
        os_release={"ID": "debian", "VERSION_ID": "12"},
        arch="x86_64",
        ascend_home="/usr/local/Ascend",
        hccn_tool="/usr/local/bin/hccn_tool",
        npu_smi_tool="/usr/local/bin/npu-smi",
        npus=npus,
        hccn_conf=HccnConf(raw=raw, devices=conf),
        npu_smi=NpuSmiList(
            total_count=wanted.nproc, devices=tuple(NpuSmiDevice(npu_id=i) for i in range(wanted.nproc))
        ),
        npu_health=tuple(NpuHealth(npu_id=i, chip=0, health="OK") for i in range(wanted.nproc)),
        npu_firmware={i: software["firmware"] or "7.5.0.1.129" for i in range(wanted.nproc)},
        sysctl=live_sysctl,
        sysctl_file=SysctlFile(raw=render_sysctl_conf(live_sysctl), values=dict(live_sysctl)),
        firewall=Firewall(
            ufw=FirewallTool(installed=False),
            firewalld=FirewallTool(installed=False),
            nftables=FirewallTool(installed=True, active=False),
        ),
        managed_files={
            f.path: ManagedFile(f.path, True, hashlib.sha256(f.content.encode()).hexdigest()) for f in wanted.files
        },
        versions=Versions(
            driver=VersionFile("/usr/local/Ascend/driver/version.info", {"Version": software["driver"] or "24.1.rc2"}),
            firmware=VersionFile(
                "/usr/local/Ascend/firmware/version.info", {"Version": software["firmware"] or "7.5.0.1.129"}
            ),
            toolkit=VersionFile(
                "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info",
                {"version": software["cann"] or "8.0.RC3"},
            ),
        ),
        python=PythonEnv(
            interpreter="/usr/bin/python3",
            python_version="3.10.12",
            executable="/usr/bin/python3",
            packages={
                "torch": software["torch"],
                "torch_npu": software["torch_npu"],
                "torchvision": software["torchvision"],
            },
        ),
        job=healthy_job(desired, node),
    )


#: What a job needs, as a node whose container (--exec-via) sees everything reports it.
JOB_ITEMS = tuple(f"dev:/dev/davinci{i}" for i in range(8)) + (
    "dev:/dev/davinci_manager",
    "dev:/dev/hisi_hdc",
    "dev:/dev/devmm_svm",
    "tool:hccn_tool",
    "file:/etc/hccn.conf",
    "file:/etc/ascendprep/env.sh",
    "file:/etc/ascendprep/set_env.sh",
    "lib:/usr/local/Ascend/driver/lib64",
)


def healthy_job(desired: DesiredState, node: str) -> JobEnv:
    """The job environment of a node that was applied and runs its jobs in a full container."""
    cann = desired.software["cann"] or "8.0.RC3"
    return JobEnv(
        login=ShellEnv({"HCCL_CONNECT_TIMEOUT": None, "RANK_TABLE_FILE": None}),
        launch=ShellEnv(
            {"HCCL_CONNECT_TIMEOUT": "1200", "RANK_TABLE_FILE": None}, sourced="/etc/ascendprep/set_env.sh"
        ),
        rank_tables=("/etc/ascendprep/rank_table.json",),
        visible=Visibility(present=JOB_ITEMS),
        host_visible=Visibility(present=JOB_ITEMS, via="docker exec trainer"),
        nnal=NnalVersion("/usr/local/Ascend/nnal/atb/latest/version.info", version=cann, build=f"{cann}.B030"),
        torch_npu=TorchNpuImport(ok=True, version=desired.software["torch_npu"] or "2.1.0.post8", rc=0),
    )


def cluster_evidence(
    desired: DesiredState,
    facts: Optional[Dict[str, Optional[HostFacts]]] = None,
    mesh: str = "ring",
    lost: Tuple[Tuple[str, int, str], ...] = (),
) -> Tuple[Dict[str, HostEvidence], PingPlan]:
    """Evidence for every node: ``facts`` overrides (None = unreachable), pings answered unless
    ``(source node, npu, target ip)`` is in ``lost``."""
    facts = dict(facts or {})
    for node in desired.inventory.nodes:
        facts.setdefault(node.name, healthy_facts(desired, node.name))
    plan = plan_pings(desired, facts, mesh)
    by_source = plan.by_source()
    hosts: Dict[str, HostEvidence] = {}
    for node in desired.inventory.nodes:
        node_facts = facts[node.name]
        if node_facts is None:
            hosts[node.name] = HostEvidence(
                node.name, node.host, None, error=f"{node.name}: connection refused", error_kind="unreachable"
            )
            continue
        pings = tuple(
            PingResult(npu, target, ok=True, sent=3, received=3, loss_percent=0.0)
            if (node.name, npu, target) not in lost
            else PingResult(
                npu, target, ok=False, sent=3, received=0, loss_percent=100.0, error="3 of 3 packets lost (100% loss)"
            )
            for npu, target in by_source.get(node.name, [])
        )
        hosts[node.name] = HostEvidence(node.name, node.host, node_facts, seconds=1.0, pings=pings)
    return hosts, plan


def with_npu(facts: HostFacts, npu: int, **changes: object) -> HostFacts:
    """``facts`` with NPU ``npu``'s live values changed."""
    npus = dict(facts.npus)
    npus[npu] = replace(npus[npu], **changes)
    return replace(facts, npus=npus)


def judge(
    desired: DesiredState,
    facts: Optional[Dict[str, Optional[HostFacts]]] = None,
    lost: Tuple[Tuple[str, int, str], ...] = (),
    selection: Optional[Selection] = None,
) -> List[CheckResult]:
    """Every check's results on the cluster of :func:`cluster_evidence`, judged on :data:`TODAY`."""
    hosts, plan = cluster_evidence(desired, facts, lost=lost)
    return run_checks(desired, hosts, plan, selection or Selection(), today=TODAY)


class VerifyCluster:
    """The healthy 4-node cluster above, ready to judge: what the ``verify_cluster`` fixture
    (tests/conftest.py) gives a test. ``desired`` is :data:`INVENTORY`'s desired state."""

    def __init__(self) -> None:
        self.desired = desired_state()

    def healthy(self, node: str) -> HostFacts:
        return healthy_facts(self.desired, node)

    def judge(
        self,
        facts: Optional[Dict[str, Optional[HostFacts]]] = None,
        lost: Tuple[Tuple[str, int, str], ...] = (),
        selection: Optional[Selection] = None,
    ) -> List[CheckResult]:
        return judge(self.desired, facts, lost, selection)
