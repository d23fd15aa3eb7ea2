"""A lab node's ``/etc/hosts`` in the three shapes real hosts come in.

Why: gloo, NCCL and HCCL look up the host's own name to find the address they advertise. The
lab's default maps every node name to its management address (``resolve``), which is what a
well-kept cluster has, and hides the trap real hosts set:

* ``loopback``: Debian's installer writes ``127.0.1.1 <hostname>``, so the name leads to loopback;
* ``missing``: the name is in neither ``/etc/hosts`` nor DNS (gloo then falls back to 127.0.0.1).

``lab up --hostnames`` builds every node that way; the ``hostname-loopback`` and
``hostname-missing`` faults turn one running node into it (and ``lab heal`` back).
"""

from __future__ import annotations

from typing import Iterable

from ascendprep.lab.spec import HOSTNAME_MAPPINGS, NodeSpec

__all__ = ["DEBIAN_LOOPBACK", "HOSTNAME_MAPPINGS", "render_node_hosts"]
#: The address Debian's installer gives the hostname (a loopback address other than 127.0.0.1).
DEBIAN_LOOPBACK = "127.0.1.1"


def render_hosts(nodes: Iterable[NodeSpec]) -> str:
    """The node's /etc/hosts: every node's name resolves (gloo looks up its own hostname)."""
    lines = [
        "# managed by ascendprep lab",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
    ]
    lines += [f"{n.mgmt_ip}\t{n.name}" for n in nodes]
    return "\n".join(lines) + "\n"


def render_node_hosts(nodes: Iterable[NodeSpec], own: str, mapping: str = "resolve") -> str:
    """``/etc/hosts`` for node ``own`` with its hostname mapped as ``mapping`` says.

    ``loopback`` and ``missing`` list no node names at all, as a freshly installed host whose
    cluster names live in DNS (here: none) would.
    """
    if mapping == "resolve":
        return render_hosts(nodes)
    if mapping not in HOSTNAME_MAPPINGS:
        raise ValueError(f"hostname mapping {mapping!r}: choose one of {', '.join(HOSTNAME_MAPPINGS)}")
    lines = [
        "# managed by ascendprep lab"
        + (" (Debian's default hostname line)" if mapping == "loopback" else " (the hostname is not listed)"),
        "127.0.0.1\tlocalhost",
    ]
    if mapping == "loopback":
        lines.append(f"{DEBIAN_LOOPBACK}\t{own}")
    lines.append("::1\tlocalhost ip6-localhost ip6-loopback")
    return "\n".join(lines) + "\n"
