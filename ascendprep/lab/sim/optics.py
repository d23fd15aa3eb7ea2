"""The simulated port's physical layer: ``-optical -g``, ``-speed -g``, ``-duplex -g``, ``-fec -g``.

Formats are the driver's (``tool.c`` ``tool_show_optical_info``, ``tool_ext.c``; docs/ascend-reference.md §1.4
and §4.7); the module's thresholds are those of the MindCluster documentation's capture
(RxPower Low Thres 0.1445 mW, Temp High Thres 70 C, ...). Grey faults, per node and NPU:

* ``optical-low-power``: lane 1 receives 0.05 mW (under the 0.1445 mW low alarm);
* ``optical-los``: lane 2 is dark with Rx LoS and Rx LoL set (``0x4``);
* ``optical-hot``: the module reads 76 C (high threshold 70 C);
* ``port-100g``: the port trained at 100 Gb/s;
* ``fec-mismatch``: the port runs ``auto`` FEC where the rest run ``rs``;

and the forms that must *not* fail a check:

* ``optical-copper``: an electrical (DAC) cable: present, ``temperature : not supported`` and
  ``NA`` for every reading, as the driver prints when the temperature is invalid;
* ``optical-not-present-readings``: ``present : not present`` followed by real readings (the
  real 910A capture's form), with clean flags.

Only stdlib imports: this runs on every simulated tool call.
"""

from __future__ import annotations

from .profiles import profile
from .state import faults_for, link_is_up

#: Device fault kinds this module renders (registered in :data:`state.FAULT_KINDS`).
OPTICS_FAULTS = (
    "optical-low-power",
    "optical-los",
    "optical-hot",
    "port-100g",
    "fec-mismatch",
    "optical-copper",
    "optical-not-present-readings",
)

#: Lane values of the faults (the issue's figures).
LOW_POWER_LANE, LOW_POWER_MW = 1, 0.05
LOS_LANE = 2
HOT_C = 76
DEGRADED_SPEED_MBPS = 100000
#: The module's thresholds (MindCluster docs' 910A capture of ``-optical -g``).
THRESHOLDS = (
    ("Vcc High Thres", "3465.00 mV"),
    ("Vcc Low Thres", "3135.00 mV"),
    ("Temp High Thres", "70 C"),
    ("Temp Low Thres", "0 C"),
    ("TxPower High Thres", "3.5481 mW"),
    ("TxPower Low Thres", "0.2818 mW"),
    ("RxPower High Thres", "3.5481 mW"),
    ("RxPower Low Thres", "0.1445 mW"),
)
_INVALID = (
    "Vcc",
    "Tx Power",
    "Rx Power",
    "Vcc High Thres",
    "Vcc Low Thres",
    "Temp High Thres",
    "Temp Low Thres",
    "TxPower High Thres",
    "TxPower Low Thres",
    "RxPower High Thres",
    "RxPower Low Thres",
)


def _row(name: str, value: str) -> str:
    return f"{name:<21}: {value}"


def _base(
    present: str, temperature: str, enabled: bool, vendor: tuple[str, str, str], identifier: str, wave: int
) -> list[str]:
    name, part, serial = vendor
    return [
        "optical info:",
        _row("present", present),
        _row("temperature", temperature),
        _row("high power enable reg", "enabled" if enabled else "not enabled"),
        _row("vendor name", name),
        _row("vendor part number", part),
        _row("vendor serial number", serial),
        _row("vendor org unique id", "0x0 0xe0 0xfc" if name else "0x0 0x0 0x0"),
        _row("xsfp identifier", identifier),
        _row("xsfp wave length", f"{wave} nm"),
        _row("manufact date code", "230415" if name else ""),
    ]


def optical_lines(doc: dict, devid: int) -> list[str]:
    """``-optical -g`` of one simulated port (a fibre cut, ``link-down``, darkens every lane)."""
    device, prof = doc["devices"][devid], profile(doc["product"])
    faults = faults_for(doc, devid)
    serial = f"LAB{doc['node'][:8].upper()}{devid:02d}"
    if not device["optical_present"]:
        return _base("not present", "NA", False, ("", "", ""), "NA", 0) + [_row(name, "NA") for name in _INVALID]
    if "optical-copper" in faults:
        return _base("present", "not supported", False, ("HUAWEI", "02311KNJ", serial), prof["xsfp_identifier"], 0) + [
            _row(name, "NA") for name in _INVALID
        ]
    present = "not present" if "optical-not-present-readings" in faults else "present"
    temperature = HOT_C if "optical-hot" in faults else 45 + devid % 5
    lines = _base(present, f"{temperature} C", True, ("HUAWEI", "34062286", serial), prof["xsfp_identifier"], 850)
    lines.append(_row("Vcc", f"{3262.90 + devid * 0.7:.2f} mV"))
    dark_all = "link-down" in faults
    for lane in range(4):
        rx = 0.7943 + 0.0097 * lane
        if dark_all or ("optical-los" in faults and lane == LOS_LANE):
            rx = 0.0
        elif "optical-low-power" in faults and lane == LOW_POWER_LANE:
            rx = LOW_POWER_MW
        lines.append(_row(f"Tx Power{lane}", f"{0.8912 + 0.0113 * lane:.4f} mW"))
        lines.append(_row(f"Rx Power{lane}", f"{rx:.4f} mW"))
    lines += [_row(name, value) for name, value in THRESHOLDS]
    lines += [_row(f"Tx Bias{lane}", f"{7.5000 + 0.125 * lane:.4f} mA") for lane in range(4)]
    rx_bad = 0xF if dark_all else (1 << LOS_LANE if "optical-los" in faults else 0)
    lines += [
        _row("Tx Los Flag", "0x0"),
        _row("Rx Los Flag", f"{rx_bad:#x}"),
        _row("Tx LoL Flag", "0x0"),
        _row("Rx LoL Flag", f"{rx_bad:#x}"),
    ]
    return lines


def speed_line(doc: dict, devid: int) -> str:
    """``-speed -g``: the product's rate, 100 Gb/s under ``port-100g``, ``Unknown!`` when down."""
    if not link_is_up(doc, devid):
        return "Speed: Unknown!"
    rate = DEGRADED_SPEED_MBPS if "port-100g" in faults_for(doc, devid) else profile(doc["product"])["port_speed_mbps"]
    return f"Speed: {rate} Mb/s"


def duplex_line(doc: dict, devid: int) -> str:
    """``-duplex -g``: ``Full`` with the link up, ``Unknown!`` when down."""
    return "Duplex: Full" if link_is_up(doc, devid) else "Duplex: Unknown!"


def fec_line(doc: dict, devid: int) -> str:
    """``-fec -g``: RS-FEC, or ``auto`` under ``fec-mismatch``."""
    mode = "auto" if "fec-mismatch" in faults_for(doc, devid) else "rs"
    return f"fec mode: {mode} FEC mode"
