"""compress is expand's inverse: what a person reads as ``node[0001-4096]`` is exactly those hosts."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendprep.base.hostrange import compress, compressed, expand, number_spans

_prefixes = st.sampled_from(["node", "n", "rack1-n", "10.0.0.", "gpu-", ""])
_numbers = st.integers(min_value=0, max_value=12000)
_widths = st.integers(min_value=0, max_value=5)
_suffixes = st.sampled_from(["", ".lab", "-ib"])


@st.composite
def _name(draw):
    return f"{draw(_prefixes)}{str(draw(_numbers)).zfill(draw(_widths))}{draw(_suffixes)}"


_names = st.lists(st.one_of(_name(), st.sampled_from(["login", "mgmt", "a-b"])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_names)
def test_expanding_the_patterns_gives_back_exactly_the_names(names):
    patterns = compress(names)
    back = [name for pattern in patterns for name in expand(pattern)]
    assert sorted(back) == sorted(set(names))
    assert len(back) == len(set(back))  # no name shown twice
    assert len(patterns) <= len(set(names))


@settings(max_examples=200, deadline=None)
@given(st.lists(_numbers, min_size=1, max_size=80), _widths)
def test_number_spans_expand_back(numbers, width):
    assert expand(f"n[{number_spans(numbers, width)}]") == [f"n{str(n).zfill(width)}" for n in sorted(set(numbers))]


def test_a_full_cluster_reads_as_one_range():
    assert compressed(f"node{i:04d}" for i in range(1, 4097)) == "node[0001-4096]"
    assert compressed(["node1", "node2", "node3", "node5"]) == "node[1-3,5]"
    assert compressed(["node09", "node10", "node1000"]) == "node[09-10],node1000"
    assert compressed(["node0999", "node1000"]) == "node[0999-1000]"
    assert compressed(["login", "node2", "node1"]) == "login,node[1-2]"


def test_a_name_with_brackets_stays_whole():
    assert compress(["n[1]", "n2"]) == ["n[1]", "n2"]


def test_select_takes_ranges_and_globs_in_inventory_order():
    from ascendprep.base.hostrange import select

    names = [f"node{i:02d}" for i in range(1, 17)] + ["login1"]
    assert select("node[01-03]", names) == ["node01", "node02", "node03"]
    assert select("node1*", names) == [f"node{i}" for i in range(10, 17)]
    assert select("login?,node[16,02]", names) == ["node02", "node16", "login1"]
    assert select("node[90-99]", names) == []


@settings(max_examples=100, deadline=None)
@given(_names, _names)
def test_select_of_a_compressed_subset_is_that_subset(names, subset):
    from ascendprep.base.hostrange import select

    chosen = [n for n in dict.fromkeys(names) if n in set(subset)]
    if chosen:
        assert select(compressed(chosen), list(dict.fromkeys(names))) == chosen
