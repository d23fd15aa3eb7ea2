"""pyproject says ascendprep runs from Python 3.10; possessive repeats (``a++``, ``a{1,3}+``) and
atomic groups (``(?>...)``) came only in 3.11, so a module compiling one would fail to import on
an older control node (Ubuntu 22.04's 3.10). Every compiled pattern of the package is read by
this interpreter's own regex parser and held to what 3.10 can compile."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys

import pytest

import ascendprep

if sys.version_info < (3, 11):
    pytest.skip("this interpreter's parser has no possessive or atomic nodes to find", allow_module_level=True)

from re import _constants, _parser  # noqa: E402  (3.11+)

_NEWER = {_constants.POSSESSIVE_REPEAT, _constants.ATOMIC_GROUP}


def _newer_nodes(parsed) -> list:
    found = []
    for op, arg in parsed:
        if op in _NEWER:
            found.append(op)
        for item in arg if isinstance(arg, (list, tuple)) else ():
            if isinstance(item, _parser.SubPattern):
                found += _newer_nodes(item)
            elif isinstance(item, (list, tuple)):
                found += [node for sub in item if isinstance(sub, _parser.SubPattern) for node in _newer_nodes(sub)]
        if isinstance(arg, _parser.SubPattern):
            found += _newer_nodes(arg)
    return found


def _patterns():
    for info in pkgutil.walk_packages(ascendprep.__path__, "ascendprep."):
        if info.name.endswith(".__main__"):
            continue  # runs the CLI when imported
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                yield f"{info.name}.{name}", value


def test_no_pattern_needs_python_3_11():
    offenders = [name for name, pattern in _patterns() if _newer_nodes(_parser.parse(pattern.pattern, pattern.flags))]
    assert offenders == []


def test_the_reading_finds_what_3_10_cannot_compile():
    for text in (r"a++", r"x{1,3}+:", r"(?:ab)*+", r"(?>ab|a)c", r"(a|(?:b++))"):
        assert _newer_nodes(_parser.parse(text)), text
    assert not _newer_nodes(_parser.parse(r"\++[+]{2}(?:a|b)+"))
