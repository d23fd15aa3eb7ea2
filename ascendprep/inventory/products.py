"""What differs between Ascend products: NPU counts, the device-subnet rule, chip names.

Source: ``docs/ascend-reference.md`` §3 (device IP rules) and §4 (npu-smi), kept in one table so
the planner, the lab and the checks agree on what a product is.
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
    ),
}

#: The device vNIC's host side lives in 192.168.1.0/24; hccn_tool refuses device IPs there.
RESERVED_VNIC_SUBNET = "192.168.1.0/24"

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
