"""The NPUs' PCI device ids, read from sysfs: which Ascend generation the host holds.

The gather script prints ``<vendor> <device>`` for every PCI function (``/sys/bus/pci/devices/*/vendor``
and ``device``, as ``lspci -n`` shows them). Huawei's vendor id is ``0x19e5``; its NPUs are
``d801`` (Ascend 910), ``d802`` (910B), ``d803`` (910_93) and ``d806`` (Ascend 950), see
``docs/ascend-reference.md`` §4.5 and ``docs/ascend950.md``. Other Huawei functions (NICs, the
host's own chipset) are not NPUs and are left out here.
"""

from __future__ import annotations

import re
from typing import Tuple

from ascendprep.facts.text import UnexpectedOutput

HUAWEI_VENDOR = "19e5"

#: NPU PCI device id → the generation name :class:`ascendprep.inventory.products.Generation` uses.
NPU_DEVICE_IDS = {"d801": "910", "d802": "910b", "d803": "910_93", "d806": "950"}

_LINE = re.compile(r"^(?:0x)?([0-9a-fA-F]{4})\s+(?:0x)?([0-9a-fA-F]{4})$")


def parse_pci_ids(stdout: str) -> Tuple[str, ...]:
    """The device ids (lower case, no ``0x``) of the Huawei NPU functions, in the order listed."""
    found = []
    for raw in stdout.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _LINE.match(line)
        if match is None:
            raise UnexpectedOutput(f"{line[:80]!r} is not '<vendor> <device>' (0x19e5 0xd806)")
        vendor, device = match.group(1).lower(), match.group(2).lower()
        if vendor == HUAWEI_VENDOR and device in NPU_DEVICE_IDS:
            found.append(device)
    return tuple(found)
