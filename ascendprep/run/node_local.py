"""Node-local runs: ``verify --local`` and ``apply --local`` on the machine itself.

Where a scheduler (Slurm prolog, a Kubernetes DaemonSet, an Ansible play) puts ascendprep on
each node, there is no control host with SSH to every node. A local run reads and changes only
the node it runs on, through :class:`~ascendprep.remote.local.LocalTransport` (the same scripts,
``sh -s`` on stdin, no SSH), behind the same :class:`~ascendprep.run.fanout.Session` the SSH
commands use, so the gather, the pings, the apply script, its lock and the journal are theirs.

Which node: ``--node NAME``, or the inventory node whose name or host is this machine's host
name (short or fully qualified) or one of its addresses; none or several matching is a usage
error naming what was compared, never a guess.

Pings: a node cannot know how its peers' ports are doing, so it pings every mesh pair it is an
end of, from its own NPU. Each pair is then pinged from both ends (about twice the pings of an
SSH verify), and ``verify --from-bundle`` can rebuild the SSH run's ping plan from all nodes'
facts and find each pair's result at the end that plan chooses (:mod:`ascendprep.run.bundlemerge`).

HCCS pings (A3, for ``cluster.hccs``): the node sends the pairs it is the source of in its pod's
ring, its peers placed and their vNICs derived as the inventory says
(:func:`ascendprep.verify.checks.hccs.plan_local`); the merge finds each pair's result at its source.
With ``--exec-via`` the gather, the pings and the HCCS pings all run through the wrapper.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import socket
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional

import click

from ascendprep.base.hostrange import compressed
from ascendprep.base.limits import LOCAL_ADDRESSES_SHOWN, LOCAL_IDENTITY_TIMEOUT_S
from ascendprep.base.yamlsource import read_input_text
from ascendprep.facts.shell import checked_output_cap_override, remote_call_output_cap
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.report.limits_hit import collect_limits_hit
from ascendprep.run.bundle import NodeTie, check_bundle_target
from ascendprep.run.common import hosts_deadline
from ascendprep.run.evidence import PingRun, _ping_problem, run_pings
from ascendprep.run.fanout import Session
from ascendprep.run.hccs import run_hccs
from ascendprep.run.hosts import gather_facts, host_accesses
from ascendprep.run.progress import progress_for_terminal
from ascendprep.run.verify_run import VERIFY_PHASES, VerifyRun, desired_state
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.hccs import A3, plan_local
from ascendprep.verify.checks.runner import run_checks
from ascendprep.verify.mesh import PingPlan, plan_pings

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from ascendprep.desired.state import DesiredState
    from ascendprep.facts.model import HostFacts
    from ascendprep.inventory.load import Inventory
    from ascendprep.inventory.model import Node
    from ascendprep.remote.deadline import Deadline
    from ascendprep.run.bundle import NodeTie
    from ascendprep.run.fanout import Session
    from ascendprep.run.verify_run import VerifyOptions, VerifyRun
    from ascendprep.verify.checks.context import HostEvidence
    from ascendprep.verify.checks.model import CheckResult
    from ascendprep.verify.checks.registry import Selection
    from ascendprep.verify.mesh import PingPlan

#: What the other nodes' evidence says in a --local run (they are never contacted).
NOT_THIS_NODE = "not read: a --local run reads only {node}"


@dataclass(frozen=True)
class MachineIdentity:
    """What this machine answers to: host names (as given and lower-cased) and addresses."""

    names: FrozenSet[str]
    addresses: FrozenSet[str]

    def describe(self) -> str:
        names = ", ".join(sorted(self.names)) or "none"
        shown = sorted(self.addresses)[:LOCAL_ADDRESSES_SHOWN]
        addresses = ", ".join(shown) or "none read"
        if len(self.addresses) > len(shown):
            addresses += f" and {len(self.addresses) - len(shown)} more"
        return f"host names {names}; addresses {addresses}"


def parse_ip_addresses(text: str) -> FrozenSet[str]:
    """The addresses in ``ip -o addr show`` output (``inet 10.0.0.1/24``, ``inet6 fe80::1/64``)."""
    found = set()
    for line in text.splitlines():
        words = line.split()
        for index, word in enumerate(words[:-1]):
            if word in ("inet", "inet6"):
                found.add(words[index + 1].split("/", 1)[0])
    return frozenset(found)


def machine_identity() -> MachineIdentity:
    """This machine's host names and addresses (``ip -o addr show``; nothing when ``ip`` is missing)."""
    hostname = socket.gethostname()
    names = {hostname, hostname.split(".", 1)[0]}
    try:
        fqdn = socket.getfqdn()
    except OSError:
        fqdn = ""
    if fqdn and fqdn not in ("localhost", "localhost.localdomain"):
        names |= {fqdn, fqdn.split(".", 1)[0]}
    names = {n for n in names if n}
    names |= {n.lower() for n in names}
    try:
        listed = subprocess.run(
            ["ip", "-o", "addr", "show"], capture_output=True, text=True, timeout=LOCAL_IDENTITY_TIMEOUT_S, check=False
        )
        addresses = parse_ip_addresses(listed.stdout) if listed.returncode == 0 else frozenset()
    except (OSError, subprocess.TimeoutExpired):
        addresses = frozenset()
    return MachineIdentity(frozenset(names), frozenset(a for a in addresses if not _link_local_or_loopback(a)))


