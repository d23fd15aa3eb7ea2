"""Size specs: what users type after --sizes, and the errors they get for typos."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendprep.verify.allreduce.sizes import SizeSpecError, format_size, parse_size, parse_size_spec
from ascendprep.verify.allreduce.worker import FP32_EXACT_LIMIT, PATTERN_PERIOD, max_exact_world_size


@pytest.mark.parametrize(
    "text,expected",
    [
        ("512", 512),
        ("8K", 8192),
        ("8k", 8192),
        ("64M", 64 * 2**20),
        ("1G", 2**30),
        ("1GiB", 2**30),
        ("1GB", 2**30),
        ("2T", 2 * 2**40),
        (" 4K ", 4096),
    ],
)
def test_parse_size_reads_binary_units(text, expected):
    assert parse_size(text) == expected


def test_default_style_sweep_steps_by_four_and_includes_end():
    assert parse_size_spec("1K:256M") == [2**10 * 4**i for i in range(10)]
    assert parse_size_spec("1K:256M") == parse_size_spec("1K:256M:x4")


def test_factor_and_increment_steps():
    assert parse_size_spec("8K:1G:x2")[:3] == [8192, 16384, 32768]
    assert parse_size_spec("8K:1G:x2")[-1] == 2**30
    assert parse_size_spec("1M:4M:+1M") == [2**20, 2 * 2**20, 3 * 2**20, 4 * 2**20]


def test_end_not_on_a_step_is_not_added():
    """nccl-tests semantics: the sweep stops at the last size <= END."""
    assert parse_size_spec("1K:10K:x4") == [1024, 4096]


def test_single_size():
    assert parse_size_spec("64M") == [64 * 2**20]


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ("", "empty"),
        ("1K:", "a size is missing"),
        ("1K:8Q", "'8Q' is not a size"),
        ("1.5M", "'1.5M' is not a size"),
        ("0", "at least 1 byte"),
        ("4K:1K", "start 4K is larger than end 1K"),
        ("1K:1M:x1", "factor of at least 2"),
        ("1K:1M:3", "must be xFACTOR"),
        ("1K:1M:+0", "at least 1 byte"),
        ("1:1G:+1", "more than 64 sizes"),
        ("1K:2K:x2:9", "expected SIZE, START:END or START:END:STEP"),
    ],
)
def test_bad_specs_name_the_part_that_is_wrong(spec, fragment):
    with pytest.raises(SizeSpecError) as caught:
        parse_size_spec(spec)
    assert fragment in str(caught.value)
    if spec:
        assert repr(spec) in str(caught.value)


@given(st.integers(min_value=1, max_value=2**44))
def test_format_size_round_trips(nbytes):
    assert parse_size(format_size(nbytes)) == nbytes


@given(
    st.integers(min_value=1, max_value=2**30),
    st.integers(min_value=1, max_value=2**30),
    st.integers(min_value=2, max_value=16),
)
def test_sweep_is_increasing_and_within_bounds(a, b, factor):
    start, end = min(a, b), max(a, b)
    try:
        sizes = parse_size_spec(f"{start}:{end}:x{factor}")
    except SizeSpecError as exc:
        assert "more than" in str(exc)
        return
    assert sizes[0] == start and sizes[-1] <= end < sizes[-1] * factor
    assert sizes == sorted(set(sizes))


def test_exact_check_limit_keeps_every_reduced_value_an_exact_fp32_integer():
    world = max_exact_world_size()
    biggest = world * (PATTERN_PERIOD - 1) + world * (world + 1) // 2
    assert biggest < FP32_EXACT_LIMIT
    nxt = world + 1
    assert nxt * (PATTERN_PERIOD - 1) + nxt * (nxt + 1) // 2 >= FP32_EXACT_LIMIT
    assert world > 4096  # far beyond any cluster this tool targets
