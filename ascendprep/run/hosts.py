"""The edge where the pure core meets the hosts: connect, gather facts, apply a host's changes.

Each phase is one batched script per host through a :class:`~ascendprep.run.fanout.Session`,
so a command keeps one connection per host and a failure on one host is that host's outcome only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from ascendprep.apply.script import LOCKED_RC, StepResult, parse_apply_output, render_apply_script
from ascendprep.base.paths import SYSCTL_KEYS
from ascendprep.facts.blockers import job_probes
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import HostFacts
from ascendprep.facts.sections import new_nonce
from ascendprep.facts.unit import VERIFY, ProbeUnit
from ascendprep.facts.units import UNITS
from ascendprep.inventory.load import Inventory
from ascendprep.inventory.model import Node, parse_jump_host
from ascendprep.plan.diff import Change
from ascendprep.remote.access import HostAccess, known_hosts_files
from ascendprep.remote.errors import CommandTimeout
from ascendprep.remote.transport import Transport
from ascendprep.run.execvia import ExecVia, explain_failure, wrap_script
from ascendprep.run.fanout import HostOutcome, Session
from ascendprep.run.progress import Progress


def host_accesses(
    inventory: Inventory, accept_new_host_keys: bool = False, nodes: Optional[list[Node]] = None
) -> list[HostAccess]:
    """One :class:`HostAccess` per node: the inventory's known_hosts first, then the user's."""
    ssh = inventory.model.ssh
    known = known_hosts_files(inventory.known_hosts)
    key = str(inventory.key_file) if inventory.key_file else None
    jump = None
    if ssh.jump_host:
        user, host, port = parse_jump_host(ssh.jump_host)
        jump = HostAccess(
            name=f"jump:{host}",
            address=host,
            port=port,
            user=user or ssh.user,
            key_file=key,
            known_hosts=tuple(known),
            connect_timeout=ssh.connect_timeout,
            command_timeout=ssh.command_timeout,
            accept_new_host_keys=accept_new_host_keys,
        )
    return [
        HostAccess(
            name=node.name,
            address=node.host,
            port=node.port,
            user=node.user,
            key_file=key,
            known_hosts=tuple(known),
            jump=jump,
            connect_timeout=ssh.connect_timeout,
            command_timeout=ssh.command_timeout,
            sudo=ssh.sudo,
            accept_new_host_keys=accept_new_host_keys,
        )
        for node in (nodes if nodes is not None else inventory.nodes)
    ]


def fresh_nonce_scripts(render: Callable[[str], str]) -> Callable[[], str]:
    """``render(nonce)`` once, then per call its text with a fresh nonce put in the nonce's place.

    Identical hosts get the same gather script but for its marker nonce (each host's own, so that
    no tool output can forge a section), so it is rendered once and only the nonce differs per
    host. Where the nonce goes is proved, not assumed: a second rendering with another
    nonce must equal the first with that nonce swapped in (else every call renders afresh).
    """
    first = new_nonce()
    second = new_nonce()
    while second == first:
        second = new_nonce()
    template = render(first)
    if template.replace(first, second) != render(second):
        return lambda: render(new_nonce())
    return lambda: template.replace(first, new_nonce())


@dataclass(frozen=True)
class Gathered:
    """A host's parsed facts and the raw transcript they came from (kept as evidence)."""

    facts: HostFacts
    transcript: str
    stderr: str
    seconds: float


def _topology_name(inventory: Inventory, npus: Optional[int]) -> Optional[str]:
    """The factory topology file name a 950 node with ``npus`` cards needs (None: none known)."""
    path = inventory.product.topology_file(npus) if npus is not None else None
    return path.rsplit("/", 1)[1] if path else None


