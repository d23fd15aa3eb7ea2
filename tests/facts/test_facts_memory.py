"""A verify keeps every host's facts until its report, so the facts of one host stay small: the
many small fact objects carry no per-instance ``__dict__``, and port counters keep one name map
per counter layout (CounterValues) rather than a dict per read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ascendprep.facts import blocker_model as blocker_facts
from ascendprep.facts import jobenv_model as jobenv_facts
from ascendprep.facts import model as facts
from ascendprep.facts.gather import parse_gather_output

RECORDED = Path(__file__).resolve().parents[2] / "bench" / "scale_data" / "a2-converged.gather.txt"


@pytest.fixture(scope="module")
def two_hosts():
    if not RECORDED.exists():
        pytest.skip("no recorded gather")
    text = RECORDED.read_text()
    # Two parses of the same text stand for two hosts printing the same words.
    return parse_gather_output(text), parse_gather_output(text)


def test_small_facts_have_slots() -> None:
    per_host_many = [
        facts.NpuFacts,
        facts.OpticalLane,
        facts.OpticalInfo,
        facts.OpticalThresholds,
        facts.CounterSample,
        facts.LinkRecord,
        facts.LinkStat,
        facts.LldpNeighbor,
        facts.TlsState,
        facts.NpuHealth,
        facts.ProbeError,
        facts.InterfaceAddress,
        blocker_facts.LinkState,
        jobenv_facts.JobEnv,
    ]
    for cls in per_host_many:
        assert "__slots__" in vars(cls) and cls.__dictoffset__ == 0, cls.__name__  # instances have no __dict__


def test_facts_of_a_host_stay_small(two_hosts) -> None:
    """Bytes one host's facts hold that a second host's do not share, by sys.getsizeof (the
    recorded 8-NPU host)."""
    import gc

    first, second = two_hosts

    def reachable(root):
        seen, stack = {}, [root]
        while stack:
            obj = stack.pop()
            if id(obj) in seen or isinstance(obj, type):
                continue
            seen[id(obj)] = obj
            stack.extend(gc.get_referents(obj))
        return seen

    mine, theirs = reachable(first), reachable(second)
    own = sum(sys.getsizeof(obj) for key, obj in mine.items() if key not in theirs)
    assert own < 55_000, own


def test_counter_values_read_as_the_dict_they_replace() -> None:
    from ascendprep.facts.port_stats import parse_stat, sample

    text = "packet statistics:\nmac_rx_fcs_err_pkt_num:12\nroce_rx_err_pkt_num:0\n"
    counters = sample(parse_stat(text), 1, "100").counters
    plain = {"mac_rx_fcs_err_pkt_num": 12, "roce_rx_err_pkt_num": 0}
    assert isinstance(counters, facts.CounterValues)
    assert counters == plain and plain == counters and dict(counters) == plain
    assert list(counters) == list(plain) and len(counters) == 2
    assert (
        counters["mac_rx_fcs_err_pkt_num"] == 12 and counters.get("nope") is None and "roce_rx_err_pkt_num" in counters
    )
    assert counters != {"mac_rx_fcs_err_pkt_num": 13, "roce_rx_err_pkt_num": 0}
    with pytest.raises(KeyError):
        counters["nope"]


def test_counter_values_share_their_names_and_survive_facts_json(two_hosts) -> None:
    import json

    first, second = two_hosts
    a, b = first.npus[0].stat_samples[0].counters, second.npus[5].stat_samples[0].counters
    assert a._positions is b._positions  # one name map for every read of the same layout
    again = facts.HostFacts.from_dict(json.loads(first.to_json()))
    assert again == first and json.loads(again.to_json()) == first.to_dict()
    assert isinstance(again.npus[0].stat_samples[0].counters, facts.CounterValues)


def test_hostile_counter_layouts_do_not_grow_the_shared_maps() -> None:
    from ascendprep.base.limits import SHARED_COUNTER_LAYOUTS

    for index in range(SHARED_COUNTER_LAYOUTS * 3):
        values = facts.CounterValues((f"hostile_{index}_a", f"hostile_{index}_b"), (1, 2))
        assert dict(values) == {f"hostile_{index}_a": 1, f"hostile_{index}_b": 2}
    assert len(facts._COUNTER_LAYOUTS) <= SHARED_COUNTER_LAYOUTS
    with pytest.raises(ValueError):
        facts.CounterValues(("a", "a"), (1, 2))
