"""The Ascend 950 (Atlas 350) forms of the simulated ``npu-smi`` (lab product ``atlas-350``).

Forms from the vendor's documented examples (hicann/driver @ ef377e9, ``docs/en/Ascend_950_npu-smi``):
``info -l`` (``Product Name : A5 PCIe Card``, no ``Chip Count``), ``info -m`` (``Slot ID`` and
``Chip Phy-ID`` columns), ``info -t board -i N`` (``PCI Device ID : 0xD806``, ``Slot ID``),
``info -t health -i N`` (``Health``, ``Error Code``, ``Error Information``) and ``info -t
sio-info -i N`` (die-to-die error counts). Queries are card level: the 950 tool's help lists ``-i``
and ``-p`` and no ``-c``; a call with ``-c`` gets that help text on stderr, exit 1 ([I]: the exact
refusal is not documented; SwanLab PR #1719 reports that ``-c`` is rejected on 950). The lab's
slot id is the NPU id.

Only stdlib imports: this module is on the start-up path of every simulated tool call.
"""

from __future__ import annotations

from .profiles import bus_id, profile

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


def render(args: list[str], doc: dict, driver: str, firmware: str, health_of) -> str:
    """The stdout of ``npu-smi <args>`` on a 950 node; :class:`Refused` for a 910 form."""
    if "-c" in args:
        raise Refused(INFO_HELP)
    rest = args[1:]
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
