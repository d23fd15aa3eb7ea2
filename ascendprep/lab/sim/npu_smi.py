"""Simulated ``npu-smi`` for the ascendprep lab: ``python -m ascendprep.lab.sim.npu_smi info ...``.

Supported (docs/ascend-reference.md §4): ``info`` (the 910B table, 116 characters wide from driver 26 on
as npu-smi 26.x prints it; Atlas A3 prints two chip rows per NPU),
``info -l``, ``info -t health -i N [-c C]``, ``info -t board -i N [-c C]``.

* Versions come from the node's own files, as on a real host: the header and ``Software
  Version`` read ``Version=`` of ``usr/local/Ascend/driver/version.info``, ``Firmware Version``
  reads ``usr/local/Ascend/firmware/version.info`` (under ``ASCENDPREP_LAB_ROOT``, default /).
* Health: ``OK``; ``Alarm`` with the ``npu-alarm`` fault, ``Critical`` with ``npu-critical``
  (the worst wins); ``npu-subhealth`` and ``npu-unknown-code`` raise one event code each
  (:data:`CODE_FAULTS`). Lab faults name hccn devids; on A3 NPU ``n`` holds devids ``2n`` and ``2n+1``.
* Key/value outputs are tab-indented with the key padded to 31 characters, as in captures.
* [I] With the default (``current``) driver profile an unknown NPU or chip id prints
  ``Invalid NPU ID: N.`` (or ``Invalid chip ID``) plus a hint on stderr and exit 1. A node with
  the ``legacy`` profile prints what npu-smi itself prints: ``Error parameter of -i`` and the
  usage text for a value that is not a number, ``Invalid card id.`` for a card that does not
  exist (``Invalid chip id.`` likewise); an alarm carries several codes with the ``Error
  Information`` continued on empty-key lines; a first-generation 910 shows as ``910B``.
  Unsupported ``info`` forms say so on stderr, exit 1.
"""

from __future__ import annotations

import os
import sys

from . import npu_smi950, superpod
from .driver_profiles import is_legacy
from .identity import LabSetupError, load_identity, system_root
from .npu_procs import process_rows
from .profiles import bus_id, profile
from .state import LabStateError, faults_for, read_node

DRIVER_VERSION_FILE = "usr/local/Ascend/driver/version.info"
FIRMWARE_VERSION_FILE = "usr/local/Ascend/firmware/version.info"


class TableLayout:
    """The ``npu-smi info`` box of one npu-smi generation: widths and header lines."""

    def __init__(
        self,
        third: int,
        fields: tuple[int, int, int],
        version_width: int,
        header_a: str,
        header_b: str,
        header_b_a3: str,
        process_header: str,
    ) -> None:
        width = 27 + 1 + 15 + 1 + third
        self.rule = "+" + "-" * width + "+"
        self.columns = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * third + "+"
        self.double = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * third + "+"
        self.width, self.fields, self.version_width = width, fields, version_width
        self.header_a, self.header_b, self.header_b_a3 = header_a, header_b, header_b_a3
        self.process_header = process_header


#: Up to 25.x (docs/ascend-reference.md §4.1): a 96-character box.
NARROW = TableLayout(
    52,
    (12, 18, 21),
    33,
    "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
    "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
    "| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
    "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |",
)
#: npu-smi 26.x: a 116-character box with wider value columns and a "Process id in container"
#: column (captures of 26.0.rc1 on 910B4 in the Triton-Ascend FAQ, and on an A3 in public tests).
WIDE = TableLayout(
    70,
    (21, 24, 24),
    44,
    "| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |",
    "| Chip                      | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |",
    "| Chip  Phy-ID              | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |",
    "| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |",
)
#: First driver major version whose npu-smi prints the wide table.
WIDE_TABLE_FROM = 26


def table_layout(driver: str) -> TableLayout:
    """The table of the npu-smi shipped with driver ``driver`` (``26.0.rc1`` → wide)."""
    major = driver.split(".", 1)[0]
    return WIDE if major.isdigit() and int(major) >= WIDE_TABLE_FROM else NARROW


