"""The Ascend 950 driver's factory topology files, as the lab installs them in a node's driver tree.

HCCL on 950 loads rank table 2.0 together with a topology file the driver package installs at
the factory: ``/usr/local/Ascend/driver/topo/950/<product>.json`` (HCCL user guide
``rank_table_config_a5.md``; HCOMM ``src/legacy/ascend950/framework/topo/topo_addr_info/src/topo.c``
picks the file by product: ``atlas_350_1.json`` for one Atlas 350 card, ``atlas_350_2.json`` for
the 2-card mesh, ``atlas_350_3.json`` for the 4-card mesh). The lab writes every file of the
node's product, as the driver package does, so a node holds the other card counts' files too.

The content follows the documented fields: ``version`` "2.0", ``peer_count``, ``peer_list[].local_id``,
``edge_list[]`` with ``net_layer``, ``link_type`` ``PEER2PEER``, ``protocols`` (``UB_CTP``), the two
ends ``local_a``/``local_b`` with their ``"die/port"`` lists, and ``topo_type`` ``1DMESH``. [I]:
no factory file is published; the port lists are the lab's own mesh (:mod:`ascendprep.lab.sim.ub950`:
in the 4-card mesh port 4/5/6 leads to the 1st/2nd/3rd other card, with two cards every port
leads to the other card), and the names of the port-list keys are the lab's reading of the guide.
"""

from __future__ import annotations

import json
from pathlib import Path

from ascendprep.inventory.products import PRODUCTS, TOPO_DIR_950
from ascendprep.lab.sim.ub950 import PORTS_BY_CARDS


def _ports(cards: int, local: int, peer: int) -> list[str]:
    ports = PORTS_BY_CARDS.get(cards, ())
    if cards == 2:
        return [f"0/{port}" for port in ports]
    others = [n for n in range(cards) if n != local]
    return [f"0/{ports[others.index(peer)]}"] if len(ports) == len(others) else []


def topology_document(cards: int) -> dict:
    """The topology file of a ``cards``-card Atlas 350 server (one card: no edge)."""
    edges = [
        {
            "net_layer": 0,
            "link_type": "PEER2PEER",
            "protocols": ["UB_CTP"],
            "local_a": a,
            "local_a_ports": _ports(cards, a, b),
            "local_b": b,
            "local_b_ports": _ports(cards, b, a),
            "position": "DEVICE",
        }
        for a in range(cards)
        for b in range(a + 1, cards)
    ]
    return {
        "version": "2.0",
        "peer_count": cards,
        "peer_list": [{"local_id": n} for n in range(cards)],
        "edge_list": edges,
        "topo_type": "1DMESH" if cards > 1 else "CLOS",
    }


def topology_files(product: str) -> dict[str, str]:
    """Absolute path → text of every factory topology file of ``product`` (none before 950)."""
    known = PRODUCTS.get(product)
    if known is None or not known.is_950:
        return {}
    return {
        f"{TOPO_DIR_950}/{name}": json.dumps(topology_document(cards), indent=2) + "\n"
        for cards, name in known.topology_files
    }


def install_topology_files(root: Path, product: str) -> None:
    """Write the product's topology files below ``root`` (a node's upper layer), 0644."""
    for path, text in topology_files(product).items():
        target = Path(root) / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(0o644)
