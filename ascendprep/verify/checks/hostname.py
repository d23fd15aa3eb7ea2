"""The hostname check: a node's own name must lead to the node's own address.

gloo, NCCL and HCCL (and torchrun's agents) find the address they advertise to their peers by
resolving the host's own name. Where it resolves to loopback (Debian puts ``127.0.1.1 <hostname>``
into ``/etc/hosts``), to another node's address, or not at all (gloo then falls back to
127.0.0.1), every rank tells its peers to connect to an address they cannot reach, and a job dies
with "Gloo connectFullMesh failed ... remote=[127.0.0.1]".

Severity: ascendprep's ``set_env.sh`` and ``verify --allreduce`` bind the sockets to the
interface that holds the node's inventory address (GLOO/NCCL/HCCL_SOCKET_IFNAME, HCCL_IF_IP), so
jobs started through them are not affected: a warning, because any other launcher (a plain
``torchrun`` without set_env.sh, MPI, Slurm scripts) still walks into it. Where the inventory
names the node by hostname, set_env.sh cannot know the address to bind, so nothing protects the
job: an error.
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional

from ascendprep.base.findings import Severity
from ascendprep.facts.netaddr import held_by, interface_holding, ip_literal, is_loopback
from ascendprep.inventory.load import Inventory
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped

#: The last inventory's address -> node name map (built once per run: rebuilding it for every
#: node made this check quadratic in the node count).
#: Held by a weak reference, compared by identity (an Inventory is not hashable).
_owners_cache: List[Any] = [None, {}]


def _address_owners(inventory: Inventory) -> Dict[str, str]:
    """Which node each inventory address (given as an IP literal) belongs to."""
    cached = _owners_cache[0]() if _owners_cache[0] is not None else None
    if cached is not inventory:
        owners: Dict[str, str] = {}
        for node in inventory.nodes:
            address = ip_literal(node.host)
            if address is not None:
                owners.setdefault(address, node.name)
        _owners_cache[:] = [weakref.ref(inventory), owners]
    return _owners_cache[1]


_FIX = "edit /etc/hosts (or DNS) so that the node's hostname maps to its own cluster address"


def _fix(node: str, hostname: str, address: Optional[str], loopback: List[str]) -> str:
    if address is None:
        return f"on {node}, map '{hostname}' to the node's own cluster address in /etc/hosts (or DNS)"
    if loopback:
        return f"on {node}, edit /etc/hosts: replace the line '{loopback[0]} {hostname}' with '{address} {hostname}'"
    return f"on {node}, add the line '{address} {hostname}' to /etc/hosts (or fix its DNS record)"


def hostname_resolves(ctx: NodeContext) -> Verdict:
    facts = ctx.facts
    name = ctx.name
    errors = facts.errors_for("hostname.resolve")
    if errors:
        return could_not_check(errors[0].message)
    hostname = facts.hostname
    if facts.hostname_addresses is None or hostname is None:
        return skipped("the gather did not report the hostname's resolution (facts from an older ascendprep)")
    resolved = list(facts.hostname_addresses)
    address = ip_literal(ctx.node.node.host)
    owners = _address_owners(ctx.desired.inventory)
    others = {a: owners[a] for a in resolved if owners.get(a, name) != name}
    held = held_by(facts.addresses)
    evidence: Dict[str, Any] = {
        "hostname": hostname,
        "resolves_to": resolved,
        "inventory_address": address,
        "interface": interface_holding(address, facts.addresses) if address else None,
    }
    # set_env.sh binds the sockets only where it knows the node's address (see the docstring).
    severity = Severity.WARNING if address is not None else Severity.ERROR
    loopback = [a for a in resolved if is_loopback(a)]
    stolen = [f"{a} ({others[a]}'s address)" for a in resolved if a in others]
    foreign = [a for a in resolved if held and a not in held and a not in others and not is_loopback(a)]
    if not resolved:
        problem = f"hostname '{hostname}' does not resolve on {name}: gloo and NCCL fall back to 127.0.0.1"
    elif loopback:
        problem = f"hostname '{hostname}' resolves to {', '.join(loopback)} (loopback) on {name}"
    elif stolen:
        problem = f"hostname '{hostname}' resolves to {', '.join(stolen)} on {name}"
    elif foreign:
        problem = f"hostname '{hostname}' resolves to {', '.join(foreign)}, which no interface of {name} holds"
    else:
        return passed(f"hostname '{hostname}' resolves to {', '.join(resolved)}", evidence)
    protected = (
        "; set_env.sh and verify --allreduce bind the node's interface, other launchers do not"
        if address is not None
        else "; nothing binds this node's interface (the inventory names it by hostname, not address)"
    )
    return failed(
        problem + ", so its ranks advertise an address their peers cannot reach" + protected,
        evidence,
        fix=_fix(name, hostname, address, loopback),
        severity=severity,
    )


CHECKS: List[Check] = [
    Check(
        "node.hostname",
        ("node",),
        "node",
        Severity.WARNING,
        "the node's hostname resolves to its own address, not loopback",
        _FIX,
        hostname_resolves,
        probes=("hostname.resolve",),
        requires=("node.reachable",),
    ),
]
