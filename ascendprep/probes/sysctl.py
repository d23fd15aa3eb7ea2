"""Kernel settings: live values from ``/proc/sys`` and our persisted ``sysctl.d`` file.

HCCL's root rank needs a large listen backlog (``net.core.somaxconn``,
``net.ipv4.tcp_max_syn_backlog``) and its bootstrap ports reserved
(``net.ipv4.ip_local_reserved_ports``), per the migration guide's multi-node section.
"""

from __future__ import annotations

from typing import Dict

from ascendprep.facts import SysctlFile


def parse_proc_value(text: str) -> str:
    """A /proc/sys value with its whitespace normalised (tabs between fields become spaces).

    ``ip_local_reserved_ports`` reads as an empty line when nothing is reserved: that is ``""``.
    """
    return " ".join(text.split())


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
