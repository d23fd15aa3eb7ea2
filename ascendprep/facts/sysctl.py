"""Kernel settings: live values from ``/proc/sys`` and our persisted ``sysctl.d`` file.

HCCL's root rank needs a large listen backlog (``net.core.somaxconn``,
``net.ipv4.tcp_max_syn_backlog``) and its bootstrap ports reserved
(``net.ipv4.ip_local_reserved_ports``), per the migration guide's multi-node section.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Dict

from ascendprep.base.limits import NUMBER_MAX_DIGITS, SYSCTL_VALUE_MAX_CHARS
from ascendprep.facts.model import SysctlFile
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.inventory import sysctl as sysctl_rules

_DIGIT_RUN = re.compile(r"\d+")


def parse_proc_value(text: str, key: str = "") -> str:
    """A /proc/sys value with its whitespace normalised (tabs between fields become spaces).

    ``ip_local_reserved_ports`` reads as an empty line when nothing is reserved: that is ``""``.

    The kernel prints short ASCII words and numbers. Anything else (a value longer than
    :data:`~ascendprep.base.limits.SYSCTL_VALUE_MAX_CHARS`, a control character such as a NUL, a number
    longer than any the kernel prints, reserved ports that are not ports) raises
    :class:`UnexpectedOutput`: that host "could not read" the key, and nothing downstream (the
    plan's "at least" arithmetic, the port-range merge) ever sees the value.
    """
    if len(text) > SYSCTL_VALUE_MAX_CHARS:
        raise UnexpectedOutput(f"a value of {len(text):,} characters (at most {SYSCTL_VALUE_MAX_CHARS:,} expected)")
    value = " ".join(text.split())
    odd = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if odd is not None:
        raise UnexpectedOutput(f"the value contains the control character {ord(odd):#04x}")
    longest = max((len(run) for run in _DIGIT_RUN.findall(value)), default=0)
    if longest > NUMBER_MAX_DIGITS:
        raise UnexpectedOutput(f"a number of {longest:,} digits (at most {NUMBER_MAX_DIGITS} expected)")
    if key == sysctl_rules.RESERVED_PORTS:
        try:
            sysctl_rules.parse_port_ranges(value)
        except sysctl_rules.PortRangeError as exc:
            raise UnexpectedOutput(f"not a list of reserved ports: {exc}") from None
    return value


def parse_sysctl_conf(text: str) -> SysctlFile:
    """``key = value`` lines as sysctl.d(5) reads them: ``#``/``;`` comments, ``/`` or ``.`` in keys,
    and a leading ``-`` (ignore failures) dropped. A later line wins, as in sysctl.
    """
    values: Dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key = key.strip().lstrip("-").strip().replace("/", ".")
        if key:
            values[key] = " ".join(value.split())
    return SysctlFile(raw=text, values=values)
