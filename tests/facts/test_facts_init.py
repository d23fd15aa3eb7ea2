"""The facts built per lane, per link record and per ping pair (facts._init_by_slot) take the same
arguments and make the same objects as the dataclasses' own ``__init__`` would."""

from __future__ import annotations

import dataclasses
import inspect
import random

import pytest

from ascendprep.facts import model as facts

BUILT_BY_SLOT = (facts.LldpNeighbor, facts.LinkRecord, facts.LinkStat, facts.CounterSample, facts.TlsState, facts.OpticalLane,
                 facts.OpticalThresholds, facts.OpticalInfo, facts.NpuFacts, facts.NpuSmiDevice, facts.NpuHealth,
                 facts.InterfaceAddress, facts.PingResult, facts.HccsPingResult)


def _reference(cls: type) -> type:
    """The same fields as a fresh frozen slots dataclass: its ``__init__`` is the dataclass's own."""
    specs = []
    for item in dataclasses.fields(cls):
        extra = {}
        if item.default is not dataclasses.MISSING:
            extra["default"] = item.default
        if item.default_factory is not dataclasses.MISSING:
            extra["default_factory"] = item.default_factory
        specs.append((item.name, item.type, dataclasses.field(**extra)))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


def _values(obj: object) -> tuple:
    return tuple(getattr(obj, item.name) for item in dataclasses.fields(obj))  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", BUILT_BY_SLOT, ids=lambda cls: cls.__name__)
def test_built_by_slot_like_the_dataclass(cls: type) -> None:
    reference = _reference(cls)
    assert cls.__init__.__code__ is not reference.__init__.__code__  # (it is the by-slot one)
    ours, theirs = inspect.signature(cls.__init__).parameters, inspect.signature(reference.__init__).parameters
    assert list(ours) == list(theirs)
    for name, item in zip(list(ours)[1:], dataclasses.fields(cls)):
        if item.default is not dataclasses.MISSING:
            assert ours[name].default is theirs[name].default is item.default
        assert (ours[name].default is inspect.Parameter.empty) == (theirs[name].default is inspect.Parameter.empty)
    names = [item.name for item in dataclasses.fields(cls)]
    required = [item.name for item in dataclasses.fields(cls) if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING]
    rng = random.Random(cls.__name__)
    for _ in range(50):
        count = rng.randrange(len(required), len(names) + 1)  # the first ``count`` fields by position
        positional = [rng.choice([None, 0, 1.5, "x", (), True]) for _ in range(count)]
        keywords = {name: rng.choice([None, 0, "y"]) for name in names[count:] if rng.random() < 0.5}
        got, want = cls(*positional, **keywords), reference(*positional, **keywords)
        assert _values(got) == _values(want)
    # A default factory gives each object its own value, as the dataclass's does.
    first, second = cls(*([None] * len(required))), cls(*([None] * len(required)))
    for item in dataclasses.fields(cls):
        if item.default_factory is not dataclasses.MISSING:
            assert getattr(first, item.name) == item.default_factory()
            if isinstance(getattr(first, item.name), dict):
                assert getattr(first, item.name) is not getattr(second, item.name)
    with pytest.raises(TypeError):
        cls(*([None] * (len(names) + 1)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(first, names[0], 1)
    assert dataclasses.replace(first) == first


def test_only_plain_frozen_slots_dataclasses_are_built_by_slot() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        a: int

    for cls in (NoSlots, NotFrozen, facts.ProbeError):  # ProbeError checks its kind in __post_init__
        with pytest.raises(TypeError):
            facts._init_by_slot(cls)
