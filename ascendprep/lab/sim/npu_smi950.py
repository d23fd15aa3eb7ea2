"""The Ascend 950 (Atlas 350) forms of the simulated ``npu-smi`` (lab product ``atlas-350``).

Forms from the vendor's documented examples (hicann/driver @ ef377e9, ``docs/en/Ascend_950_npu-smi``):
plain ``info`` (querying-basic-information.md: a 99-character box, one row pair per card with
``NPU ID | Name | Health`` and no ``Chip`` column, then a process table whose first column is
``NPU ID``; that page shows only the idle line, so a busy card's row, under the ``npu-busy`` lab
fault, is the 910 row less the chip [I]), ``info -l`` (``Product Name : A5 PCIe Card``, no ``Chip Count``), ``info -m`` (``Slot ID`` and
``Chip Phy-ID`` columns), ``info -t board -i N`` (``PCI Device ID : 0xD806``, ``Slot ID``),
``info -t health -i N`` (``Health``, ``Error Code``, ``Error Information``) and ``info -t
sio-info -i N`` (die-to-die error counts). Queries are card level: the 950 tool's help lists ``-i``
and ``-p`` and no ``-c``; a call with ``-c`` gets that help text on stderr, exit 1 ([I]: the exact
refusal is not documented; SwanLab PR #1719 reports that ``-c`` is rejected on 950). The lab's
slot id is the NPU id.

Only stdlib imports: this module is on the start-up path of every simulated tool call.
"""

from __future__ import annotations

from .npu_procs import BUSY_MEMORY_MB, BUSY_NAME, FAULT, busy_pid
from .profiles import bus_id, profile
from .state import faults_for

PRODUCT = "atlas-350"

#: ``npu-smi info -h`` of the 950 tool (printing-information-query-help.md).
INFO_HELP = (
    "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n"
    "\n"
    "Commands:\n"
    "       watch          Show all device's status in scrolling format\n"
    "       proc           Show device's matrix process status in scrolling format\n"
    "       -h, --help     Show this help text and exit\n"
    "       -m             Show all device's mapping information\n"
    "       -l             Show all device's topology information\n"
    "       -t type        Show information for type\n"
    "                      type: board, common, flash, memory, usages, temp, power, volt, health,\n"
    "                            current-fault-event, ecc, ecc-enable, sensors, sys-time, key-manage,\n"
    "                            proc-mem, phyid-remap, topo, spod-info, sio-info, sys-log-info,\n"
    "                            tls-csr-get, tls-cert, tls-cert-period.\n"
    "\n"
    "Options:\n"
    "       -i %d          NPU ID\n"
    "       -p %d          Chip Physical ID\n"
)


class Refused(Exception):
    """A call the 950 npu-smi refuses: the text for stderr."""


def _kv(key: str, value: object, indent: str = "") -> str:
    return f"{indent}{key:<31}: {value}"


