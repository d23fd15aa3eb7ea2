"""JSON read back from disk (plan files, evidence bundles) with the same limits as the inventory.

A plan file or a bundle may have been edited, or handed over by someone else: it is input like
any other. :func:`read_json_file` reads at most ``max_bytes`` (a FIFO or a huge file costs
nothing), and :func:`parse_json` refuses, with the file and line, anything that is not strict
JSON: syntax errors, ``NaN``/``Infinity``, numbers Python cannot read (over 4300 digits), and
collections nested deeper than :data:`~ascendprep.base.limits.INPUT_MAX_DEPTH` (the C decoder would
raise RecursionError near 1000; the depth is checked without recursion). JSON has no aliases, so
memory stays proportional to the bytes read.

Numbers no document of ascendprep's holds are refused too, located by their JSON path
(``hosts.node1.seconds``): a float beyond a double's range (``1e400`` reads as infinity, which
``float()`` arithmetic, ``int()`` and a JSON encoder then trip over), and an integer of more than
:data:`~ascendprep.base.limits.NUMBER_MAX_DIGITS` digits (counts, offsets and kernel values fit 20).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple, Union

from ascendprep.base.limits import INPUT_MAX_DEPTH, JSON_MAX_BYTES, NUMBER_MAX_DIGITS
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


def _out_of_range(value: Any) -> bool:
    """A number :func:`parse_json` refuses: a float that is not finite, an integer too long."""
    if isinstance(value, float):
        return not math.isfinite(value)
    return type(value) is int and len(str(abs(value))) > NUMBER_MAX_DIGITS


def _path_of(data: Any, wanted: Callable[[Any], bool]) -> Optional[str]:
    """The JSON path (``hosts.node1.seconds``, ``pairs[3].a``) of the first value ``wanted`` picks."""
    stack: List[Tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if wanted(value):
            return path
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{key}" if path else str(key)) for key, child in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(value))))
    return None


def parse_json(text: str, file: str, max_depth: int = INPUT_MAX_DEPTH) -> Any:
    """``json.loads(text)``, or :class:`InputError` naming ``file`` (and the line) of what is wrong."""
    refused: List[str] = []  # the first number out of range, as written

    def number(kind: Callable[[str], Union[int, float]]) -> Callable[[str], Union[int, float]]:
        def read(literal: str) -> Union[int, float]:
            value = kind(literal)
            if not refused and _out_of_range(value):
                refused.append(literal)
            return value

        return read

    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=number(float), parse_int=number(int))
    except json.JSONDecodeError as exc:
        raise InputError([Located(file, exc.lineno, "", f"not JSON: {exc.msg}")]) from None
    except RecursionError:
        raise InputError([Located(file, None, "", f"collections nested more than {max_depth} deep; refused")]) from None
    except ValueError as exc:  # NaN/Infinity, or an integer over Python's digit limit
        raise InputError([Located(file, None, "", f"not JSON that can be read: {exc}")]) from None
    if _depth_exceeds(data, max_depth):
        raise InputError([Located(file, None, "", f"collections nested more than {max_depth} deep; refused")])
    if refused:
        literal = refused[0] if len(refused[0]) <= 40 else f"{refused[0][:20]}… ({len(refused[0])} characters)"
        integer = refused[0].lstrip("-").isdigit()
        what = f"more than {NUMBER_MAX_DIGITS} digits" if integer else "beyond a double's range (it reads as infinity)"
        raise InputError(
            [Located(file, None, _path_of(data, _out_of_range) or "", f"the number {literal} is {what}; refused")]
        )
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
