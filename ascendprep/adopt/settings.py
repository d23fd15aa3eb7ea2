"""The host settings an import adopts when asked (``--adopt sysctl,env,firewall``).

Without it the imported inventory leaves them to ascendprep's defaults, which ``plan`` then
proposes: the kernel minimums of the seed guide, ascendprep's ``env.sh`` and ``firewall: check``.
With it, the inventory says what the hosts already have, so that ``plan`` of it proposes no
change to them:

* ``sysctl``: the keys ascendprep manages (docs/ascend-reference.md: ``net.core.somaxconn`` and
  ``net.ipv4.tcp_max_syn_backlog``, kept "at least" a value, and the reserved ports
  ``net.ipv4.ip_local_reserved_ports``, which must cover a list). An "at least" key gets the
  lowest value any host has (every host then already satisfies it; the hosts above are named);
  the reserved ports get the ranges every host reserves (the others' extra ones are named).
* ``env``: the variables of ``/etc/ascendprep/env.sh`` (the file ascendprep writes; a host that
  never had it has nothing to adopt) that differ from ascendprep's own defaults, the value most
  hosts export (the others named). A variable the inventory may not export without
  ``env_opt_in`` is named and not adopted: opting in is the operator's decision.
* ``firewall``: ``disable`` when no host runs ufw, firewalld or an nftables ruleset (they are off:
  ``apply`` keeps them so), else ``check`` with the hosts that run one named.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

from ascendprep.adopt.seen import Conflict, NodeSeen
from ascendprep.base import hostrange
from ascendprep.desired.envfiles import DEFAULT_ENV, connect_timeout_for
from ascendprep.inventory import sysctl as sysctl_rules
from ascendprep.inventory.env import variable_problem
from ascendprep.inventory.model import ENV_KEY_RE

#: What ``--adopt`` takes.
ADOPTABLE = ("sysctl", "env", "firewall")

#: The firewall front ends the gather asks (facts.units' firewall sections).
FIREWALL_TOOLS = ("ufw", "firewalld", "nftables")


@dataclass
class Adopted:
    """What the inventory says of the adopted settings, and what is worth a note."""

    sysctl: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    #: ``firewall:``, None when not adopted (the inventory's default, ``check``).
    firewall: Optional[str] = None
    #: Comment lines for the inventory (hosts above a minimum, odd env values, active firewalls).
    comments: list[str] = field(default_factory=list)
    notes: list[Conflict] = field(default_factory=list)
    #: What ``--adopt`` asked for.
    asked: frozenset[str] = frozenset()


def adopt_settings(nodes: Sequence[NodeSeen], what: frozenset[str]) -> Adopted:
    """The settings ``what`` names (of :data:`ADOPTABLE`) as the hosts ``nodes`` have them."""
    adopted = Adopted(asked=what)
    if "sysctl" in what:
        _adopt_sysctl(nodes, adopted)
    if "env" in what:
        _adopt_env(nodes, adopted)
    if "firewall" in what:
        _adopt_firewall(nodes, adopted)
    return adopted


def _names(nodes: Sequence[NodeSeen]) -> str:
    return hostrange.compressed(n.name for n in nodes)


def _note(adopted: Adopted, message: str) -> None:
    adopted.notes.append(Conflict("adopt", message, error=False))


def _adopt_sysctl(nodes: Sequence[NodeSeen], adopted: Adopted) -> None:
    unread = [n for n in nodes if n.sysctl is None]
    read = [n for n in nodes if n.sysctl is not None]
    if unread:
        _note(adopted, f"sysctl was not read on {_names(unread)}: adopted from the other hosts only")
    for key in sysctl_rules.DEFAULT_MINIMUMS:
        values: dict[str, int] = {}
        for node in read:
            text = (node.sysctl or {}).get(key)
            if text is not None and text.strip().isdigit() and len(text.strip()) <= 20:
                if sysctl_rules.value_problem(key, int(text.strip())) is None:
                    values[node.name] = int(text.strip())
        missing = [n for n in read if n.name not in values]
        if missing:
            _note(adopted, f"{key} could not be read as a number on {_names(missing)}: not adopted")
            continue
        if not values:
            continue
        lowest = min(values.values())
        adopted.sysctl[key] = lowest
        above: dict[int, list[NodeSeen]] = {}
        for node in read:
            if values[node.name] > lowest:
                above.setdefault(values[node.name], []).append(node)
        for value, those in sorted(above.items()):
            adopted.comments.append(f"sysctl {key}: {_names(those)} have {value}, more than this minimum")
    _adopt_reserved_ports(read, adopted)


def _adopt_reserved_ports(read: Sequence[NodeSeen], adopted: Adopted) -> None:
    key = sysctl_rules.RESERVED_PORTS
    per_node: dict[str, list[tuple[int, int]]] = {}
    bad = []
    for node in read:
        try:
            per_node[node.name] = sysctl_rules.normalise(
                sysctl_rules.parse_port_ranges((node.sysctl or {}).get(key) or "")
            )
        except sysctl_rules.PortRangeError:
            bad.append(node)
    if bad:
        _note(adopted, f"{key} is not a list of ports on {_names(bad)}: not adopted")
        return
    if not per_node:
        return
    common: Optional[list[tuple[int, int]]] = None
    for ranges in per_node.values():
        common = ranges if common is None else _intersection(common, ranges)
    text = sysctl_rules.format_port_ranges(common or [])
    if text and sysctl_rules.value_problem(key, text) is not None:
        _note(adopted, f"{key}: {sysctl_rules.value_problem(key, text)}; not adopted")
    elif text:
        adopted.sysctl[key] = text
    more = [n for n in read if per_node[n.name] != (common or [])]
    if more:
        adopted.comments.append(f"sysctl {key}: {_names(more)} reserve more ports than every host does")


def _intersection(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ports both normalised range lists hold, as ranges."""
    both = [(max(lo, low), min(hi, high)) for lo, hi in a for low, high in b]
    return sysctl_rules.normalise((lo, hi) for lo, hi in both if lo <= hi)