#: Simulated alarm details per health state: (error code, error information).
_ALARMS = {
    "Alarm": (
        "80E18402",
        "node type=SOC, sensor type=Health, event state=major alarm (ascendprep lab fault npu-alarm)",
    ),
    "Critical": (
        "80CB8009",
        "node type=SOC, sensor type=Health, event state=critical alarm (ascendprep lab fault npu-critical)",
    ),
}


#: An older driver's alarm details: several codes, the information continued on empty-key lines
#: (docs/ascend-reference.md §4.7; codes as in Ascend/mind-cluster's fault-diagnosis tests).
_LEGACY_ALARMS = {
    "Alarm": (
        "A4025021 8C03A000 8C084E00",
        (
            "node type=DEVICE, sensor type=Heartbeat, event state=adda heartbeat lost",
            "node type=SoC, sensor type=General, event state=major alarm (ascendprep lab fault npu-alarm)",
            "node type=DEVICE, sensor type=Heartbeat, event state=lost",
        ),
    ),
    "Critical": (
        "80CB8009 8C084E00",
        (
            "node type=SOC, sensor type=Health, event state=critical alarm (ascendprep lab fault npu-critical)",
            "node type=DEVICE, sensor type=Heartbeat, event state=lost",
        ),
    ),
}

#: npu-smi's own usage text for ``info`` (as printed after ``Error parameter of -<x>`` by the
#: 910B-era tool; the type list is shortened to the simulated ones).
INFO_USAGE = (
    "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n"
    "\n"
    "Commands:\n"
    "       watch          Show all device's status in scrolling format\n"
    "       proc           Show device's matrix process status in scrolling format\n"
    "       -h, --help     Show this help text and exit\n"
    "       -m             Show all device's mapping information\n"
    "       -l             Show all device's topology information\n"
    "       -t type        Show information for type\n"
    "                      type: board, health.\n"
    "\n"
    "Options:\n"
    "       -i %d          Card ID\n"
    "       -c %d          Chip ID\n"
)


class UsageError(Exception):
    """Arguments the simulated npu-smi does not accept; the message is printed on stderr."""


def read_key(path: str, key: str) -> str | None:
    """``key=value`` lookup in a version.info-style file; None when the file or key is absent."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                name, sep, value = line.partition("=")
                if sep and name.strip() == key:
                    return value.strip()
    except FileNotFoundError:
        return None
    return None


def _kv(key: str, value: object) -> str:
    return f"\t{key:<31}: {value}"


#: Lab faults that raise one specific event code, the worst first: kind -> (health,
#: code, the code as the ``legacy`` driver prints it, information). ``npu-subhealth`` raises a
#: code the vendor's fault table lists (81078605, SubHealth: some lanes of a RoCE port faulty);
#: ``npu-unknown-code`` one it does not, which an older driver prints in decimal (docs/ascend-reference.md §4.7).
CODE_FAULTS = {
    "npu-unknown-code": (
        "Alarm",
        "8FFF0001",
        str(0x8FFF0001),
        "node type=SOC, sensor type=General, event state=undescribed event (ascendprep lab fault npu-unknown-code)",
    ),
    "npu-subhealth": (
        "Warning",
        "81078605",
        "81078605",
        "node type=NPU, sensor type=Network, event state=some lanes faulty (ascendprep lab fault npu-subhealth)",
    ),
}


def health_of(doc: dict, devid: int) -> str:
    """``OK``, ``Warning``, ``Alarm`` or ``Critical`` from the node's injected faults for one devid."""
    kinds = faults_for(doc, devid)
    if "npu-critical" in kinds:
        return "Critical"
    if "npu-alarm" in kinds:
        return "Alarm"
    for kind, (state, *_rest) in CODE_FAULTS.items():
        if kind in kinds:
            return state
    return "OK"


def _worst(states: list[str]) -> str:
    order = ("OK", "Warning", "Alarm", "Critical")
    return max(states, key=order.index)


