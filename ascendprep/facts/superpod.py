"""A3 super-pod facts: ``npu-smi info -t spod-info -i N -c C`` per die and ``hccn_tool -i D -vnic -g``.

Formats from docs/a3-superpod.md §2: spod-info prints ``key : value`` lines, tab-indented with
the key padded (``SDID : 167772160``, ``Super Pod Size : 384``, ``Super Pod ID : 0``, ``Server
Index : 40``), as in a real capture of an A3 node; ``-vnic -g`` prints ``vnic ipaddr: A``.

Both run only on NPUs that npu-smi lists with two chips (an A3): the chip loop sets
``$AP_SPOD`` for such an NPU, and the hccn_tool loop asks ``-vnic -g`` only when it is set, so
other products never pay for (or fail on) queries their driver does not have. The SDIDs feed
plan (the 1.2 rank table's ``super_device_id``), so spod-info runs in both phases; the vNIC is
only verify's (the HCCS ping targets).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict

from ascendprep.facts.failures import dcmi_failure
from ascendprep.facts.model import SuperPodDie
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected, split_colon
from ascendprep.facts.unit import BOTH, CHIP, NPU, VERIFY_ONLY, Draft, ProbeUnit, Where, update_npu

#: spod-info key (lower case) → SuperPodDie field.
_SPOD_KEYS = {
    "sdid": "sdid",
    "super pod id": "super_pod_id",
    "server index": "server_index",
    "super pod size": "pod_size",
}
#: The largest value any of them can hold: the SDID packs a 10-bit server index above bit 22 (32 bits).
_SPOD_MAX = 2**32 - 1


def parse_spod_info(stdout: str, npu_id: int, chip: int) -> SuperPodDie:
    """The four spod-info values of one die; a missing or non-numeric one is refused, never guessed."""
    values: Dict[str, int] = {}
    for line in content_lines(stdout):
        pair = split_colon(line)
        if pair is None:
            continue
        key, value = pair
        field = _SPOD_KEYS.get(key.lower())
        if field is None:
            continue
        if not value.isdigit() or len(value) > 10 or int(value) > _SPOD_MAX:
            raise UnexpectedOutput(f"{key} {value!r} is not a number up to {_SPOD_MAX}")
        values[field] = int(value)
    if not values:
        raise not_as_expected("'SDID : <n>', 'Super Pod ID : <n>', 'Server Index : <n>' lines", stdout)
    missing = [name for key, name in _SPOD_KEYS.items() if name not in values]
    if missing:
        raise UnexpectedOutput(f"no {', '.join(missing)} line in the spod-info answer")
    return SuperPodDie(npu_id=npu_id, chip=chip, **values)


def parse_vnic(stdout: str) -> Dict[str, Any]:
    """``vnic ipaddr: A`` → ``{"vnic_ip": A}``; anything else is refused."""
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "vnic ipaddr":
            try:
                return {"vnic_ip": str(ipaddress.IPv4Address(value.strip()))}
            except ValueError:
                raise UnexpectedOutput(f"vnic ipaddr {value.strip()!r} is not an IPv4 address") from None
    raise not_as_expected("'vnic ipaddr: <ip>'", stdout)


def _parse_spod(stdout: str, where: Where) -> SuperPodDie:
    return parse_spod_info(stdout, where.npu, where.chip)  # type: ignore[arg-type]


def _fill_spod(draft: Draft, where: Where, die: SuperPodDie) -> None:
    draft.fields.setdefault("superpod", {})[die.devid] = die


#: Per die of a two-chip NPU (the chip loop sets ``$AP_SPOD`` for the hccn_tool loop when it sees one).
SPOD_INFO = ProbeUnit(
    section="npu_smi.spod",
    scope=CHIP,
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -t spod-info -i "$ap_id" -c "$ap_c"',
    render=lambda ctx: [
        'if [ "$ap_n" -eq 2 ]; then',
        '\tap_run npu_smi.spod " npu=$ap_id chip=$ap_c" ap_tool "$AP_NPUSMI" info -t spod-info -i "$ap_id" -c "$ap_c"',
        "fi",
    ],
    comment="A3 (two dies per NPU): each die's super-pod identity (SDID, pod, server index).",
    describe=lambda where: f"npu-smi info -t spod-info -i {where.npu} -c {where.chip}",
    parse=_parse_spod,
    answered=lambda section: section.rc == 0 and dcmi_failure(section.text) is None,
    fill=_fill_spod,
    fact="superpod[devid] (devid = NPU id x 2 + chip)",
    phases=BOTH,
)

VNIC = ProbeUnit(
    section="hccn.vnic",
    scope=NPU,
    command=lambda ctx: 'ap_hccn -i "$ap_dev" -vnic -g',
    render=lambda ctx: [
        'if [ -n "$AP_SPOD" ]; then',
        '\tap_run hccn.vnic " npu=$ap_dev" ap_hccn -i "$ap_dev" -vnic -g',
        "fi",
    ],
    describe=lambda where: f"hccn_tool -i {where.npu} -vnic -g",
    parse=lambda stdout, where: parse_vnic(stdout),
    fill=update_npu,
    fact="npus[devid].vnic_ip",
    phases=VERIFY_ONLY,
)
