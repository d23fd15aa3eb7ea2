"""The ``inventory import`` flow: read what is there (hosts, deployer INI, rank table), compact it
into an inventory, prove it by planning it, and write it.

The hosts are read with the same read-only gather script ``plan`` runs (one SSH connection and
one script per host), restricted to what an inventory can say: the NPU list, the device
network of every NPU, ``/etc/hccn.conf``, the A3 super-pod identity, the stack's versions and
the host's addresses. A host that cannot be read is named, the others are still imported, and
the output says it is incomplete (exit 1).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import Callable, Optional

from ascendprep.adopt.compact import Imported, RoundTripError, SshSettings, compact
from ascendprep.adopt.deployer import read_deployer
from ascendprep.adopt.hostfacts import seen_from_facts
from ascendprep.adopt.ranktable import product_of_table, rank_table_seen
from ascendprep.adopt.seen import Conflict, Seen, merge
from ascendprep.adopt.settings import FIREWALL_TOOLS
from ascendprep.base import exitcodes, hostrange
from ascendprep.base.jsoninput import read_json_file
from ascendprep.base.limits import IMPORT_TEXT_MAX_BYTES
from ascendprep.base.outputfile import write_file
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError, Located, read_input_text
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import HostFacts
from ascendprep.facts.unit import VERIFY
from ascendprep.facts.units import UNITS
from ascendprep.inventory.load import Inventory, inventory_from_text
from ascendprep.inventory.model import check_host
from ascendprep.inventory.products import PRODUCTS
from ascendprep.remote.access import HostAccess
from ascendprep.remote.transport import Transport
from ascendprep.report import console as report_console
from ascendprep.run.common import hosts_deadline
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import fresh_nonce_scripts, host_accesses
from ascendprep.run.progress import progress_for_terminal

#: The gather sections an inventory can use (everything else a verify reads is left out).
IMPORT_SECTIONS = frozenset(
    {
        "settings",
        "hostname",
        "tool.npu_smi",
        "npu_smi.list",
        "npu_smi.spod",
        "npus",
        "tool.hccn_tool",
        "hccn.ip",
        "hccn.gateway",
        "hccn.netdetect",
        "hccn.tls",
        "file.hccn_conf",
        "version.driver",
        "version.firmware",
        "version.toolkit",
        "version.nnae",
        "version.cann",
        "python",
        "net.addrs",
    }
)


def host_list(spec: str) -> list[str]:
    """``--hosts``: a file of hosts (one per line, ``#`` comments) when one exists at that path,
    else a host range such as ``node[01-64]``; every host checked as the inventory checks it."""
    path = Path(spec)
    if path.is_file():
        text = read_input_text(path, IMPORT_TEXT_MAX_BYTES)
        hosts: list[str] = []
        problems = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                hosts.extend(check_host(h) for h in hostrange.expand(line))
            except (ValueError, hostrange.HostRangeError) as exc:
                problems.append(Located(str(path), number, "", str(exc)))
        if problems:
            raise InputError(problems)
        if not hosts:
            raise InputError([Located(str(path), None, "", "no host in the file")])
        return list(dict.fromkeys(hosts))
    if "/" in spec:
        raise InputError([Located(spec, None, "", "no such file (a host range has no '/')")])
    try:
        return [check_host(h) for h in hostrange.expand(spec)]
    except (ValueError, hostrange.HostRangeError) as exc:
        raise InputError([Located("--hosts", None, "", str(exc))]) from None


def ssh_for_output(ssh: SshSettings, output: Optional[Path]) -> SshSettings:
    """The ``ssh:`` block the written inventory needs to connect as the import did: the inventory
    loader resolves ``key`` and ``known_hosts`` against the inventory file's folder, so a path
    given relative to here is written relative to the output file (absolute without ``-o``,
    since where stdout ends up is not known); ``~`` paths and absolute ones are kept."""

    def moved(path: Optional[str]) -> Optional[str]:
        if path is None or path.startswith("~") or os.path.isabs(path):
            return path
        if output is None:
            return os.path.abspath(path)
        return os.path.relpath(os.path.abspath(path), os.path.abspath(output.parent))

    return SshSettings(user=ssh.user, key=moved(ssh.key), known_hosts=moved(ssh.known_hosts))


def _name_of(host: str) -> str:
    return host if re.fullmatch(r"[0-9.]+", host) else host.split(".")[0]


def _reading_inventory(hosts: list[str], product: str, ssh: SshSettings) -> Inventory:
    """An inventory of the hosts only, so that the SSH settings resolve as plan's do; its device
    network (a documentation range, RFC 5737) is never planned nor applied."""
    network = {
        "atlas-a2": "device_network: {subnet: 198.51.100.0/24}",
        "atlas-a3": "device_network: {subnets: [198.51.100.0/24, 203.0.113.0/24]}",
    }.get(product, "device_network: {}")
    lines = ["name: import", f"product: {product}", network, "ssh:"]
    lines.append(f"  user: {ssh.user or 'root'}")
    if ssh.key:
        lines.append(f"  key: {_quoted(ssh.key)}")
    if ssh.known_hosts:
        lines.append(f"  known_hosts: {_quoted(ssh.known_hosts)}")
    lines.append("nodes:")
    lines += [f'  - {{host: "{host}", name: "{_name_of(host)}"}}' for host in hosts]
    return inventory_from_text("\n".join(lines) + "\n", "--hosts", base_dir=Path.cwd())


def _quoted(text: str) -> str:
    return json.dumps(text)


#: The gather sections each ``--adopt`` setting reads besides (the values plan compares).
ADOPT_SECTIONS = {
    "sysctl": frozenset({"sysctl"}),
    "env": frozenset({"file.env"}),
    "firewall": frozenset(f"firewall.{tool}" for tool in FIREWALL_TOOLS),
}


def import_gather_script(nonce: str, adopt: frozenset[str] = frozenset()) -> str:
    """The read-only gather script of the import: the NPUs found from npu-smi's list, and only
    the sections of :data:`IMPORT_SECTIONS` (and of :data:`ADOPT_SECTIONS` for ``adopt``)."""
    sections = IMPORT_SECTIONS.union(*(ADOPT_SECTIONS[what] for what in adopt))
    units = tuple(unit for unit in UNITS if unit.section in sections)
    return render_gather_script(npus=None, python_path="/usr/bin/python3", units=units, phase=VERIFY, nonce=nonce)


def read_hosts(
    hosts: list[str],
    product: str,
    ssh: SshSettings,
    accept_new_host_keys: bool,
    forks: Optional[int],
    transport_factory: Optional[Callable[[HostAccess], Transport]] = None,
    adopt: frozenset[str] = frozenset(),
) -> Seen:
    """Gather every host (read-only) and read what it says; unreachable hosts are named.
    ``transport_factory``: how to reach a host (default: SSH, as plan does); ``adopt``: the
    host settings to read too (:data:`ADOPT_SECTIONS`)."""
    inventory = _reading_inventory(hosts, product, ssh)
    script = fresh_nonce_scripts(functools.partial(import_gather_script, adopt=adopt))

    def job(transport: Transport, access: HostAccess) -> HostFacts:
        result = transport.run_script(script())
        if result.timed_out:
            result.raise_for_status(access.name, "reading the host")
        return parse_gather_output(result.stdout)

    accesses = host_accesses(inventory, accept_new_host_keys)
    deadline = hosts_deadline(inventory, None, forks, 1)
    with Session(accesses, forks or inventory.model.ssh.forks, transport_factory, deadline=deadline) as session:
        outcomes = session.run(job, progress_for_terminal("reading hosts"), step="reading hosts")
    facts = {name: o.value for name, o in outcomes.items() if o.ok and o.value is not None}
    unreachable = {
        name: o.error or "unknown error" for name, o in outcomes.items() if not (o.ok and o.value is not None)
    }
    addresses = {node.name: node.host for node in inventory.nodes}
    return seen_from_facts(addresses, facts, unreachable)


def run_import(
    hosts_spec: Optional[str],
    ssh: SshSettings,
    deployer: Optional[Path],
    rank_table: Optional[Path],
    product: Optional[str],
    output: Optional[Path],
    accept_new_host_keys: bool = False,
    forks: Optional[int] = None,
    transport_factory: Optional[Callable[[HostAccess], Transport]] = None,
    adopt: frozenset[str] = frozenset(),
) -> int:
    """Import, write the inventory (``output`` or stdout), say what was found on stderr; the exit code.
    ``transport_factory``: how to reach a host (default: SSH, as plan does); ``adopt``: the host
    settings (sysctl, env, firewall) to import as the hosts have them (read from ``--hosts``)."""
    err = report_console(stderr=True)
    chosen = PRODUCTS[product] if product else None
    sources: list[Seen] = []
    if rank_table is not None:
        table = read_json_file(rank_table)
        chosen = chosen or product_of_table(table)
        sources.append(rank_table_seen(table, str(rank_table), chosen))
    if deployer is not None:
        sources.append(read_deployer(deployer, chosen))
    if hosts_spec is not None:
        hosts = host_list(hosts_spec)
        sources.append(
            read_hosts(
                hosts, chosen.id if chosen else "atlas-a2", ssh, accept_new_host_keys, forks, transport_factory, adopt
            )
        )
    seen = sources[0]
    for other in sources[1:]:
        seen = merge(seen, other)
    product_id = product or seen.product
    if product_id is None:
        product_id = "atlas-a2"
        seen.conflicts.append(
            Conflict(
                "product",
                "the sources do not tell an Atlas 800 (910) from an Atlas A2 (910B): atlas-a2 assumed; give --product if not",
                error=False,
            )
        )
    try:
        imported = compact(seen, product_id, ssh=ssh_for_output(ssh, output), adopt=adopt)
    except RoundTripError as error:
        err.print(f"[bold red]error:[/] {markup_safe(str(error).splitlines()[0])}", soft_wrap=True)
        err.print("This is a bug of ascendprep: the inventory it would write does not reproduce what it read.")
        return exitcodes.FAILED
    if output is not None:
        try:
            write_file(output, imported.text)
        except OSError as exc:
            err.print(f"[bold red]error:[/] cannot write {markup_safe(output)}: {markup_safe(exc.strerror or exc)}")
            return exitcodes.FAILED
    else:
        sys.stdout.write(imported.text)
        sys.stdout.flush()
    _summary(imported, output, err)
    return exitcodes.OK if imported.complete else exitcodes.FAILED


def _summary(imported: Imported, output: Optional[Path], err) -> None:  # type: ignore[no-untyped-def]
    inventory = imported.inventory
    count = len(inventory.nodes) if inventory is not None else 0
    where = f" to {markup_safe(output)}" if output is not None else ""
    err.print(
        f"Imported {count} nodes{where}: {imported.form} device network, {len(imported.off_pattern)} off the pattern"
        + (f" ({markup_safe(hostrange.compressed(imported.off_pattern))})" if imported.off_pattern else ""),
        soft_wrap=True,
    )
    for host, why in imported.unreachable.items():
        err.print(f"[yellow]not read:[/] {markup_safe(host)}: {markup_safe(why)}", soft_wrap=True)
    for conflict in imported.conflicts:
        label = "[bold red]conflict:[/]" if conflict.error else "[yellow]note:[/]"
        err.print(f"{label} {markup_safe(conflict.message)}", soft_wrap=True)
    if not imported.complete:
        err.print("[yellow]The import is incomplete: see above, and the comments at the top of the inventory.[/]")