def gather_facts(
    session: Session,
    inventory: Inventory,
    progress: Optional[Progress] = None,
    only: Optional[set[str]] = None,
    sample_interval: int = 0,
    exec_via: Optional[ExecVia] = None,
    phase: str = VERIFY,
    units: Optional[Mapping[str, Sequence[ProbeUnit]]] = None,
    keep: Optional[Callable[[str, Gathered], Gathered]] = None,
) -> dict[str, HostOutcome[Gathered]]:
    """Run the gather script on every host (or on ``only``) and parse what it printed.

    ``sample_interval``: seconds between the two reads of the port counters (verify); the script
    may run that much longer than ``ssh.command_timeout`` allows otherwise.
    ``phase``: which units run (``plan``: only what the diff reads; ``verify``: every unit).
    ``units``: per host, the units to choose from (apply re-reads only what its changes depend
    on, :func:`ascendprep.plan.reads.units_for_changes`); a host not in it gets every unit.
    ``exec_via``: run it through that wrapper (:mod:`ascendprep.run.execvia`), e.g. in a container.
    ``keep``: called in the host's worker with its name and what was gathered, as soon as it is
    parsed; what it returns is kept (verify writes the transcript to its bundle and drops it, so
    at most ``forks`` transcripts are held at once, not every host's).
    """
    npus_of = {node.name: node.npus for node in inventory.nodes}
    python_path = inventory.model.software.python_path
    sysctl_keys = tuple(dict.fromkeys([*SYSCTL_KEYS, *inventory.model.sysctl]))
    probes = job_probes(inventory)
    #: Per distinct script input (the node's NPU count, the units it reads, by identity): the
    #: units (held, so that no id is reused while this runs) and the script source.
    scripts: Dict[Tuple[Optional[int], Tuple[int, ...]], Tuple[Sequence[ProbeUnit], Callable[[], str]]] = {}

    def script_for(name: str, chosen: Sequence[ProbeUnit]) -> str:
        key = (npus_of[name], tuple(map(id, chosen)))
        known = scripts.get(key)
        if known is None:  # two workers may both render a new key: the same script, no harm
            known = scripts[key] = (
                chosen,
                fresh_nonce_scripts(
                    lambda nonce: render_gather_script(
                        npus=npus_of[name],
                        python_path=python_path,
                        sysctl_keys=sysctl_keys,
                        job_probes=probes,
                        sample_interval=sample_interval,
                        units=chosen,
                        phase=phase,
                        nonce=nonce,
                        generation=inventory.product.generation.value,
                        topology_file=_topology_name(inventory, npus_of[name]),
                    )
                ),
            )
        return known[1]()

    def job(transport: Transport, access: HostAccess) -> Gathered:
        chosen = units.get(access.name, UNITS) if units is not None else UNITS
        script = script_for(access.name, chosen)
        if exec_via is not None:
            script = wrap_script(script, exec_via)
        result = transport.run_script(
            script, timeout=access.command_timeout + sample_interval if sample_interval else None
        )
        if result.timed_out:
            result.raise_for_status(access.name, "fact gathering")
        facts = parse_gather_output(result.stdout)
        if exec_via is not None:
            facts = explain_failure(facts, exec_via, result.rc, result.stderr)
        gathered = Gathered(facts, result.stdout, result.stderr, result.seconds)
        return keep(access.name, gathered) if keep is not None else gathered

    targets = [h for h in session.hosts if only is None or h.name in only]
    return session.run(job, progress, hosts=targets, step="gathering facts")


@dataclass(frozen=True)
class AppliedHost:
    steps: dict[str, StepResult]
    rc: int
    stderr: str
    locked: bool


def apply_changes(
    session: Session,
    changes_by_host: dict[str, list[Change]],
    hccn_tools: dict[str, Optional[str]],
    progress: Optional[Progress] = None,
) -> dict[str, HostOutcome[AppliedHost]]:
    """Run each host's rendered apply script (hosts without changes are not contacted)."""

    def job(transport: Transport, access: HostAccess) -> AppliedHost:
        script = render_apply_script(changes_by_host[access.name], hccn_tools.get(access.name))
        result = transport.run_script(script)
        if result.timed_out:
            raise CommandTimeout(
                access.name,
                f"apply on {access.name} timed out after {result.seconds:.0f}s and was killed; run apply again to finish",
            )
        return AppliedHost(parse_apply_output(result.stdout), result.rc, result.stderr, result.rc == LOCKED_RC)

    targets = [h for h in session.hosts if changes_by_host.get(h.name)]
    return session.run(job, progress, hosts=targets, step="applying changes")
