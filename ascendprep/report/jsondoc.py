"""JSON documents written compact and in pieces, so that 4,096 hosts cost neither time nor memory.

The values are encoded by orjson (https://github.com/ijl/orjson): a verify document is ~64 KB of
JSON per host, ~3,300 values, and the stdlib's C encoder's cost is per value, orjson's far less
so. The text is UTF-8 as RFC 8259 asks of JSON exchanged between systems
(non-ASCII characters as themselves, not ``\\u`` escapes), and a float that is not finite (a
NaN reading) is written ``null``: strict JSON (the stdlib wrote ``NaN``, which strict readers
refuse). A slice orjson refuses (an integer beyond 64 bits, a string with a lone surrogate
from undecodable bytes, nesting deeper than 254) is written by the stdlib's encoder instead, with
the same ``null`` for non-finite floats: every value is written, none is lost.

:func:`json_chunks` encodes slices of the document's large lists and maps, so what is held at once
is one slice; the value is the same as ``json.dumps(document, separators=(",", ":"))``'s (the
spelling of a float's exponent may differ: ``1e16`` for ``1e+16``). Read the output with ``jq``
for an indented view.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterator, List, Optional, Sequence, TextIO

import orjson

#: Items of one list or map encoded in one encoder call: large enough that the per-call
#: overhead does not count, small enough that one slice's text stays a few MB.
SLICE_ITEMS = 512
#: Lists and maps with more items than this are written a slice at a time (smaller ones whole).
SPLIT_OVER = 2 * SLICE_ITEMS

_SEPARATORS = (",", ":")


class Entries:
    """A list in a document whose items become JSON values only when written, a slice at a time.

    verify's document lists ~160 check results per host; built as dicts up front they held ~43 KB
    per host (176 MB at 4,096 hosts) until the end of the run, even for text output. Written by
    :func:`json_chunks` like a list of ``convert(item)``; ``len``, iteration and indexing give
    those values too. ``json.dumps`` does not know it: a document meant for other readers holds
    plain lists (``report.verify.verify_document`` builds them unless asked not to).
    """

    __slots__ = ("items", "convert")

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], Any]) -> None:
        self.items = items
        self.convert = convert

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return map(self.convert, self.items)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.convert(item) for item in self.items[index]]
        return self.convert(self.items[index])

    def slices(self) -> Iterator[List[Any]]:
        for start in range(0, len(self.items), SLICE_ITEMS):
            yield [self.convert(item) for item in self.items[start : start + SLICE_ITEMS]]


def json_chunks(document: Any, default: Optional[Callable[[Any], Any]] = None) -> Iterator[str]:
    """The compact JSON text of ``document``, in pieces; large lists and maps (at any depth of
    dicts) are split into slices of :data:`SLICE_ITEMS` items."""
    for chunk in json_bytes(document, default):
        yield chunk.decode("utf-8")


def json_bytes(document: Any, default: Optional[Callable[[Any], Any]] = None) -> Iterator[bytes]:
    """:func:`json_chunks` as UTF-8 bytes, what a file or a pipe gets."""
    dumps = _dumps(default)
    yield from _chunks(document, dumps)
    yield b"\n"


def write_json(document: Any, stream: TextIO) -> None:
    """``document`` as compact JSON, one line, on ``stream`` (e.g. stdout): UTF-8 bytes to its
    binary layer whatever the locale's encoding (an ASCII or Latin-1 terminal would refuse the
    text's ``°``), or text to a stream that has none."""
    binary = getattr(stream, "buffer", None)
    if binary is None:
        for text in json_chunks(document):
            stream.write(text)
        return
    stream.flush()  # what was written as text goes first
    for chunk in json_bytes(document):
        binary.write(chunk)
    binary.flush()


def json_lines(document: dict, default: Optional[Callable[[Any], Any]] = None) -> Iterator[bytes]:
    """``document`` (a map) with one top-level key per line and each value compact, as UTF-8:
    still easy to read for a person (``run.json``), without the stdlib's ``indent=1`` encoder
    (pure Python, value by value, and ``run.json`` has every host's)."""
    dumps = _dumps(default)
    yield b"{"
    for index, (key, value) in enumerate(document.items()):
        yield (b"," if index else b"") + b"\n " + _key(key, dumps) + b":"
        yield from _chunks(value, dumps)
    yield b"\n}\n"


def _dumps(default: Optional[Callable[[Any], Any]]) -> Callable[[Any], bytes]:
    # check_circular=False (the stdlib's fallback): the documents are trees built here (results,
    # facts, plans; shared dicts but no cycles). A cycle still stops both encoders (orjson's depth
    # limit, then the stdlib's RecursionError), never loops.
    fallback = json.JSONEncoder(separators=_SEPARATORS, default=default, check_circular=False)

    def dumps(value: Any) -> bytes:
        try:
            return orjson.dumps(value, default=default, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson.JSONEncodeError: what it cannot write (module docstring)
            return fallback.encode(_finite(value)).encode("ascii")

    return dumps


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as None, as orjson writes them (for the stdlib's
    encoder, which would write ``NaN``); containers are copied only in this rare path."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _chunks(value: Any, dumps: Callable[[Any], bytes]) -> Iterator[bytes]:
    if isinstance(value, dict) and (len(value) > SPLIT_OVER or any(_large(v) for v in value.values())):
        yield b"{"
        items = list(value.items())
        for start in range(0, len(items), SLICE_ITEMS):
            if start:
                yield b","
            part = items[start : start + SLICE_ITEMS]
            if any(_large(v) for _, v in part):
                for index, (key, item) in enumerate(part):
                    yield (b"," if index else b"") + _key(key, dumps) + b":"
                    yield from _chunks(item, dumps)
            else:
                yield dumps(dict(part))[1:-1]
        yield b"}"
    elif isinstance(value, Entries):
        yield b"["
        for index, part in enumerate(value.slices()):
            yield (b"," if index else b"") + dumps(part)[1:-1]
        yield b"]"
    elif isinstance(value, (list, tuple)) and len(value) > SPLIT_OVER:
        yield b"["
        for start in range(0, len(value), SLICE_ITEMS):
            yield (b"," if start else b"") + dumps(list(value[start : start + SLICE_ITEMS]))[1:-1]
        yield b"]"
    else:
        yield dumps(value)


def _key(key: Any, dumps: Callable[[Any], bytes]) -> bytes:
    """A map key as JSON writes it (ints, floats, bools and None become strings)."""
    return dumps({key: None})[1 : -len(b":null}")]


def _large(value: Any) -> bool:
    """Worth splitting: a big list or map, or a map holding one (or holding Entries)."""
    if isinstance(value, Entries):
        return True
    if isinstance(value, (list, tuple)):
        return len(value) > SPLIT_OVER
    if isinstance(value, dict):
        return len(value) > SPLIT_OVER or any(
            isinstance(v, (dict, list, tuple, Entries)) and _large(v) for v in value.values()
        )
    return False
