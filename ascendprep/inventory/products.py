"""What differs between Ascend products: NPU counts, the device-subnet rule, chip names.

Source: ``docs/ascend-reference.md`` §3 (device IP rules) and §4 (npu-smi), and ``docs/ascend950.md``
for the Ascend 950 (A5) products, kept in one table so the planner, the lab and the checks agree on
what a product is.

A product the vendor has named but not documented far enough to prepare (Atlas 850 servers, the
Atlas 950 SuperPoD) is entered here as data with what is missing in ``undocumented``; the inventory
refuses it at load with that list rather than guessing. When the vendor publishes the missing
facts, filling them in and emptying ``undocumented`` is the whole change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional


class SubnetRule(str, Enum):
    """How device IPs of one server relate to subnets."""

    #: Atlas 800 (910): NPU i and i+4 share a subnet, NPUs 0-3 are in four different subnets,
    #: the same index on every server is in the same subnet (4 subnets per cluster).
    FOUR_PLANES = "four-planes"
    #: Atlas A2 (910B): NPUs in the same subnet is enough; a list of subnets means rails
    #: (NPU i uses subnet i mod k).
    POOL = "pool"
    #: Atlas A3 (910_93): each NPU has two dies (devids 2k and 2k+1) that must sit in different
    #: subnets; the die index picks the plane.
    DIE_PLANES = "die-planes"


class Generation(str, Enum):
    """The chip generation: it decides the tool syntax, the device addressing and the rank-table
    version HCCL accepts (1.0 on 910/910B, 1.2 on 910_93, 2.0 on 950: MindCluster
    ``ascend-operator`` rank-table ``factory.go``)."""

    ASCEND_910 = "910"
    ASCEND_910B = "910b"
    ASCEND_910_93 = "910_93"
    #: Ascend 950PR / 950DT, code name A5: mode-first hccn_tool with per-port ``-u/-p``, IPv4 on
    #: ``bond<slot>`` devices, npu-smi without ``-c``, rank table 2.0 with a factory topology file.
    ASCEND_950 = "950"


#: Where the 950 driver installs the factory topology files HCCL reads (HCCL user guide,
#: ``rank_table_config_a5.md``; HCOMM ``topo.c``).
TOPO_DIR_950 = "/usr/local/Ascend/driver/topo/950"


@dataclass(frozen=True)
class Product:
    id: str
    title: str
    chip: str
    allowed_npus: tuple[int, ...]
    default_npus: int
    subnet_rule: SubnetRule
    #: Planes (subnets) the rule needs, or 0 when any number of subnets will do.
    planes: int
    #: The chip key of the compatibility data's per-chip driver/firmware tables, if it has one.
    compat_chip: Optional[str] = None
    #: Nominal rate of one NPU RoCE port in Mb/s as ``hccn_tool -speed -g`` prints it; None when
    #: no public source gives it (then ports are only compared with the rest of the fleet).
    roce_port_mbps: Optional[int] = None
    #: Highest rank-table ``device_id`` HCCL accepts (docs/ranktable-rules.md R10: 7 on 910,
    #: 15 on 910B and 910_93).
    max_rank_device_id: int = 15
    #: Whether HCCL wants the same device count on every server of a rank table (R16: 910 only).
    same_devices_per_server: bool = False
    #: Dies per NPU card: A3 numbers its dies 0..15 (``npu*2 + chip``) for hccn_tool and the rank
    #: table, npu-smi numbers cards 0..7 and chips 0/1 (docs/a3-superpod.md §2).
    dies_per_npu: int = 1
    generation: Generation = Generation.ASCEND_910B
    #: The rank-table version this generation's HCCL accepts ("1.0", "1.2" or "2.0").
    ranktable_version: str = "1.0"
    #: The factory topology file HCCL reads for rank table 2.0, by NPUs per server (file names
    #: from HCOMM ``topo.c`` and MindCluster ``constants_v2.go``); empty before 950.
    topology_files: tuple[tuple[int, str], ...] = ()
    #: PCI device ids (``lspci -n``, vendor 19e5) and ``npu-smi info -l`` ``Product Name`` values
    #: that identify the product's cards on a host; empty where detection relies on the chip name.
    pci_device_ids: tuple[str, ...] = ()
    npu_smi_product_names: tuple[str, ...] = ()
    #: Chip names ``npu-smi info`` may print for this product (950 ships as 950PR and 950DT).
    chip_names: tuple[str, ...] = ()
    #: What no public source gives yet for this product; a non-empty list makes the inventory
    #: refuse the product ("not documented yet: ...") instead of guessing the missing facts.
    undocumented: tuple[str, ...] = ()

    @property
    def documented(self) -> bool:
        return not self.undocumented

    @property
    def is_950(self) -> bool:
        return self.generation is Generation.ASCEND_950

    def topology_file(self, npus: int) -> Optional[str]:
        """The full path of the factory topology file for a server with ``npus`` cards, if any."""
        name = dict(self.topology_files).get(npus)
        return f"{TOPO_DIR_950}/{name}" if name else None

    def plane_of(self, npu: int, subnet_count: int) -> int:
        """Which of the configured subnets NPU index ``npu`` must use."""
        if self.subnet_rule is SubnetRule.FOUR_PLANES:
            return npu % 4
        if self.subnet_rule is SubnetRule.DIE_PLANES:
            return npu % 2
        return npu % subnet_count


PRODUCTS: dict[str, Product] = {
    "atlas-800": Product(
        id="atlas-800",
        title="Atlas 800 training server (Ascend 910)",
        chip="910A",
        allowed_npus=(1, 2, 4, 8),
        default_npus=8,
        subnet_rule=SubnetRule.FOUR_PLANES,
        planes=4,
        generation=Generation.ASCEND_910,
        # Atlas 800 training server (model 9000) spec: 8 x 100GE RoCE ports on the NPU boards;
        # MindCluster's hccn_tool parser test reads "Speed: 100000 Mb/s" (docs/ascend-reference.md §1.4).
        roce_port_mbps=100000,
        max_rank_device_id=7,
        same_devices_per_server=True,
    ),
    "atlas-a2": Product(
        id="atlas-a2",
        title="Atlas A2 training server (Ascend 910B)",
        chip="910B3",
        allowed_npus=tuple(range(1, 9)),
        default_npus=8,
        subnet_rule=SubnetRule.POOL,
        planes=0,
        compat_chip="910b",
        # A 910B capture of hccn_tool -status -g shows "Speed: 200000Mb/s" (docs/ascend-reference.md §8, BLOG).
        roce_port_mbps=200000,
    ),
    "atlas-a3": Product(
        id="atlas-a3",
        title="Atlas A3 server (Ascend 910_93, two dies per NPU)",
        chip="Ascend910",
        allowed_npus=tuple(range(1, 17)),
        default_npus=16,
        subnet_rule=SubnetRule.DIE_PLANES,
        planes=2,
        dies_per_npu=2,
        generation=Generation.ASCEND_910_93,
        ranktable_version="1.2",
    ),
    "atlas-350": Product(
        id="atlas-350",
        title="Atlas 350 PCIe card (Ascend 950PR)",
        chip="950PR",
        # Atlas 350: a single card, or 2 or 4 cards in UB mesh (hicann/driver
        # docs/en/Ascend_950_HCCN_Tool; topology files atlas_350_1/2/3.json in HCOMM topo.c).
        allowed_npus=(1, 2, 4),
        default_npus=4,
        # No subnet layout for 950 bond devices is published: the subnets come from the inventory.
        subnet_rule=SubnetRule.POOL,
        planes=0,
        # Rank table 2.0 ``device_id`` (physical) is at most 64 (HCOMM ``new_rank_info.cc``).
        max_rank_device_id=64,
        generation=Generation.ASCEND_950,
        compat_chip="atlas-350",
        ranktable_version="2.0",
        topology_files=((1, "atlas_350_1.json"), (2, "atlas_350_2.json"), (4, "atlas_350_3.json")),
        pci_device_ids=("d806",),
        npu_smi_product_names=("A5 PCIe Card",),
        chip_names=("950PR", "950DT", "Ascend950PR", "Ascend950DT"),
    ),
}

#: Products the vendor names (HCOMM ``topo.c``, MindCluster ``constants_v2.go``) but documents too
#: little to prepare: hccn_tool and npu-smi are documented for the Atlas 350 card only.
UNDOCUMENTED_PRODUCTS: dict[str, Product] = {
    "atlas-850": Product(
        id="atlas-850",
        title="Atlas 850 server (Ascend 950, 8, 16 or 32 NPUs)",
        chip="950DT",
        allowed_npus=(8, 16, 32),
        default_npus=8,
        subnet_rule=SubnetRule.POOL,
        planes=0,
        max_rank_device_id=64,
        generation=Generation.ASCEND_950,
        ranktable_version="2.0",
        topology_files=((8, "atlas_850_1.json"), (16, "atlas_850_2.json"), (32, "atlas_850_3.json")),
        pci_device_ids=("d806",),
        chip_names=("950PR", "950DT", "Ascend950PR", "Ascend950DT"),
        undocumented=(
            "hccn_tool and npu-smi output on an Atlas 850 server",
            "the UB ports each NPU uses",
            "the content of the factory topology files atlas_850_*.json",
            "an addressing rule for the bond devices",
        ),
    ),
    "atlas-950-superpod": Product(
        id="atlas-950-superpod",
        title="Atlas 950 SuperPoD (Ascend 950)",
        chip="950DT",
        allowed_npus=(),
        default_npus=0,
        subnet_rule=SubnetRule.POOL,
        planes=0,
        max_rank_device_id=64,
        generation=Generation.ASCEND_950,
        ranktable_version="2.0",
        pci_device_ids=("d806",),
        chip_names=("950PR", "950DT", "Ascend950PR", "Ascend950DT"),
        undocumented=(
            "NPUs per server",
            "hccn_tool and npu-smi output in a SuperPoD",
            "which topology file a server reads (MindCluster names atlas_950_1.json and atlas_950_2.json, HCOMM maps both boards to atlas_950_1.json)",
            "the super-pod addressing (no SDID is printed)",
        ),
    ),
}


def product_problem(name: str) -> Optional[str]:
    """Why ``name`` cannot be used as an inventory's product, or None when it can."""
    if name in PRODUCTS:
        return None
    product = UNDOCUMENTED_PRODUCTS.get(name)
    if product is not None:
        return f"{product.title}: not documented yet: {'; '.join(product.undocumented)}"
    return f"'{name}' is not a product; choose one of {', '.join(sorted(PRODUCTS))}"