def _adopt_env(nodes: Sequence[NodeSeen], adopted: Adopted) -> None:
    """The variables of the hosts' env.sh that ascendprep's own env.sh would not give the same."""
    having = [n for n in nodes if n.env]
    without = [n for n in nodes if not n.env]
    if without:
        _note(adopted, f"no /etc/ascendprep/env.sh was read on {_names(without)}: no env: adopted from it")
    if not having:
        return
    defaults = dict(DEFAULT_ENV, HCCL_CONNECT_TIMEOUT=str(connect_timeout_for(len(nodes))))
    order = list(dict.fromkeys(name for node in having for name in (node.env or {})))
    for name in order:
        found = Counter((node.env or {}).get(name) for node in having)
        value, _ = found.most_common(1)[0]
        if value is None:
            continue
        odd = [n for n in having if (n.env or {}).get(name) != value]
        if odd:
            adopted.comments.append(f"env {name}: {_names(odd)} export another value or none")
        if defaults.get(name) == value:
            continue
        problem = variable_problem(name, ()) if ENV_KEY_RE.match(name) else "not a variable name"
        if problem is not None or "\n" in value or "\x00" in value:
            _note(adopted, f"env {name} is exported on the hosts but not adopted: {problem or 'its value'}")
            continue
        adopted.env[name] = value
    dropped = [name for name in defaults if all(name not in (n.env or {}) for n in having)]
    if dropped:
        _note(adopted, f"env: the hosts' env.sh does not export {', '.join(dropped)}; ascendprep's always does")


def _adopt_firewall(nodes: Sequence[NodeSeen], adopted: Adopted) -> None:
    active: dict[str, list[NodeSeen]] = {}
    unknown: list[NodeSeen] = []
    for node in nodes:
        if node.firewall is None or any(state is None for state in node.firewall.values()):
            unknown.append(node)
            continue
        for tool, state in node.firewall.items():
            if state:
                active.setdefault(tool, []).append(node)
    if unknown:
        _note(adopted, f"the firewall state could not be read on {_names(unknown)}: left as check")
    for tool, those in active.items():
        adopted.comments.append(f"firewall: {tool} is active on {_names(those)}")
    adopted.firewall = "check" if active or unknown else "disable"