#: Where a machine keeps its id (machine-id(5)); D-Bus's copy on systems without systemd.
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
#: What the machine id is hashed with, so a bundle never holds the id itself (machine-id(5) asks
#: for an application-specific id: HMAC keyed by the id over the application's own string).
MACHINE_ID_APP = b"ascendprep node bundle"


def machine_id_digest(files: "tuple[str, ...]" = MACHINE_ID_FILES) -> Optional[str]:
    """This machine's id as ascendprep records it (a hex HMAC-SHA256), or None when it has none."""
    for path in files:
        try:
            with open(path, "rb") as handle:
                found = handle.read(64).strip()
        except OSError:
            continue
        if re.fullmatch(rb"[0-9a-f]{32}", found):
            return hmac.new(found, MACHINE_ID_APP, hashlib.sha256).hexdigest()
    return None


def node_tie(node: str, inventory_text: str) -> "NodeTie":
    """What ties this run's node bundle to this machine (fleet.bundle.NodeTie)."""

    return NodeTie(node, socket.gethostname(), machine_id_digest(), hashlib.sha256(inventory_text.encode()).hexdigest())


def _link_local_or_loopback(address: str) -> bool:
    """Addresses no inventory names a server by (every machine has them)."""

    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return True
    return parsed.is_loopback or parsed.is_link_local


def match_node(inventory: "Inventory", identity: MachineIdentity, wanted: Optional[str]) -> "Node":
    """The node a local run is for: ``wanted`` (``--node``), or the one this machine is.

    Raises click.BadParameter (exit 2) for an unknown name, and when no node or several match
    this machine, naming what was compared, so a wrong guess never reads or changes a node.
    """

    names = [node.name for node in inventory.nodes]
    if wanted is not None:
        for node in inventory.nodes:
            if node.name == wanted:
                return node
        raise click.BadParameter(
            f"{wanted!r} is not a node of {inventory.source} (its nodes: {compressed(names)})", param_hint="--node"
        )
    keys = identity.names | identity.addresses
    matches = [node for node in inventory.nodes if node.name in keys or node.host in keys or node.host.lower() in keys]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise click.BadParameter(
            f"no node of {inventory.source} is this machine ({identity.describe()}; its nodes: {compressed(names)}): name it with --node NAME",
            param_hint="--node",
        )
    raise click.BadParameter(
        f"several nodes of {inventory.source} match this machine ({', '.join(n.name for n in matches)}, by {identity.describe()}): name one with --node NAME",
        param_hint="--node",
    )


def refuse_remote_options(command: str, given: Dict[str, object]) -> None:
    """Options that only mean something with SSH or a fleet are usage errors with --local."""
    used = [name for name, value in given.items() if value not in (None, False, ())]
    if used:
        raise click.UsageError(
            f"{command} --local runs on this machine only, without SSH: {', '.join(used)} do not apply"
        )


@contextmanager
def local_session(inventory: "Inventory", node: "Node", deadline: Optional["Deadline"]) -> Iterator["Session"]:
    """A one-host Session whose transport is this machine (ssh.command_timeout still bounds each script)."""

    access = host_accesses(inventory, nodes=[node])[0]

    def here(_: object) -> LocalTransport:
        return LocalTransport(node.name, command_timeout=inventory.model.ssh.command_timeout)

    with Session([access], 1, transport_factory=here, deadline=deadline) as session:
        yield session


def local_ping_plan(desired: "DesiredState", node: str, facts: Optional["HostFacts"], mesh: str) -> "PingPlan":
    """The mesh pairs ``node`` is an end of, each pinged from ``node``'s end where it can ping.

    The peers' facts are unknown here (they count as unreadable), so the standard source choice
    picks this node's end whenever its NPU can ping at all; a pair with both ends here is chosen
    as in an SSH run. A pair this node cannot ping from says its peer pings it in its own run.
    """

    full = plan_pings(desired, {node: facts}, mesh)
    pairs = []
    for pair in full.pairs:
        if node not in (pair.a.node, pair.b.node):
            continue
        if pair.source is None:
            here, there = (pair.a, pair.b) if pair.a.node == node else (pair.b, pair.a)
            own = (pair.blocked or "").split("; ")[0 if here is pair.a else -1]
            pair = replace(pair, blocked=f"{own}; {there.node} pings this pair from its end in its own --local run")
        pairs.append(pair)
    return PingPlan(mesh, tuple(pairs))


