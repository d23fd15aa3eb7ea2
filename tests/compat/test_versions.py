"""Version parsing and ordering: every spelling in use, garbage rejected, order laws hold."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version as PackagingVersion

from ascendprep.compat import Version, VersionError, base_release, parse_version

# Each chain is strictly increasing, left to right, as compat-notes.md §2 orders the releases.
ASCENDING = {
    "cann": [
        # T builds are pre-releases below every RC of their line
        "7.0.T10",
        "7.0.RC1",
        "7.0.0",
        "7.0.1",
        # alpha of an RC < the RC < its hotfix < next RC < final
        "8.0.T63",
        "8.0.RC1",
        "8.0.RC2.alpha001",
        "8.0.RC2.alpha003",
        "8.0.RC2",
        "8.0.RC3",
        "8.0.RC3.20",
        "8.0.0",
        "8.1.RC1",
        "8.2.RC1.alpha001",
        "8.2.RC1.alpha003",
        "8.2.RC1",
        "8.3.RC1",
        # new scheme: alpha < -beta.N < final < patch; X tops its line
        "8.5.0.alpha001",
        "8.5.0.alpha002",
        "8.5.0-beta.1",
        "8.5.0",
        "8.5.2",
        "8.5.X",
        "9.0.0-beta.1",
        "9.0.0.beta2",
        "9.0.0",
        "9.1.0.beta.1",
        "9.1.0-beta.3",
        "9.1.0",
    ],
    "cann_history": [
        "5.0.2",
        "5.0.3",
        "5.0.4",
        "5.1.RC1",
        "5.1.RC1.1",
        "5.1.RC2",
        "6.0.RC1",
        "6.0.1",
        "6.3.RC1",
        "6.3.RC2",
        "6.3.RC3",
        "6.3.RC3.1",
        "7.0.RC1",
        "7.0.0",
        "7.0.1",
        "8.0.RC1",
        "8.0.RC2",
        "8.0.RC3",
        "8.0.0",
        "8.1.RC1",
        "8.2.RC1",
        "8.3.RC1",
        "8.5.0",
        "8.5.2",
        "9.0.0",
        "9.1.0",
    ],
    "driver": [
        "1.0.RC1.alpha",
        "1.0.27.alpha",
        "5.1.rc2",
        "6.0.rc1",
        "6.0.0",
        "21.0.4",
        "22.0.0.3",
        "23.0.rc1",
        "23.0.rc2.3",
        "23.0.rc3",
        "23.0.0",
        "23.0.3",
        "23.0.7",
        "24.1.T1",
        "24.1.rc1",
        "24.1.rc2",
        "24.1.rc2.1",
        "24.1.rc2.2",
        "24.1.rc3",
        "24.1.0",
        "25.0.rc1.alpha1",
        "25.0.rc1.beta1",
        "25.0.rc1",
        "25.0.rc1.1",
        "25.2.0",
        "25.3.rc1",
        "25.5.0.b010",
        "25.5.0",
        "25.5.1",
        "25.5.2",
        "25.5.X",
        "26.0.rc1",
        "26.1.0",
    ],
    "firmware": [
        "6.0.rc1.2",
        "6.3.0.1.241",
        "6.4.0.4.220",
        "6.4.12.1.241",
        "7.0.0.5.242",
        "7.1.0.4.220",
        "7.1.0.6.220",
        "7.1.0.11.220",
        "7.3.0.1.231",
        "7.5.0.1.129",
        "7.7.0.1.231",
    ],
    "torch_npu": [
        "1.5.0.post2",
        "1.8.1-rc1",
        "1.8.1.rc2",
        "1.8.1rc3",
        "1.8.1",
        "1.8.1.post1",
        "1.11.0.rc1",
        "1.11.0.rc2",
        "1.11.0",
        "1.11.0.post14",
        "2.1.0.rc1",
        "2.1.0",
        "2.1.0.post6",
        "2.1.0.post8.dev20241009",
        "2.1.0.post8",
        "2.1.0.post10",
        "2.1.0.post17",
        "2.10.0rc2",
        "2.10.0",
        "2.10.0.post4",
        "2.11.0rc1",
        "2.11.0",
        "2.13.0rc1",
        "2.14.0",
    ],
    "torch": [
        "1.11.0",
        "2.1.0+cpu",
        "2.1.1",
        "2.5.1+cpu.cxx11.abi",
        "2.10.0",
        "2.14.0.dev20260719+cpu",
        "2.14.0",
    ],
    "torchvision": ["0.9.1", "0.12", "0.16.0", "0.17", "0.18.0", "0.18.1", "0.28.0"],
    "python": ["3.7", "3.7.4", "3.7.5", "3.8", "3.10", "3.10.12", "3.11", "3.13.0rc1", "3.13", "3.14"],
}

# Spellings of the same release: equal, same hash, original text kept.
EQUAL = [
    ("cann", "8.0.RC2.beta1", "8.0.RC2"),  # community edition == commercial (old scheme)
    ("cann", "8.0.0.beta1", "8.0.0"),
    ("cann", "8.1.rc1", "8.1.RC1"),  # container-tag lower case
    ("cann", "9.1.0.beta.1", "9.1.0-beta.1"),  # conda vs release-notes spelling
    ("cann", "9.0.0.beta2", "9.0.0-beta.2"),  # torch_npu code spelling
    ("cann", "8.5.0.ALPHA002", "8.5.0.alpha002"),
    ("driver", "24.1.RC2", "24.1.rc2"),  # HDK name vs driver file
    ("driver", "25.0.RC1.1", "25.0.rc1.1"),
    ("torch_npu", "1.8.1-rc1", "1.8.1rc1"),
    ("torch_npu", "1.11.0.rc2", "1.11.0rc2"),
    ("torch_npu", "2.1.0.post8+cxx11-abi.git1234567", "2.1.0.post8"),  # local tag ignored
    ("torch", "2.1.0+cpu", "2.1.0"),  # x86 wheel vs aarch64 wheel
    ("torch", "2.1.0+cpu.cxx11.abi", "2.1.0"),
    ("torchvision", "0.17", "0.17.0"),
    ("python", "3.10", "3.10.0"),
]

GARBAGE = [
    ("cann", ""),
    ("cann", "   "),
    ("cann", "abc"),
    ("cann", "8"),
    ("cann", "8.0"),
    ("cann", "8.0.RC"),
    ("cann", "8.0.RCx"),
    ("cann", "8.0.RC1.rc2"),
    ("cann", "8.5.X.1"),
    ("cann", "8..0"),
    ("cann", "8.0.0."),
    ("cann", "8.0.T1.1"),
    ("cann", "v8.0.0"),
    ("cann", "8.0.0-gamma.1"),
    ("cann", "8.0.0 rc1"),
    ("driver", "24.1"),
    ("driver", "24.1.rc2.b"),
    ("driver", "Ascend HDK 24.1.RC2"),
    ("driver", "24.1.rc2.1.alpha"),
    ("firmware", "seven"),
    ("firmware", "7.1"),
    ("torch_npu", "2.1.0.foo"),
    ("torch_npu", "latest"),
    ("torch_npu", "2.1.0+"),
    ("torch_npu", "2.1.0-post-x"),
    ("torch", "2.1.0+cpu+cu121"),
    ("torch", "=2.1.0"),
    ("torchvision", "0.16.0.0.x"),
    ("python", "3"),
    ("python", "three.ten"),
    ("python", "3.10.12.final"),
    ("cann", "8." * 80 + "0"),
]


def _pairs():
    for kind, chain in ASCENDING.items():
        parse_kind = "cann" if kind == "cann_history" else kind
        for low, high in zip(chain, chain[1:]):
            yield pytest.param(parse_kind, low, high, id=f"{kind}:{low}<{high}")


@pytest.mark.parametrize("kind,low,high", list(_pairs()))
def test_adjacent_spellings_are_strictly_ordered(kind: str, low: str, high: str) -> None:
    a, b = parse_version(kind, low), parse_version(kind, high)
    assert a < b and b > a and a <= b and b >= a and a != b


@pytest.mark.parametrize("kind", sorted(ASCENDING))
def test_sorting_a_shuffled_chain_restores_it(kind: str) -> None:
    parse_kind = "cann" if kind == "cann_history" else kind
    chain = ASCENDING[kind]
    shuffled = list(reversed(chain[::2])) + list(reversed(chain[1::2]))
    assert [v.text for v in sorted(parse_version(parse_kind, t) for t in shuffled)] == chain


@pytest.mark.parametrize("kind,left,right", EQUAL, ids=[f"{k}:{a}=={b}" for k, a, b in EQUAL])
def test_spellings_of_one_release_are_equal_and_hash_alike(kind: str, left: str, right: str) -> None:
    a, b = parse_version(kind, left), parse_version(kind, right)
    assert a == b and hash(a) == hash(b) and not a < b and not b < a
    assert a.text == left and len({a, b}) == 1


@pytest.mark.parametrize("kind,text", GARBAGE, ids=[f"{k}:{t[:20]!r}" for k, t in GARBAGE])
def test_garbage_is_rejected_with_a_message_naming_kind_and_text(kind: str, text: str) -> None:
    with pytest.raises(VersionError) as info:
        parse_version(kind, text)
    message = str(info.value)
    assert message.startswith(f"{kind} version ") and info.value.kind == kind
    assert "Traceback" not in message


@pytest.mark.parametrize("value", [None, 8, 8.0, ["8.0.0"]])
def test_non_strings_are_rejected(value: object) -> None:
    with pytest.raises(VersionError, match="expected a string"):
        parse_version("cann", value)


def test_unknown_kind_is_rejected_listing_the_kinds() -> None:
    with pytest.raises(VersionError, match="unknown version kind.*cann.*torch_npu"):
        parse_version("cuda", "12.1")


def test_hdk_is_an_alias_of_driver() -> None:
    assert parse_version("hdk", "24.1.RC2") == parse_version("driver", "24.1.rc2")


def test_versions_of_different_kinds_do_not_compare() -> None:
    cann, driver = parse_version("cann", "8.0.0"), parse_version("driver", "8.0.0")
    assert cann != driver
    with pytest.raises(TypeError, match="cann version with a driver version"):
        _ = cann < driver


def test_prerelease_flags() -> None:
    prerelease = ["8.0.RC2.alpha003", "7.0.T10", "8.5.0-beta.1", "8.5.0.alpha001"]
    release = ["8.0.RC2", "8.0.RC2.beta1", "8.0.0", "6.3.RC3.1", "8.5.2"]
    assert all(parse_version("cann", t).is_prerelease for t in prerelease)
    assert not any(parse_version("cann", t).is_prerelease for t in release)
    assert parse_version("torch_npu", "2.11.0rc1").is_prerelease
    assert parse_version("torch", "2.14.0.dev20260719+cpu").is_prerelease
    assert not parse_version("torch_npu", "2.1.0.post6").is_prerelease


@pytest.mark.parametrize(
    "kind,entry,candidate,expected",
    [
        ("cann", "8.5.X", "8.5.0", True),
        ("cann", "8.5.X", "8.5.2", True),
        ("cann", "8.5.X", "8.5.0.alpha001", False),  # wildcard lists releases, not pre-releases
        ("cann", "8.5.X", "9.0.0", False),
        ("cann", "8.0.RC3", "8.0.RC3.20", True),  # hotfix of a listed release
        ("cann", "8.0.RC3", "8.0.RC3.beta1", True),
        ("cann", "8.0.RC2", "8.0.RC2.alpha003", False),
        ("cann", "6.3.RC3.1", "6.3.RC3", False),  # the base release is not the hotfix
        ("driver", "25.0.RC1", "25.0.rc1.1", True),
        ("driver", "25.5.X", "25.5.1", True),
        ("driver", "24.1.RC2", "24.1.rc3", False),
        ("torch", "2.1.0", "2.1.0+cpu", True),
        ("torch", "2.1.0", "2.1.1", False),
    ],
)
def test_covers(kind: str, entry: str, candidate: str, expected: bool) -> None:
    assert parse_version(kind, entry).covers(parse_version(kind, candidate)) is expected


def test_attributes_other_modules_use() -> None:
    torch = parse_version("torch", "2.5.1+cpu.cxx11.abi")
    assert (torch.public, torch.local, torch.minor) == ("2.5.1", "cpu.cxx11.abi", "2.5")
    assert parse_version("python", "3.10.12").minor == "3.10"
    assert base_release(parse_version("torch_npu", "2.1.0.post8.dev20241009+git1234567")) == "2.1.0"
    assert base_release(parse_version("torch_npu", "2.10.0rc2")) == "2.10.0"
    assert parse_version("cann", "8.5.X").is_wildcard and parse_version("cann", "8.5.X").minor == "8.5"
    assert str(parse_version("cann", " 8.0.RC1 ")) == "8.0.RC1"


# ---- properties -------------------------------------------------------------------------------

_n = st.integers(min_value=0, max_value=30)
_hotfix = st.lists(_n, min_size=1, max_size=3).map(lambda parts: "".join(f".{p}" for p in parts))
_stage = st.one_of(
    _n.map(lambda n: f".alpha{n:03d}"),
    _n.map(lambda n: f".beta{n}"),
    _n.map(lambda n: f"-beta.{n}"),
    _n.map(lambda n: f".beta.{n}"),
)


@st.composite
def ascend_versions(draw: st.DrawFn, kind: str) -> Version:
    """Valid spellings of every shape the grammar accepts: test builds, RCs, finals, wildcards."""
    line = f"{draw(st.integers(5, 26))}.{draw(st.integers(0, 6))}"
    shape = draw(st.sampled_from(["test", "rc", "final", "wildcard"]))
    if shape == "test":
        text = f"{line}.T{draw(_n)}"
    elif shape == "wildcard":
        text = f"{line}.X"
    elif shape == "rc":
        rc = draw(st.sampled_from(["RC", "rc"]))
        text = f"{line}.{rc}{draw(_n)}" + draw(st.one_of(st.just(""), _hotfix, _stage))
    else:
        rc_stage = _n.map(lambda n: f".rc{n}")
        text = f"{line}.{draw(_n)}" + draw(st.one_of(st.just(""), _hotfix, _stage, rc_stage))
    return parse_version(kind, text)


_ascend = st.sampled_from(["cann", "driver", "firmware"]).flatmap(
    lambda kind: st.lists(ascend_versions(kind), min_size=3, max_size=3)
)


@given(_ascend)
def test_ascend_order_is_a_total_order(triple: list) -> None:
    a, b, c = triple
    assert (a < b) + (a == b) + (a > b) == 1  # trichotomy
    if a <= b and b <= a:
        assert a == b and hash(a) == hash(b)  # antisymmetry, consistent with hash
    if a <= b and b <= c:
        assert a <= c  # transitivity
    if a < b and b < c:
        assert a < c
    assert sorted(sorted([a, b, c])) == sorted([c, b, a])


_pep440 = st.builds(
    lambda release, pre, post, dev, local: release + pre + post + dev + local,
    st.lists(st.integers(0, 20), min_size=1, max_size=4).map(lambda parts: ".".join(map(str, parts))),
    st.one_of(
        st.just(""),
        st.tuples(st.sampled_from(["a", "b", "rc", ".rc", "-rc", "alpha", "c"]), _n).map(lambda t: f"{t[0]}{t[1]}"),
    ),
    st.one_of(st.just(""), _n.map(lambda n: f".post{n}"), _n.map(lambda n: f"-{n}")),
    st.one_of(st.just(""), _n.map(lambda n: f".dev{n}")),
    st.sampled_from(["", "+cpu", "+cpu.cxx11.abi", "+git1234abc", "+cu121"]),
)


@given(st.lists(_pep440, min_size=2, max_size=6))
def test_pep440_order_matches_packaging_on_the_public_part(texts: list) -> None:
    ours = [parse_version("torch_npu", t) for t in texts]
    theirs = [PackagingVersion(PackagingVersion(t).public) for t in texts]
    for (a, pa), (b, pb) in itertools.combinations(zip(ours, theirs), 2):
        assert (a < b) == (pa < pb) and (a == b) == (pa == pb), (a.text, b.text)
        assert (hash(a) == hash(b)) or a != b
    for version, reference in zip(ours, theirs):
        assert version.public == str(reference)