def info_list(doc: dict) -> str:
    count = len(doc["devices"])
    lines = [_kv("Total Count", count), ""]
    for npu in range(count):
        lines += [_kv("NPU ID", npu), _kv("Product Name", "A5 PCIe Card"), _kv("Serial Number", f"LAB950{npu:09d}"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def info_mapping(doc: dict) -> str:
    chip = doc.get("chip") or profile(PRODUCT)["chip_name"]
    lines = [f"{'NPU ID':<16}{'Slot ID':<17}{'Chip ID':<17}{'Chip Phy-ID':<21}{'Chip Name':<29}"]
    for npu in range(len(doc["devices"])):
        lines.append(f"{npu:<16}{npu:<17}{0:<17}{npu:<21}{chip:<29}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def info_board(doc: dict, npu: int, driver: str, firmware: str) -> str:
    chip = doc.get("chip") or profile(PRODUCT)["chip_name"]
    rows = [
        ("NPU ID", npu),
        ("Product Name", "Atlas 350"),
        ("NPU Name", "Ascend950"),
        ("Chip Name", chip),
        ("Chip Version", "V1"),
        ("Model", "Atlas 350"),
        ("Manufacturer", "Huawei"),
        ("Serial Number", f"LAB950{npu:09d}"),
        ("Software Version", driver),
        ("Firmware Version", firmware),
        ("Compatibility", "OK"),
        ("Board ID", "0x1b"),
        ("Main Board ID", f"0x68({len(doc['devices'])}P)"),
        ("PCB ID", "A"),
        ("BOM ID", 1),
        ("PCIe Bus Info", bus_id(PRODUCT, npu)),
        ("Slot ID", npu),
        ("Class ID", "NA"),
        ("PCI Vendor ID", "0x19E5"),
        ("PCI Device ID", profile(PRODUCT)["pci_device_id"]),
        ("Subsystem Vendor ID", "0x19E5"),
        ("Subsystem Device ID", "0x4004"),
        ("Chip Count", 1),
        ("Chip Position ID", 0),
    ]
    return "\n".join(_kv(key, value, "              ") for key, value in rows) + "\n"


#: Cell widths of the plain ``npu-smi info`` box (between the bars), as on the documented page.
INFO_CELLS = (8, 18, 15, 53)
PROCESS_CELLS = (27, 15, 26, 26)
INFO_WIDTH = sum(INFO_CELLS) + len(INFO_CELLS) - 1


def _row(cells: tuple[int, ...], values: list[str]) -> str:
    return "|" + "|".join((" " + value).ljust(width) for value, width in zip(values, cells)) + "|"


def _rule(cells: tuple[int, ...], fill: str) -> str:
    return "+" + "+".join(fill * width for width in cells) + "+"


def info_table(doc: dict, driver: str, health_of) -> str:
    """Plain ``npu-smi info``: the card rows, then the process table (see the module docstring)."""
    prof = profile(PRODUCT)
    chip = doc.get("chip") or prof["chip_name"]
    hbm_total = prof["chips"].get(chip, prof["hbm_mb"])
    title = (" " + f"npu-smi {driver}".ljust(40) + f"Version: {driver}").ljust(INFO_WIDTH)
    top = _rule((27, 15, 53), "-")
    lines = [
        "+" + "-" * INFO_WIDTH + "+",
        "|" + title + "|",
        top,
        _row(INFO_CELLS, ["NPU ID", "Name", "Health", "Power(W)    Temp(C)           Hugepages-Usage(page)"]),
        _row(INFO_CELLS, ["", "", "Bus-Id", "NPU Util(%) Memory-Usage(MB)  HBM-Usage(MB)"]),
        _rule(INFO_CELLS, "="),
    ]
    count = len(doc["devices"])
    for npu in range(count):
        power = f"{prof['power_w'] + 0.6 * npu:.1f}"
        temp = str(38 + (npu * 3) % 9)
        hbm = f"{prof['hbm_used_mb'] + 7 * npu:<5} / {hbm_total}"
        lines.append(_row(INFO_CELLS, [str(npu), chip, health_of(doc, npu), f"{power:<12}{temp:<18}0     / 0"]))
        lines.append(_row(INFO_CELLS, ["", "", bus_id(PRODUCT, npu), f"{'0':<12}{'0    / 0':<18}{hbm}"]))
        lines.append(_rule(INFO_CELLS, "="))
    lines += [
        top,
        _row(PROCESS_CELLS, ["NPU ID", "Process id", "Process name", "Process memory(MB)"]),
        _rule((27, 15, 53), "="),
    ]
    for npu in range(count):
        if FAULT in faults_for(doc, npu):
            values = [str(npu), str(busy_pid(npu)), BUSY_NAME, str(BUSY_MEMORY_MB)]
            lines.append(_row(PROCESS_CELLS, values))
        else:
            lines.append("|" + f" No running processes found in NPU {npu}".ljust(INFO_WIDTH) + "|")
        lines.append(_rule((27, 15, 53), "="))
    return "\n".join(lines) + "\n"


def render(args: list[str], doc: dict, driver: str, firmware: str, health_of) -> str:
    """The stdout of ``npu-smi <args>`` on a 950 node; :class:`Refused` for a 910 form."""
    if "-c" in args:
        raise Refused(INFO_HELP)
    rest = args[1:]
    if not rest:
        return info_table(doc, driver, health_of)
    if rest == ["-l"]:
        return info_list(doc)
    if rest == ["-m"]:
        return info_mapping(doc)
    if len(rest) == 4 and rest[0] == "-t" and rest[2] == "-i":
        kind, text = rest[1], rest[3]
        if not text.isdigit() or int(text) >= len(doc["devices"]):
            raise Refused(f"The NPU ID {text} is invalid.\n")
        npu = int(text)
        if kind == "board":
            return info_board(doc, npu, driver, firmware)
        if kind == "health":
            rows = [("NPU ID", npu), ("Health", health_of(doc, npu)), ("Error Code", "NA"), ("Error Information", "NA")]
            return "\n".join(_kv(key, value, "        ") for key, value in rows) + "\n"
        if kind == "sio-info":
            return "TX Error Count : 0\nRX Error Count : 0\n"
    raise Refused(INFO_HELP)
