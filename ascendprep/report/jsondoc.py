"""JSON documents written compact and in pieces, so that 4,096 hosts cost neither time nor memory.

``json.dumps(..., indent=1)`` runs the pure-Python encoder (about ten times slower than the C
one), and one ``json.dumps`` of a whole verify document builds a string of ~90 KB per host
(350 MB at 4,096 hosts) on top of the document itself. :func:`json_chunks` uses the C encoder
(compact separators) on slices of the document's large lists and maps, so what is held at once
is one slice; the text is the same as ``json.dumps(document, separators=(",", ":"))``. Read the
output with ``jq`` for an indented view.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, List, Optional, Sequence, TextIO

#: Items of one list or map encoded in one ``json.dumps`` call: large enough that the per-call
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
            yield [self.convert(item) for item in self.items[start:start + SLICE_ITEMS]]


def json_chunks(document: Any, default: Optional[Callable[[Any], Any]] = None) -> Iterator[str]:
    """The compact JSON text of ``document``, in pieces; large lists and maps (at any depth of
    dicts) are split into slices of :data:`SLICE_ITEMS` items."""
    dumps = _dumps(default)
    yield from _chunks(document, dumps)
    yield "\n"


def write_json(document: Any, stream: TextIO) -> None:
    """``document`` as compact JSON, one line, on ``stream`` (e.g. stdout)."""
    for chunk in json_chunks(document):
        stream.write(chunk)


def json_lines(document: dict, default: Optional[Callable[[Any], Any]] = None) -> Iterator[str]:
    """``document`` (a map) with one top-level key per line and each value compact: still easy to
    read for a person (``run.json``), but written by the C encoder (``indent=1`` is pure Python,
    ~4 ms per host of a 4,096-host verify's ``run.json``)."""
    dumps = _dumps(default)
    yield "{"
    for index, (key, value) in enumerate(document.items()):
        yield ("," if index else "") + "\n " + _key(key, dumps) + ":"
        yield from _chunks(value, dumps)
    yield "\n}\n"


def _dumps(default: Optional[Callable[[Any], Any]]) -> Callable[[Any], str]:
    # check_circular=False: the documents are trees built here (results, facts, plans; shared
    # dicts but no cycles), and the encoder's id() map of every container cost ~20% of
    # results.json's encoding (~64 KB of JSON per host). A cycle would still stop the encoder
    # (RecursionError instead of ValueError), never loop.
    encoder = json.JSONEncoder(separators=_SEPARATORS, default=default, check_circular=False)

    def dumps(value: Any) -> str:
        return encoder.encode(value)

    return dumps


def _chunks(value: Any, dumps: Callable[[Any], str]) -> Iterator[str]:
    if isinstance(value, dict) and (len(value) > SPLIT_OVER or any(_large(v) for v in value.values())):
        yield "{"
        items = list(value.items())
        for start in range(0, len(items), SLICE_ITEMS):
            if start:
                yield ","
            part = items[start:start + SLICE_ITEMS]
            if any(_large(v) for _, v in part):
                for index, (key, item) in enumerate(part):
                    yield ("," if index else "") + _key(key, dumps) + ":"
                    yield from _chunks(item, dumps)
            else:
                yield dumps(dict(part))[1:-1]
        yield "}"
    elif isinstance(value, Entries):
        yield "["
        for index, part in enumerate(value.slices()):
            yield ("," if index else "") + dumps(part)[1:-1]
        yield "]"
    elif isinstance(value, (list, tuple)) and len(value) > SPLIT_OVER:
        yield "["
        for start in range(0, len(value), SLICE_ITEMS):
            yield ("," if start else "") + dumps(list(value[start:start + SLICE_ITEMS]))[1:-1]
        yield "]"
    else:
        yield dumps(value)


def _key(key: Any, dumps: Callable[[Any], str]) -> str:
    """A map key as json.dumps writes it (ints, floats, bools and None become strings)."""
    return json.dumps(key) if isinstance(key, str) else dumps({key: None})[1:-len(":null}")]


def _large(value: Any) -> bool:
    """Worth splitting: a big list or map, or a map holding one (or holding Entries)."""
    if isinstance(value, Entries):
        return True
    if isinstance(value, (list, tuple)):
        return len(value) > SPLIT_OVER
    if isinstance(value, dict):
        return len(value) > SPLIT_OVER or any(isinstance(v, (dict, list, tuple, Entries)) and _large(v) for v in value.values())
    return False
