import pytest

from ascendprep.base.hostrange import HostRangeError, expand


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("node1", ["node1"]),
        ("node[1-3]", ["node1", "node2", "node3"]),
        ("node[01-03]", ["node01", "node02", "node03"]),
        ("node[08-11]", ["node08", "node09", "node10", "node11"]),
        ("10.0.0.[11-13]", ["10.0.0.11", "10.0.0.12", "10.0.0.13"]),
        ("r[1-2]n[1,3]", ["r1n1", "r1n3", "r2n1", "r2n3"]),
        ("n[1,4-5]", ["n1", "n4", "n5"]),
    ],
)
def test_expand(pattern, expected):
    assert expand(pattern) == expected


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("n[3-1]", "runs backwards"),
        ("n[]", "empty range"),
        ("n[a-b]", "is not a number"),
        ("n[1-2", "unbalanced"),
        ("n[1-9999999]", "more than"),
    ],
)
def test_expand_errors(pattern, message):
    with pytest.raises(HostRangeError, match=message):
        expand(pattern)


def test_64_nodes():
    assert len(expand("node[01-64]")) == 64
    assert expand("node[01-64]")[-1] == "node64"
