"""The lab's JSON documents read without importing :mod:`json`, for the simulated tools.

Every simulated ``hccn_tool``/``npu-smi`` call starts a Python interpreter and reads the node's
identity and device documents. ``import json`` alone costs about as much as the rest of such a
call: its decoder and encoder import ``re``, which imports ``enum``, ``functools`` and
``collections``. The parsing itself is done by
the C scanner in ``_json`` either way; :func:`loads` drives that same scanner directly, so it
accepts and returns exactly what ``json.loads`` does, and its errors are ``json``'s own
(``JSONDecodeError``, a ``ValueError``; ``json`` is imported only then). Writing (a set command,
far rarer than reads) uses :mod:`json` itself (:func:`dump_text`).

Where ``_json`` is missing (another interpreter), everything falls back to :mod:`json`.
"""

from __future__ import annotations

try:
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - CPython always has it
    _make_scanner = None

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads off a ``json.JSONDecoder``: the defaults of ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_CONSTANTS.__getitem__)
    memo: dict = {}


_scan_once = _make_scanner(_Context()) if _make_scanner is not None else None


def _error(message: str, text: str, position: int) -> ValueError:
    """``json``'s own error, as ``json.loads`` raises it (imports :mod:`json`: the rare case)."""
    from json import JSONDecodeError

    return JSONDecodeError(message, text, position)


def loads(text: str) -> object:
    """``json.loads(text)`` for a ``str``, without importing :mod:`json` on success."""
    if _scan_once is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    if text.startswith("\ufeff"):
        raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value, end = _scan_once(text, start)
    except StopIteration as stop:
        raise _error("Expecting value", text, stop.value) from None
    end = len(text) - len(text[end:].lstrip(_WHITESPACE))
    if end != len(text):
        raise _error("Extra data", text, end)
    return value


def load(handle) -> object:  # a text file (no typing import: see above)
    """``json.load(handle)``, as :func:`loads`."""
    return loads(handle.read())


def dump_text(data: object, indent: int = 1, sort_keys: bool = True) -> str:
    """``data`` as the lab writes its documents (imports :mod:`json`: writes are the rare case)."""
    import json

    return json.dumps(data, indent=indent, sort_keys=sort_keys)