#: The device vNIC's host side lives in 192.168.1.0/24; hccn_tool refuses device IPs there.
RESERVED_VNIC_SUBNET = "192.168.1.0/24"

#: The Ascend 950 device vNIC (``end0v0``) in the vendor's ``hccn_tool -g -dev_info`` example is
#: 192.168.2.199/24, and the 950 driver refuses a bond address inside the vNIC's subnet
#: (``DEV_EXE_CONFLICT_IP_ADDR_ERR``, hicann/driver ``ascend950/hccn_tool/tool_shell_ops.c``
#: ``is_ipaddr_conflict``); the host side of the vNIC is ``RESERVED_VNIC_SUBNET`` as before.
VNIC_SUBNET_950 = "192.168.2.0/24"

#: The conventional Atlas 800 layout from the CANN install guide and ModelZoo: four /24s.
CONVENTIONAL_910_SUBNETS = ("192.168.100.0/24", "192.168.101.0/24", "192.168.102.0/24", "192.168.103.0/24")

#: What the A3 driver refuses as a RoCE device address (docs/a3-superpod.md §2, driver
#: ``tool_a3_ipaddr_conflict_extend``): inside a super-pod all of 192.0.0.0/8, otherwise
#: 192.168.0.0/21; both are kept for the HCCS virtual NICs (``192.<server>.<2+die>.<199-dev>``).
A3_RESERVED_IN_SUPERPOD = "192.0.0.0/8"
A3_RESERVED_OUTSIDE_SUPERPOD = "192.168.0.0/21"

#: Servers one A3 super-pod holds (the driver's ``A3_SUPERPOD_MAX_NUMS``; server indexes 0..47).
A3_SUPERPOD_MAX_SERVERS = 48


def reserved_device_ranges(product: Product, in_superpod: bool) -> tuple[tuple[str, str], ...]:
    """The ranges a device address must stay out of, each with why (for the plan's refusal)."""
    ranges = [(RESERVED_VNIC_SUBNET, "reserved for the device vNIC; hccn_tool refuses these addresses")]
    if product.dies_per_npu > 1:
        if in_superpod:
            ranges.append(
                (
                    A3_RESERVED_IN_SUPERPOD,
                    "reserved for the HCCS virtual NICs inside an A3 super-pod; the A3 driver refuses RoCE addresses there ('conflicted')",
                )
            )
        else:
            ranges.append(
                (
                    A3_RESERVED_OUTSIDE_SUPERPOD,
                    "reserved for the HCCS virtual NICs on A3; the A3 driver refuses RoCE addresses there ('conflicted')",
                )
            )
    return tuple(ranges)
