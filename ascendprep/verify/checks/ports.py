"""Port state checks: a port that trained below its rate, a half-duplex port, FEC that differs.

A ring all-reduce runs at the pace of its slowest link, so one port at 100 Gb/s in a 200 Gb/s
fleet halves the job without a single error anywhere. Per NPU: ``-speed -g`` against the
product's nominal rate (:attr:`ascendprep.inventory.products.Product.roce_port_mbps`) and ``-duplex -g``.
Across the fleet: speeds unlike the rest (where the product has no nominal rate, or a port runs
*above* it), and one FEC mode on every port (``-fec -g``; MindCluster's fault rules also treat
``no FEC mode`` on a RoCE port as a fault, docs/ascend-reference.md §4.7).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.base.findings import Severity
from ascendprep.verify.checks.context import ClusterContext, NodeContext
from ascendprep.verify.checks.model import Check, Verdict, failed, passed, skipped

_NEEDS = ("node.reachable", "node.hccn_tool")
Port = Tuple[str, int]


def _nominal(desired: Any) -> Optional[int]:
    return getattr(desired.inventory.product, "roce_port_mbps", None)


def _gbps(mbps: int) -> str:
    return f"{mbps / 1000:g} Gb/s"


def speed(ctx: NodeContext, npu: int) -> Verdict:
    live = ctx.facts.npus.get(npu)
    value = live.speed_mbps if live is not None else None
    nominal = _nominal(ctx.desired)
    evidence = {"npu_chip_link_speed": value, "nominal_mbps": nominal}
    if value is None:
        return skipped(
            "the port reports no speed ('Speed: Unknown!': the link is down, network.link reports it)", evidence
        )
    if nominal is None:
        return passed(
            f"port runs at {_gbps(value)} (no nominal rate known for this product; cluster check compares the fleet)",
            evidence,
        )
    if value < nominal:
        return failed(
            f"port trained at {_gbps(value)}, below the product's {_gbps(nominal)}",
            evidence,
            fix=f"check the module and cable type (a {_gbps(value)} module or DAC) and the switch port's configured speed; reseat, then hccn_tool -i {npu} -speed -g",
        )
    return passed(f"port runs at {_gbps(value)} (nominal {_gbps(nominal)})", evidence)


def duplex(ctx: NodeContext, npu: int) -> Verdict:
    live = ctx.facts.npus.get(npu)
    value = live.duplex if live is not None else None
    if value is None:
        return skipped("the port reports no duplex ('Duplex: Unknown!': the link is down)", {"duplex": None})
    if value != "full":
        return failed(
            f"port runs {value} duplex",
            {"duplex": value},
            fix="a RoCE port must run full duplex: check the switch port's settings and the cable",
        )
    return passed("port runs full duplex", {"duplex": value})


def _ports(ctx: ClusterContext, attribute: str, probe: str) -> Dict[Port, Any]:
    values: Dict[Port, Any] = {}
    for node, facts in ctx.gathered().items():
        for npu, live in sorted(facts.npus.items()):
            value = getattr(live, attribute, None)
            if value is not None and not facts.errors_for(probe, npu):
                values[(node, npu)] = value
    return values


def _majority(values: Dict[Port, Any]) -> Optional[Any]:
    """The value more than half the ports share, or None when there is no such majority."""
    counts = Counter(values.values()).most_common()
    if counts and counts[0][1] * 2 > len(values):
        return counts[0][0]
    return None


def speed_fleet(ctx: ClusterContext) -> List[Verdict]:
    """Ports whose speed differs from the majority; those under the nominal rate are left to
    ports.speed, which already names them (no finding twice for one port)."""
    speeds = _ports(ctx, "speed_mbps", "hccn.speed")
    if not speeds:
        return [skipped("no port reported a speed")]
    nominal = _nominal(ctx.desired)
    common = _majority(speeds)
    evidence_all = {"speeds_mbps": {f"{node}:{npu}": value for (node, npu), value in speeds.items()}}
    if common is None:
        groups = Counter(speeds.values())
        return [
            failed(
                "port speeds are split with no majority: "
                + ", ".join(f"{count} at {_gbps(value)}" for value, count in sorted(groups.items())),
                evidence_all,
                fix="bring every port to the same rate (module, cable, switch port speed)",
                severity=Severity.WARNING,
            )
        ]
    verdicts = []
    for (node, npu), value in speeds.items():
        if value == common or (nominal is not None and value < nominal):
            continue
        verdicts.append(
            failed(
                f"port runs at {_gbps(value)}, unlike the {_gbps(common)} of the rest of the fleet",
                {"npu_chip_link_speed": value, "fleet_mbps": common, "nominal_mbps": nominal},
                fix="bring every port to the same rate (module, cable, switch port speed)",
                severity=Severity.WARNING,
                node=node,
                npu=npu,
                subject=f"{node} npu {npu}",
            )
        )
    if not verdicts:
        verdicts.append(
            passed(
                f"{sum(1 for v in speeds.values() if v == common)} of {len(speeds)} ports run at {_gbps(common)}; the others are named by ports.speed"
                if len(set(speeds.values())) > 1
                else f"all {len(speeds)} ports run at {_gbps(common)}",
                evidence_all,
            )
        )
    return verdicts


def fec(ctx: ClusterContext) -> List[Verdict]:
    modes = _ports(ctx, "fec", "hccn.fec")
    if not modes:
        return [skipped("no port reported a FEC mode")]
    evidence_all = {"fec": {f"{node}:{npu}": value for (node, npu), value in modes.items()}}
    common = _majority(modes)
    groups: Dict[str, List[Port]] = defaultdict(list)
    for port, mode in modes.items():
        groups[mode].append(port)
    verdicts: List[Verdict] = []
    if len(groups) > 1:
        if common is None:
            verdicts.append(
                failed(
                    "FEC modes are split with no majority: "
                    + ", ".join(f"{len(ports)} ports {mode}" for mode, ports in sorted(groups.items())),
                    evidence_all,
                    fix="set one FEC mode on every port and its switch port (hccn_tool -i N -fec -s encoding rs)",
                )
            )
        else:
            for (node, npu), mode in modes.items():
                if mode != common:
                    verdicts.append(
                        failed(
                            f"FEC mode is '{mode}', unlike '{common}' on the other {len(groups[common])} ports",
                            {"fec": mode, "fleet_fec": common},
                            fix=f"set the fleet's FEC mode: hccn_tool -i {npu} -fec -s encoding {'off' if common == 'no' else common} (and the same on the switch port)",
                            node=node,
                            npu=npu,
                            subject=f"{node} npu {npu}",
                        )
                    )
    elif common == "no":
        verdicts.append(
            failed(
                f"no FEC on any of the {len(modes)} ports: MindCluster's fault rules treat 'no FEC mode' on a RoCE port as a fault",
                evidence_all,
                fix="enable RS-FEC on every port and switch port: hccn_tool -i N -fec -s encoding rs",
                severity=Severity.WARNING,
            )
        )
    if not verdicts:
        verdicts.append(passed(f"FEC mode '{common}' on all {len(modes)} ports", evidence_all))
    return verdicts


#: Per-NPU checks (run with the network checks) and fleet checks (run with the cluster checks).
CHECKS: List[Check] = [
    Check(
        "ports.speed",
        ("ports", "network"),
        "npu",
        Severity.ERROR,
        "each port runs at the product's nominal rate",
        "",
        speed,
        probes=("hccn.speed",),
        requires=_NEEDS,
    ),
    Check(
        "ports.duplex",
        ("ports", "network"),
        "npu",
        Severity.ERROR,
        "each port runs full duplex",
        "",
        duplex,
        probes=("hccn.duplex",),
        requires=_NEEDS,
    ),
]
CLUSTER_CHECKS: List[Check] = [
    Check(
        "ports.speed_fleet",
        ("ports", "cluster", "network"),
        "cluster",
        Severity.WARNING,
        "every port runs at the same rate as the rest of the fleet",
        "",
        speed_fleet,
    ),
    Check(
        "ports.fec", ("ports", "cluster", "network"), "cluster", Severity.ERROR, "one FEC mode on every port", "", fec
    ),
]
