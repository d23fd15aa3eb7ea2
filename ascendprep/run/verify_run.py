"""What one ``verify`` is asked and what it produced: shared by the SSH flow (commands/verify.py)
and the node-local one (run/node_local.py), so that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from rich.console import Console

from ascendprep.base.findings import Finding
from ascendprep.base.limits import KEEP_RUNS_DEFAULT
from ascendprep.desired.state import build_desired
from ascendprep.remote.sudo import SudoPassword
from ascendprep.run.common import print_invalid_inventory

if TYPE_CHECKING:  # pragma: no cover
    from ascendprep.desired.state import DesiredState
    from ascendprep.inventory.load import Inventory
    from ascendprep.verify.checks.context import HostEvidence
    from ascendprep.verify.checks.registry import Selection
    from ascendprep.verify.mesh import PingPlan


@dataclass(frozen=True)
class VerifyOptions:
    inventory: Optional[Path]
    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()
    output_format: str = "text"
    junit: Optional[Path] = None
    mesh: Optional[str] = None
    from_bundle: Optional[Path] = None
    accept_new_host_keys: bool = False
    forks: Optional[int] = None
    #: A prompted sudo password (``--ask-sudo-password``); None: ASCENDPREP_SUDO_PASSWORD, if set.
    sudo_password: Optional[SudoPassword] = None
    #: ``ascendprep.verify.allreduce.options.AllreduceOptions`` when --allreduce was given.
    allreduce: Optional[Any] = None
    runs_dir: Optional[Path] = None
    #: Run folders kept under runs_dir after this run's bundle is saved (``--keep-runs``).
    keep_runs: int = KEEP_RUNS_DEFAULT
    #: ``--timeout``: seconds the whole command may take (None: derived from the fleet).
    timeout: Optional[float] = None
    #: ``--sample-interval``: seconds between the two reads of the port counters (0: read once).
    sample_interval: int = 0
    #: ``--exec-via``: the checked wrapper the node checks, pings and all-reduce steps run through
    #: (ascendprep.run.execvia.ExecVia).
    exec_via: Optional[Any] = None
    #: ``--hosts``: read, check and report only these nodes; the cluster checks judge them alone
    #: and their pings go to the planned addresses of their peers, which are not contacted.
    hosts_pattern: Optional[str] = None
    #: ``--from-bundle DIR DIR...``: the folders after the first; merged with it as node bundles.
    more_bundles: Tuple[Path, ...] = ()
    #: ``--local``: check only this machine, through the local transport (run/node_local.py).
    local: bool = False
    #: ``--node``: the inventory node this machine is (None: matched by host name and address).
    node: Optional[str] = None
    #: ``--bundle-dir``: where a --local run writes its node bundle (None: under runs_dir).
    bundle_dir: Optional[Path] = None
    #: ``--prometheus-file``: where the metrics are also written (atomically).
    prometheus_file: Optional[Path] = None
    #: ``--html``: where the report is also written as one self-contained HTML page.
    html: Optional[Path] = None
    #: ``--plan``: a saved plan whose changes the HTML page lists (read before any host is contacted).
    plan: Optional[Path] = None
    #: ``--launcher``: how the all-reduce reaches the nodes (ssh, or slurm: srun in the allocation).
    launcher: str = "ssh"


@dataclass
class VerifyRun:
    """What a verify produced, live or from a bundle."""

    desired: DesiredState
    inventory_path: str
    inventory_text: str
    hosts: Dict[str, HostEvidence]
    pings: Optional[PingPlan]
    mesh: str
    selection: Selection
    day: date
    ssh_execs: Dict[str, int]
    allreduce_findings: List[Finding]
    allreduce_doc: Optional[Dict[str, Any]] = None
    from_bundle: Optional[str] = None
    #: Limits the live run hit (report.limits_hit); a bundle re-check hits none.
    limits_hit: List[Dict[str, Any]] = field(default_factory=list)
    #: A --local run's node: only its evidence is kept, its checks judged (run/node_local.py).
    local_node: Optional[str] = None
    #: A --local run's record of this machine, kept in its node bundle (run.bundle.NodeTie).
    node_tie: Optional[Any] = None
    #: A merge of node bundles (fleet/bundlemerge.py): the header lines the text report starts with.
    merged: Optional[Any] = None
    #: The nodes a ``--hosts`` run read (None: every node); the bundle records them.
    only_hosts: Optional[List[str]] = None
    #: A live run's bundle, written host by host while the run went (fleet.bundle.BundleWriter).
    bundle_writer: Optional[Any] = None


def desired_state(inventory: Inventory, console: Console) -> Optional[DesiredState]:

    desired = build_desired(inventory)
    if desired.invalid:
        print_invalid_inventory(desired, console)
        return None
    return desired


#: Remote phases of ``verify`` (for the default deadline): the gather, then the pings.
VERIFY_PHASES = 2
