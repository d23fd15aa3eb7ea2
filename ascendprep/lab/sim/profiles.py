"""Per-product facts the simulated hardware needs (chip names, port speed, dies, memory, PCI ids).

Product ids match :mod:`ascendprep.inventory.products` (``atlas-800``, ``atlas-a2``, ``atlas-a3``); this
table is separate because the simulator must start fast with stdlib imports only, and because it
holds simulator-only details (bus ids, baseline power) that the planner has no use for.
Sources: docs/ascend-reference.md §4 (npu-smi names, PCI device ids, HBM sizes), §1.3 (A3 devids
are dies, two per NPU), §8 (200G ports on A2).
"""

from __future__ import annotations

#: Bus ids of an 8-slot Atlas 800T A2 / 800 training server, in NPU order ([C] shape from captures,
#: the exact order per chassis is [I]).
_BUS_IDS_8 = (
    "0000:C1:00.0",
    "0000:C2:00.0",
    "0000:81:00.0",
    "0000:82:00.0",
    "0000:01:00.0",
    "0000:02:00.0",
    "0000:41:00.0",
    "0000:42:00.0",
)

PROFILES: dict[str, dict] = {
    "atlas-800": {
        "title": "Atlas 800 training server (Ascend 910)",
        "chip_name": "910A",
        "dies_per_npu": 1,
        "devid_counts": (1, 2, 4, 8),
        "port_speed_mbps": 100000,
        "port_prefix": "100GE",
        "pci_device_id": "0xD801",
        "hbm_mb": 32768,
        "hbm_used_mb": 0,
        "ddr_mb": 13553,
        "ddr_used_mb": 920,
        "power_w": 67.0,
        "xsfp_identifier": "QSFP28",
        "legacy_output": True,
        "chips": {"910A": 32768, "910B": 32768},
    },
    "atlas-a2": {
        "title": "Atlas A2 training server (Ascend 910B)",
        "chip_name": "910B3",
        "dies_per_npu": 1,
        "devid_counts": (1, 2, 3, 4, 5, 6, 7, 8),
        "port_speed_mbps": 200000,
        "port_prefix": "200GE",
        "pci_device_id": "0xD802",
        "hbm_mb": 65536,
        "hbm_used_mb": 3394,
        "ddr_mb": 0,
        "ddr_used_mb": 0,
        "power_w": 92.5,
        "xsfp_identifier": "QSFP56",
        "legacy_output": False,
        #: Names npu-smi prints for A2 chips and their HBM (MB), from published npu-smi captures.
        "chips": {"910B1": 65536, "910B2": 65536, "910B2C": 65536, "910B3": 65536, "910B4": 32768, "910B4-1": 65536},
    },
    "atlas-a3": {
        "title": "Atlas A3 server (Ascend 910_93, two dies per NPU)",
        "chip_name": "Ascend910",
        "dies_per_npu": 2,
        "devid_counts": tuple(range(1, 17)),
        "port_speed_mbps": 200000,
        "port_prefix": "200GE",
        "pci_device_id": "0xD803",
        "hbm_mb": 65536,
        "hbm_used_mb": 3196,
        "ddr_mb": 0,
        "ddr_used_mb": 0,
        "power_w": 178.7,
        "xsfp_identifier": "QSFP56",
        "legacy_output": False,
        "chips": {"Ascend910": 65536},
    },
    # Ascend 950PR on the Atlas 350 PCIe card: 1, 2 or 4 cards, UB between them (lab/sim/ub950.py);
    # PCI device id and npu-smi forms from hicann/driver docs/en/Ascend_950_npu-smi.
    "atlas-350": {
        "title": "Atlas 350 PCIe card (Ascend 950PR)",
        "chip_name": "950PR",
        "dies_per_npu": 1,
        "devid_counts": (1, 2, 4),
        "port_speed_mbps": 400000,
        "port_prefix": "UB",
        "pci_device_id": "0xD806",
        "hbm_mb": 86016,
        "hbm_used_mb": 4439,
        "ddr_mb": 0,
        "ddr_used_mb": 0,
        "power_w": 204.4,
        "xsfp_identifier": "NA",
        "legacy_output": False,
        "a5": True,
        "chips": {"950PR": 86016, "950DT": 86016},
    },
}


def profile(product: str) -> dict:
    """The profile of ``product``; ValueError naming the known products otherwise."""
    try:
        return PROFILES[product]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown product {product!r} (known: {known})") from None


def bus_id(product: str, devid: int) -> str:
    """PCI bus id shown by npu-smi for hccn devid ``devid`` (A3: one bus id per die).

    A3: NPU n's dies sit at 0x9D - 4n and 0x9F - 4n (9D/9F, 99/9B, ... 81/83), as every published
    8-NPU A3 ``npu-smi info`` capture shows (e.g. vllm-ascend issue reports).
    """
    if product == "atlas-a3":
        npu, die = divmod(devid, 2)
        return f"0000:{(0x9D - 4 * npu + 2 * die) % 0x100:02X}:00.0"
    return _BUS_IDS_8[devid % len(_BUS_IDS_8)]


def check_chip(product: str, chip: object, where: str) -> str:
    """``chip`` if npu-smi prints that name for ``product``; ValueError naming the known ones."""
    chips = profile(product)["chips"]
    if chip not in chips:
        raise ValueError(f"{where}: {product} chips are named {', '.join(chips)}, not {chip!r}")
    return str(chip)
