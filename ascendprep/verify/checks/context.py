"""What the checks look at: per host what verify learned (facts, pings, or why not), and the plan.

Plain data, filled either by a live run (:mod:`ascendprep.run.evidence`) or from a saved
bundle (:mod:`ascendprep.run.bundle`), so that both evaluate exactly the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cached_property
from typing import Dict, Optional, Tuple

from ascendprep.desired.state import DesiredState, HccnSettings, NodeDesired
from ascendprep.facts.model import HccsPingResult, HostFacts, PingResult
from ascendprep.plan.drift import NpuPort, npu_port
from ascendprep.verify.mesh import PingPlan


def chip_devids(facts: HostFacts) -> Dict[Tuple[int, int], int]:
    """(npu-smi NPU id, chip) → hccn device id: NPU id × chip count + chip (A3 NPU n = devids 2n, 2n+1)."""
    mapping: Dict[Tuple[int, int], int] = {}
    if facts.npu_smi is None:
        return mapping
    for device in facts.npu_smi.devices:
        for chip in range(device.chip_count):
            mapping[(device.npu_id, chip)] = device.npu_id * device.chip_count + chip
    return mapping


@dataclass(frozen=True)
class HostEvidence:
    """One host's evidence: its facts (None when they could not be gathered) and its pings.

    ``error``/``error_kind`` say why gathering failed (kinds of
    :data:`ascendprep.remote.errors.HOST_ERROR_KINDS`). ``pings`` is None when no ping phase ran on
    this host; ``ping_error`` says why a ping phase that was needed did not complete.
    The raw transcripts are kept for the evidence bundle.
    """

    node: str
    address: str
    facts: Optional[HostFacts]
    error: Optional[str] = None
    error_kind: Optional[str] = None
    seconds: float = 0.0
    gather_stdout: str = ""
    gather_stderr: str = ""
    pings: Optional[Tuple[PingResult, ...]] = None
    ping_error: Optional[str] = None
    ping_stdout: str = ""
    ping_stderr: str = ""
    ping_seconds: float = 0.0
    #: A3: this node's HCCS pings (checks/hccs.py plans them); None when no HCCS phase ran here.
    hccs_pings: Optional[Tuple[HccsPingResult, ...]] = None
    hccs_error: Optional[str] = None
    hccs_stdout: str = ""

    @property
    def gathered(self) -> bool:
        return self.facts is not None


@dataclass(frozen=True)
class NodeContext:
    """A node's desired state next to its evidence."""

    desired: DesiredState
    node: NodeDesired
    host: HostEvidence

    @property
    def name(self) -> str:
        return self.node.node.name

    @cached_property
    def facts(self) -> HostFacts:
        """The facts; checks only run on nodes whose facts were gathered (node.reachable).
        Cached: read ~200 times per host; a missing one raises each time (nothing is cached)."""
        if self.host.facts is None:
            raise RuntimeError(f"{self.name}: no facts (a check ran without node.reachable)")
        return self.host.facts

    @cached_property
    def _planned(self) -> Dict[int, HccnSettings]:
        return {settings.npu: settings for settings in self.node.hccn}

    def planned(self, npu: int) -> HccnSettings:
        """The NPU's planned settings (asked ~5 times per NPU: a map, not a search)."""
        settings = self._planned.get(npu)
        if settings is None:
            raise KeyError(f"{self.name}: no planned settings for NPU {npu}")
        return settings

    @cached_property
    def _ports(self) -> Dict[int, NpuPort]:
        return {}

    def port(self, npu: int) -> NpuPort:
        """The NPU's live values beside its /etc/hccn.conf entry and the stale keys
        (:func:`ascendprep.plan.drift.npu_port`): worked out once per NPU for the network checks,
        which each read it (network.ip, hccn_conf, gateway, netdetect, link, ...)."""
        port = self._ports.get(npu)
        if port is None:
            port = self._ports[npu] = npu_port(self.facts, npu)
        return port

    @property
    def npus(self) -> Tuple[int, ...]:
        return tuple(settings.npu for settings in self.node.hccn)

    @cached_property
    def npu_smi_places(self) -> Dict[int, Tuple[int, int]]:
        """hccn device id → (npu-smi NPU id, chip) of this node's npu-smi listing: npu.health and
        npu.busy ask it for every NPU, so it is worked out once per node, not 16 times."""
        return {devid: place for place, devid in chip_devids(self.facts).items()}


@dataclass(frozen=True)
class ClusterContext:
    """Every node's evidence, the ping plan, and the day compatibility is judged on."""

    desired: DesiredState
    hosts: Dict[str, HostEvidence]
    pings: Optional[PingPlan]
    today: date
    #: The node a ``verify --local`` run read (its peers were not, and plans that need them
    #: place them as the inventory does); None for every other run.
    local_node: Optional[str] = None

    def gathered(self) -> Dict[str, HostFacts]:
        """Facts of the nodes that were read, in inventory order."""
        out: Dict[str, HostFacts] = {}
        for node in self.desired.inventory.nodes:
            host = self.hosts.get(node.name)
            if host is not None and host.facts is not None:
                out[node.name] = host.facts
        return out
