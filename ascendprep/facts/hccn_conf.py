"""``/etc/hccn.conf``: the per-device settings hccn_tool re-applies at boot (docs/ascend-reference.md §2).

Lines are ``<key>_<devid>=<value>``; the key may itself contain underscores
(``send_arp_status_0``, ``route_address_10.0.0.0_netmask_255.0.0.0_3``), so the device id is
the digits after the *last* underscore. hccn_tool ignores ``#`` lines and lines shorter than
3 characters; so does this parser.
"""

from __future__ import annotations

import sys
from typing import Dict, List

from ascendprep.facts.model import HccnConf


def parse_hccn_conf(text: str) -> HccnConf:
    devices: Dict[int, Dict[str, str]] = {}
    duplicates: List[str] = []
    other: List[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if len(line) < 3 or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        key, underscore, devid = name.rpartition("_")
        if not sep or not underscore or not key or not devid.isdigit():
            other.append(line)
            continue
        settings = devices.setdefault(int(devid), {})
        if key in settings and name not in duplicates:
            duplicates.append(name)
        settings[sys.intern(key)] = value
    return HccnConf(raw=text, devices=devices, duplicates=tuple(duplicates), other_lines=tuple(other))
