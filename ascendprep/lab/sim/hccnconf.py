"""``/etc/hccn.conf`` as the real ``hccn_tool`` reads and writes it (docs/ascend-reference.md §2).

Lines are ``<key>_<devid>=<value>``; lines starting with ``#`` or shorter than 3 characters are
ignored on read. Writing a key removes every line with the same ``<key>_<devid>=`` prefix and
appends the new line at the end, so the file's order records the order of modification.
The functions here are pure (text in, text out) apart from :func:`read_text`/:func:`write_text`.
"""

from __future__ import annotations

import os

from . import ipv4


def _prefix(key: str, devid: int) -> str:
    return f"{key}_{devid}="


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _is_entry(line: str) -> bool:
    return len(line) >= 3 and not line.startswith("#")


def get_value(text: str, key: str, devid: int) -> str | None:
    """Value of ``<key>_<devid>``, or None when the file has no such line (first match wins)."""
    prefix = _prefix(key, devid)
    for line in _lines(text):
        if _is_entry(line) and line.startswith(prefix):
            return line[len(prefix) :]
    return None


def set_value(text: str, key: str, devid: int, value: str) -> str:
    """Remove any ``<key>_<devid>=`` line and append ``<key>_<devid>=<value>`` at the end."""
    prefix = _prefix(key, devid)
    kept = [line for line in _lines(text) if not line.startswith(prefix)]
    kept.append(prefix + value)
    return _join(kept)


def delete_value(text: str, key: str, devid: int) -> str:
    """Remove every ``<key>_<devid>=`` line (no-op when absent)."""
    prefix = _prefix(key, devid)
    return _join([line for line in _lines(text) if not line.startswith(prefix)])


def entries(text: str) -> list[tuple[str, int, str]]:
    """All ``(key, devid, value)`` entries in file order; malformed lines are skipped."""
    result = []
    for line in _lines(text):
        if not _is_entry(line) or "=" not in line:
            continue
        name, value = line.split("=", 1)
        key, sep, devid = name.rpartition("_")
        if sep and devid.isdigit():
            result.append((key, int(devid), value))
    return result


def make_stale(text: str, npu: int) -> str:
    """Return ``text`` with ``address_<npu>`` changed so that it disagrees with the live device.

    This is the "stale hccn.conf" fault (docs/ascend-reference.md §2, VA PR #16847): the file still names
    an address the device no longer has. The line keeps its place (someone edited the file, the
    tool did not rewrite it) and the new address stays in the same /24 so that the file still
    looks plausible. A file without ``address_<npu>`` gets one appended from TEST-NET-1, which is
    never a lab address.
    """
    prefix = _prefix("address", npu)
    lines = _lines(text)
    for index, line in enumerate(lines):
        if _is_entry(line) and line.startswith(prefix):
            current = ipv4.parse(line[len(prefix) :])
            if current is None:
                replacement = f"192.0.2.{npu % 254 + 1}"
            else:
                last = current & 0xFF
                replacement = ipv4.format_ip((current & ~0xFF) | ((last + 99) % 254 + 1))
            lines[index] = prefix + replacement
            return _join(lines)
    lines.append(prefix + f"192.0.2.{npu % 254 + 1}")
    return _join(lines)


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_text(path: str, text: str) -> None:
    """Rewrite the file in place (keeps its inode, owner and mode like the real tool's ``r+``).

    A missing file is created with mode 0644 ([I]: the real tool's creation mode is not public).
    Callers serialise writers with the node lock of :class:`ascendprep.lab.sim.state.edit_node`.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.truncate(0)
        handle.write(text)
