"""Node faults of the Ascend 950 factory topology files (``job.topology_file``); lab/faults.py registers them.

* ``topo-missing``: every file of ``/usr/local/Ascend/driver/topo/950`` removed (an incomplete
  driver install, or what a container that mounts only ``driver/lib64`` sees);
* ``topo-wrong-file``, its unlike variant: the folder holds only another card count's file (the
  2-card ``atlas_350_2.json`` on a 4-card node; the 4-card file on a 1- or 2-card node), so the
  check names the file that is there instead of an empty folder.

Each records the files it removed and ``heal`` writes them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ascendprep.inventory.products import PRODUCTS
from ascendprep.lab.sim import topo950
from ascendprep.lab.system import LabError

if TYPE_CHECKING:
    from ascendprep.lab.running import RunningLab

TOPO_FAULTS = ("topo-missing", "topo-wrong-file")


def kept_file(product: str, cards: int) -> str:
    """The name ``topo-wrong-file`` leaves: the 2-card file on a 4-card node, else the 4-card one."""
    names = dict(PRODUCTS[product].topology_files)
    return names[2] if cards == 4 else names[4]


def inject(lab: "RunningLab", record: dict[str, Any], *, rate: Optional[str], version: Optional[str]) -> None:
    product = lab.spec.product
    files = topo950.topology_files(product)
    if not files:
        raise LabError(f"{record['kind']} needs an Ascend 950 lab (lab up --product atlas-350), not {product}")
    keep = kept_file(product, lab.node(record["node"]).npus) if record["kind"] == "topo-wrong-file" else None
    removed = {path: text for path, text in files.items() if path.rsplit("/", 1)[1] != keep}
    for path in removed:
        lab.node_op(record["node"], {"op": "remove", "path": path})
    record["saved"] = removed
    record["kept"] = keep


def heal(lab: "RunningLab", record: dict[str, Any]) -> None:
    lab.node_op(record["node"], {"op": "write-tree", "files": record["saved"]})
