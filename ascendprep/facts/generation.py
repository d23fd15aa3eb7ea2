"""Which Ascend generation a host's NPUs are, from its own facts, and the Ascend 950 NPUs' slots.

An inventory for one generation must never drive another's tools: the 950 rejects npu-smi's
``-c``, wants hccn_tool's mode first and keeps IPv4 on ``bond<slot>`` devices (``docs/ascend950.md``).
The host says what it is three ways, in this order of trust:

* the NPUs' PCI device ids (``d801`` 910, ``d802`` 910B, ``d803`` 910_93, ``d806`` 950);
* ``npu-smi info -l``'s ``Product Name`` (``A5 PCIe Card`` on the Atlas 350, hicann/driver
  ``docs/en/Ascend_950_npu-smi/.../querying-all-npu-devices.md``);
* ``npu-smi info -m``'s ``Chip Name`` (``950PR``/``950DT``; ``910B3``; ``Ascend910``).
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional

from ascendprep.facts.model import HostFacts
from ascendprep.facts.pci import NPU_DEVICE_IDS
from ascendprep.inventory.products import PRODUCTS, UNDOCUMENTED_PRODUCTS


class HostGeneration(NamedTuple):
    #: A :class:`ascendprep.inventory.products.Generation` value ("910b", "950", ...).
    generation: str
    #: What said so, for the finding (``PCI device id d806``).
    evidence: str


def _from_names(names: "list[str]", kind: str) -> Optional[HostGeneration]:
    products = [*PRODUCTS.values(), *UNDOCUMENTED_PRODUCTS.values()]
    for name in names:
        for product in products:
            if name in product.npu_smi_product_names or (kind == "chip" and name in product.chip_names):
                return HostGeneration(product.generation.value, f"npu-smi {kind} name {name!r}")
    return None


def host_generation(facts: HostFacts) -> Optional[HostGeneration]:
    """The generation the host's NPUs show, or None when nothing read tells (no NPU, not read)."""
    if facts.npu_pci_ids:
        kinds = sorted({NPU_DEVICE_IDS[device] for device in facts.npu_pci_ids})
        if len(kinds) == 1:
            device = facts.npu_pci_ids[0]
            return HostGeneration(kinds[0], f"PCI device id {device}")
    if facts.npu_smi is not None:
        names = [d.product_name for d in facts.npu_smi.devices if d.product_name]
        found = _from_names(names, "product")
        if found is not None:
            return found
    if facts.npu_chips:
        found = _from_names([c.chip_name for c in facts.npu_chips], "chip")
        if found is not None:
            return found
    return None


def npu_slots(facts: HostFacts) -> Dict[int, int]:
    """Ascend 950: NPU id → slot id from ``npu-smi info -m`` (the first row of each NPU; rows of
    an unavailable NPU, id -1, are left out); empty when the map was not read or has no slots."""
    slots: Dict[int, int] = {}
    for chip in facts.npu_chips or ():
        if chip.slot_id is not None and chip.npu_id >= 0:
            slots.setdefault(chip.npu_id, chip.slot_id)
    return slots