def _code_fault_rows(doc: dict, devids: list[int]) -> list[str] | None:
    """Health rows of a code fault, when one applies and no npu-alarm/npu-critical outranks it."""
    kinds = set().union(*(faults_for(doc, devid) for devid in devids))
    if kinds & {"npu-alarm", "npu-critical"}:
        return None
    for kind, (state, code, legacy_code, information) in CODE_FAULTS.items():
        if kind in kinds:
            shown = legacy_code if is_legacy(doc) else code
            return [_kv("Health Status", state), _kv("Error Code", shown), _kv("Error Information", information)]
    return None


class Topology:
    """NPU/chip numbering of a node: one chip per NPU, or two dies per NPU on A3."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self.product = doc["product"]
        self.prof = profile(self.product)
        self.dies = self.prof["dies_per_npu"]
        self.devid_count = len(doc["devices"])
        self.npu_count = (self.devid_count + self.dies - 1) // self.dies

    def devids(self, npu: int) -> list[int]:
        """hccn devids of NPU ``npu`` (an odd A3 devid count leaves the last NPU one die)."""
        return [d for d in range(npu * self.dies, (npu + 1) * self.dies) if d < self.devid_count]

    def check(self, npu_text: str, chip_text: str | None) -> tuple[int, int | None]:
        if is_legacy(self.doc):
            return self._check_legacy(npu_text, chip_text)
        if not (npu_text.isascii() and npu_text.isdigit()) or int(npu_text) >= self.npu_count:
            raise UsageError(f"Invalid NPU ID: {npu_text}. Run [npu-smi info -l] to query the valid NPU IDs.")
        if chip_text is None:
            return int(npu_text), None
        chips = len(self.devids(int(npu_text)))
        if not (chip_text.isascii() and chip_text.isdigit()) or int(chip_text) >= chips:
            raise UsageError(f"Invalid chip ID: {chip_text}. NPU {npu_text} has {chips} chip(s).")
        return int(npu_text), int(chip_text)

    def _check_legacy(self, npu_text: str, chip_text: str | None) -> tuple[int, int | None]:
        """npu-smi's own answers: a non-number is a parameter error with the usage, a number
        that names no card ``Invalid card id.``."""
        for flag, text in (("-i", npu_text), ("-c", chip_text)):
            if text is not None and not (text.isascii() and text.isdigit()):
                raise UsageError(f"Error parameter of {flag}\n{INFO_USAGE}".rstrip("\n"))
        if int(npu_text) >= self.npu_count:
            raise UsageError("Invalid card id.")
        if chip_text is not None and int(chip_text) >= len(self.devids(int(npu_text))):
            raise UsageError("Invalid chip id.")
        return int(npu_text), None if chip_text is None else int(chip_text)

    @property
    def chip_name(self) -> str:
        """The Name column: the lab's chip (``lab up --chip``), else the product's; a
        first-generation 910 reads ``910B`` on older drivers."""
        if self.doc.get("chip"):
            return self.doc["chip"]
        if is_legacy(self.doc) and self.product == "atlas-800":
            return "910B"
        return self.prof["chip_name"]

    @property
    def hbm_mb(self) -> int:
        return self.prof["chips"].get(self.chip_name, self.prof["hbm_mb"])


def _usage_pair(used: int, total: int) -> str:
    return f"{used:<5}/ {total}"


def info_table(doc: dict, driver: str) -> str:
    """The ``npu-smi info`` box: header, two rows per chip, then the process table (a row per
    chip with the ``npu-busy`` fault, see :mod:`.npu_procs`).

    Its width follows the npu-smi generation (:func:`table_layout`), as on real hosts."""
    topo = Topology(doc)
    prof = topo.prof
    box = table_layout(driver)
    power_w, temp_w, third_w = box.fields
    lines = [
        box.rule,
        "| "
        + f"npu-smi {driver}".ljust(box.version_width)
        + f"Version: {driver}".ljust(box.width - box.version_width - 1)
        + "|",
        box.columns,
        box.header_a,
        box.header_b_a3 if topo.dies > 1 else box.header_b,
        box.double,
    ]
    for npu in range(topo.npu_count):
        for chip, devid in enumerate(topo.devids(npu)):
            power = f"{prof['power_w'] + 0.6 * devid:.1f}" if chip == 0 else "-"
            temp = str(38 + (devid * 3) % 9)
            first = (
                " " + str(npu).ljust(6) + topo.chip_name.ljust(20),
                " " + health_of(doc, devid).ljust(14),
                " " + power.ljust(power_w) + temp.ljust(temp_w) + _usage_pair(0, 0).ljust(third_w),
            )
            label = (str(chip).ljust(6) + str(devid)) if topo.dies > 1 else str(chip)
            hbm_used = prof["hbm_used_mb"] + (7 * devid if prof["hbm_used_mb"] else 0)
            ddr_used = prof["ddr_used_mb"] + (37 * devid if prof["ddr_used_mb"] else 0)
            second = (
                " " + label.ljust(26),
                " " + bus_id(topo.product, devid).ljust(14),
                " "
                + "0".ljust(power_w)
                + _usage_pair(ddr_used, prof["ddr_mb"]).ljust(temp_w)
                + _usage_pair(hbm_used, topo.hbm_mb).ljust(third_w),
            )
            lines.append("|" + "|".join(first) + "|")
            lines.append("|" + "|".join(second) + "|")
            if chip + 1 < len(topo.devids(npu)):
                lines.append(box.rule)
        lines.append(box.double)
    lines += [box.columns, box.process_header, box.double]
    for npu in range(topo.npu_count):
        lines += process_rows(doc, npu, topo.devids(npu), box.process_header, box.width)
        lines.append(box.double)
    return "\n".join(lines) + "\n"


def info_list(doc: dict) -> str:
    """``npu-smi info -l``."""
    topo = Topology(doc)
    lines = [_kv("Total Count", topo.npu_count), ""]
    for npu in range(topo.npu_count):
        lines += [_kv("NPU ID", npu), _kv("Chip Count", len(topo.devids(npu))), ""]
    return "\n".join(lines) + "\n"


def info_health(doc: dict, npu: int, chip: int | None) -> str:
    """``npu-smi info -t health -i N [-c C]`` (the 910/910B ``Health Status`` form)."""
    topo = Topology(doc)
    devids = topo.devids(npu) if chip is None else [topo.devids(npu)[chip]]
    state = _worst([health_of(doc, devid) for devid in devids])
    coded = _code_fault_rows(doc, devids)
    if coded is not None:
        return "\n".join(coded) + "\n"
    if is_legacy(doc) and state in _LEGACY_ALARMS:
        code, lines = _LEGACY_ALARMS[state]
        rows = [_kv("Health Status", state), _kv("Error Code", code), _kv("Error Information", lines[0])]
        rows += [_kv("", line) for line in lines[1:]]
        return "\n".join(rows) + "\n"
    code, information = _ALARMS.get(state, ("NA", "NA"))
    rows = [_kv("Health Status", state), _kv("Error Code", code), _kv("Error Information", information)]
    return "\n".join(rows) + "\n"


def info_board(doc: dict, npu: int, chip: int | None, driver: str, firmware: str) -> str:
    """``npu-smi info -t board -i N`` (board form) or ``... -c C`` (chip form)."""
    topo = Topology(doc)
    devid = topo.devids(npu)[chip or 0]
    if chip is None:
        rows = [
            ("NPU ID", npu),
            ("Software Version", driver),
            ("Firmware Version", firmware),
            ("Compatibility", "OK"),
            ("Board ID", "0x02"),
            ("PCB ID", "A"),
            ("BOM ID", 1),
            ("PCIe Bus Info", bus_id(topo.product, devid)),
            ("Slot ID", npu),
            ("Class ID", "NA"),
            ("PCI Vendor ID", "0x19e5"),
            ("PCI Device ID", topo.prof["pci_device_id"]),
            ("Subsystem Vendor ID", "0x0200"),
            ("Subsystem Device ID", "0x0100"),
            ("Chip Count", len(topo.devids(npu))),
        ]
    else:
        rows = [
            ("NPU ID", npu),
            ("Chip ID", chip),
            ("Chip Type", "Ascend"),
            ("Chip Name", topo.chip_name),
            ("Chip Version", "V1"),
            ("Board ID", "0x02"),
            ("PCB ID", "NA"),
            ("BOM ID", 1),
            ("Chip Position ID", chip),
            ("PCIe Bus Info", bus_id(topo.product, devid)),
            ("Firmware Version", firmware),
        ]
    return "\n".join(_kv(key, value) for key, value in rows) + "\n"


def _options(args: list[str]) -> dict[str, str]:
    """``-t health -i 0 -c 0`` -> {"-t": "health", "-i": "0", "-c": "0"}; UsageError otherwise."""
    options: dict[str, str] = {}
    index = 0
    while index < len(args):
        flag = args[index]
        if flag not in ("-t", "-i", "-c") or index + 1 >= len(args) or flag in options:
            raise UsageError(f"unsupported arguments: {' '.join(args)}")
        options[flag] = args[index + 1]
        index += 2
    return options


def render(args: list[str], doc: dict, root: str) -> str:
    """The stdout of ``npu-smi <args>``; UsageError for what the simulator does not offer."""
    if not args or args[0] != "info":
        raise UsageError(f"unsupported command: npu-smi {' '.join(args)} (the lab simulates 'npu-smi info')")
    driver = read_key(os.path.join(root, DRIVER_VERSION_FILE), "Version")
    if driver is None:
        raise UsageError(f"driver not installed: {os.path.join(root, DRIVER_VERSION_FILE)} has no Version=")
    rest = args[1:]
    if doc["product"] == npu_smi950.PRODUCT:
        firmware = read_key(os.path.join(root, FIRMWARE_VERSION_FILE), "Version") or "NA"
        try:
            return npu_smi950.render(args, doc, driver, firmware, health_of)
        except npu_smi950.Refused as exc:
            raise UsageError(str(exc).rstrip("\n")) from None
    if not rest:
        return info_table(doc, driver)
    if rest == ["-l"]:
        return info_list(doc)
    options = _options(rest)
    kind = options.get("-t")
    if kind not in ("health", "board", "spod-info") or "-i" not in options:
        raise UsageError(
            f"unsupported arguments: {' '.join(rest)} (simulated: -l, -t health|board|spod-info -i N [-c C])"
        )
    npu, chip = Topology(doc).check(options["-i"], options.get("-c"))
    if kind == "spod-info":
        if doc["product"] != "atlas-a3" or chip is None:
            raise UsageError(
                f"spod-info: {'give the chip (-c)' if doc['product'] == 'atlas-a3' else 'not supported on this product'}"
            )
        return superpod.spod_info(doc, npu, chip)
    if kind == "health":
        return info_health(doc, npu, chip)
    firmware = read_key(os.path.join(root, FIRMWARE_VERSION_FILE), "Version") or "NA"
    return info_board(doc, npu, chip, driver, firmware)


#: What npu-smi prints when its DCMI library cannot open the NPUs because another container or
#: process holds them (public container guides); the ``npu-smi-dcmi`` lab fault. [I] stream and
#: exit status are not in the sources: stdout and 1 here.
DCMI_DEVICE_USED = (
    "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
    "dcmi model initialized failed, because the device is used. ret is -8020\n"
)


def run(args: list[str], out, err) -> int:
    """Run one ``npu-smi`` invocation; return the exit status."""
    try:
        identity = load_identity()
        doc = read_node(identity.state_dir, identity.node)
        if any(fault["kind"] == "npu-smi-dcmi" for fault in doc.get("faults", [])):
            out.write(DCMI_DEVICE_USED)
            return 1
        text = render(args, doc, system_root())
    except (LabSetupError, LabStateError) as exc:
        err.write(f"npu-smi (ascendprep lab simulator): {exc}\n")
        return 1
    except UsageError as exc:
        err.write(f"{exc}\n")
        return 1
    out.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``argv`` without the program name (defaults to ``sys.argv[1:]``)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return run(args, sys.stdout, sys.stderr)
    finally:
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
