"""JSON read back from disk (plan files, evidence bundles) with the same limits as the inventory.

A plan file or a bundle may have been edited, or handed over by someone else: it is input like
any other. :func:`read_json_file` reads at most ``max_bytes`` (a FIFO or a huge file costs
nothing), and :func:`parse_json` refuses, with the file and line, anything that is not strict
JSON: syntax errors, ``NaN``/``Infinity``, numbers Python cannot read (over 4300 digits), and
collections nested deeper than :data:`~ascendprep.base.limits.INPUT_MAX_DEPTH` (the C decoder would
raise RecursionError near 1000; the depth is checked without recursion). JSON has no aliases, so
memory stays proportional to the bytes read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Tuple

from ascendprep.base.limits import INPUT_MAX_DEPTH, JSON_MAX_BYTES
from ascendprep.base.yamlsource import InputError, Located, read_input_text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth_exceeds(data: Any, max_depth: int) -> bool:
    """True when ``data`` nests collections deeper than ``max_depth`` (checked with a stack)."""
    stack: List[Tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth + 1 > max_depth:
                return True
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_json(text: str, file: str, max_depth: int = INPUT_MAX_DEPTH) -> Any:
    """``json.loads(text)``, or :class:`InputError` naming ``file`` (and the line) of what is wrong."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InputError([Located(file, exc.lineno, "", f"not JSON: {exc.msg}")]) from None
    except RecursionError:
        raise InputError([Located(file, None, "", f"collections nested more than {max_depth} deep; refused")]) from None
    except ValueError as exc:  # NaN/Infinity, or an integer over Python's digit limit
        raise InputError([Located(file, None, "", f"not JSON that can be read: {exc}")]) from None
    if _depth_exceeds(data, max_depth):
        raise InputError([Located(file, None, "", f"collections nested more than {max_depth} deep; refused")])
    return data


def read_json_file(path: Path, max_bytes: int = JSON_MAX_BYTES, max_depth: int = INPUT_MAX_DEPTH) -> Any:
    """Read and parse a JSON file within the limits; every problem is an :class:`InputError`."""
    return parse_json(read_input_text(path, max_bytes), str(path), max_depth)


def read_json(path: Path, max_bytes: int = JSON_MAX_BYTES, max_depth: int = INPUT_MAX_DEPTH) -> Any:
    """Like :func:`read_json_file`, but a missing file raises FileNotFoundError (so that the caller
    can say what to run first) and other OS errors raise OSError; everything else is an InputError."""
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise InputError([Located(str(path), None, "", f"larger than {max_bytes:,} bytes; refused")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError([Located(str(path), None, "", f"not UTF-8 text: {exc}")]) from None
    return parse_json(text, str(path), max_depth)