def others_unread(desired: "DesiredState", host: "HostEvidence") -> Dict[str, "HostEvidence"]:
    """Every inventory node's evidence for the checks: ``host``, and placeholders for the rest."""

    return {
        node.name: host
        if node.name == host.node
        else HostEvidence(node.name, node.host, None, error=NOT_THIS_NODE.format(node=host.node), error_kind="error")
        for node in desired.inventory.nodes
    }


def node_results(
    desired: "DesiredState", host: "HostEvidence", pings: Optional["PingPlan"], selection: "Selection", day: date
) -> List["CheckResult"]:
    """The checks of one node's own evidence: its node and NPU checks, and the cluster checks
    over what it alone saw (its versions and stack, TLS and device IPs among its own NPUs, its
    pings). Cluster checks leave unread nodes out, so the placeholders never fail them."""

    results = run_checks(desired, others_unread(desired, host), pings, selection, day, local_node=host.node)
    return [r for r in results if r.node is None or r.node == host.node]


def verify_local(options: "VerifyOptions", selection: "Selection", err: "Console") -> Optional["VerifyRun"]:
    """``verify --local``: this machine's gather, pings and (A3) HCCS pings, through the local transport.

    Returns verify's run record (``commands.verify_run.VerifyRun``) holding only this node's evidence, or
    None when the inventory breaks its rules (already printed).
    """

    path = options.inventory
    checked_output_cap_override()
    text = read_input_text(path)
    inventory = inventory_from_text(text, file=str(path), base_dir=path.parent)
    node = match_node(inventory, machine_identity(), options.node)
    if options.bundle_dir is not None:
        check_bundle_target(options.bundle_dir, node.name)  # refused before anything is read
    desired = desired_state(inventory, err)
    if desired is None:
        return None
    mesh = options.mesh or "ring"
    day = datetime.now(timezone.utc).date()
    timeout = options.timeout
    deadline = hosts_deadline(inventory, timeout, 1, VERIFY_PHASES, hosts=1)
    sample_interval = options.sample_interval
    if timeout is None and sample_interval:
        deadline.seconds += sample_interval
    with local_session(inventory, node, deadline) as session:
        gathered = gather_facts(
            session,
            inventory,
            progress_for_terminal("reading this node"),
            only={node.name},
            sample_interval=sample_interval,
            exec_via=options.exec_via,
        )
        outcome = gathered[node.name]
        if outcome.ok and outcome.value is not None:
            value = outcome.value
            host = HostEvidence(
                node.name,
                node.host,
                value.facts,
                seconds=value.seconds,
                gather_stdout=value.transcript,
                gather_stderr=value.stderr,
            )
        else:
            host = HostEvidence(
                node.name, node.host, None, error=outcome.error, error_kind=outcome.kind, seconds=outcome.seconds
            )
        if selection.needs_hccs and inventory.product.id == A3:
            planned = plan_local(desired, node.name, host.facts)
            host = run_hccs(
                session,
                desired,
                {node.name: host},
                progress_for_terminal("HCCS pings"),
                planned=planned,
                exec_via=options.exec_via,
            )[node.name]
        pings = None
        if selection.needs_pings:
            pings = local_ping_plan(desired, node.name, host.facts, mesh)
            if pings.by_source():
                pinged = run_pings(
                    session,
                    pings,
                    progress_for_terminal("pinging peer NPUs"),
                    exec_via=options.exec_via,
                    mode_first=desired.inventory.product.is_950,
                )[node.name]
                if pinged.ok and pinged.value is not None:
                    run: PingRun = pinged.value
                    host = replace(
                        host,
                        pings=run.results,
                        ping_error=_ping_problem(run),
                        ping_stdout=run.stdout,
                        ping_stderr=run.stderr,
                        ping_seconds=run.seconds,
                    )
                else:
                    host = replace(
                        host, ping_error=pinged.error or "the ping script failed", ping_seconds=pinged.seconds
                    )
            else:
                host = replace(host, pings=())  # nothing this node can ping: an empty, finished phase
        execs = session.exec_counts()
    limits_hit = collect_limits_hit(session.limits_hit, {node.name: host.facts}, remote_call_output_cap())
    return VerifyRun(
        desired,
        str(path.resolve()),
        text,
        {node.name: host},
        pings,
        mesh,
        selection,
        day,
        execs,
        [],
        None,
        limits_hit=limits_hit,
        local_node=node.name,
        node_tie=node_tie(node.name, text),
    )
