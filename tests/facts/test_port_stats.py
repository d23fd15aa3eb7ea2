"""``hccn_tool -stat -g``: both driver forms parse; rates from two reads; a reset is unknown, not negative."""

from __future__ import annotations

import pytest

from ascendprep.facts.model import CounterSample
from ascendprep.facts.port_stats import COUNTER_MAX, parse_stat, sample, sample_time
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.lab.sim.hccn_views import STAT_KEYS
from ascendprep.verify.checks.counters import counter_rate, rates, sample_pair

#: The long form in the driver's order (tool_display_stat_info), as a current 910B driver prints it.
LONG = "packet statistics:\n" + "".join(f"{key}:{index * 7}\n" for index, key in enumerate(STAT_KEYS))
#: The short form of older 910 drivers (reference §1.4).
SHORT = "packet statistics:\nroce_rx_err_pkt_num:3\nroce_tx_err_pkt_num:0\n"


def test_the_long_form_keeps_every_counter_in_order() -> None:
    counters = parse_stat(LONG)
    assert list(counters) == list(STAT_KEYS)
    assert counters["mac_tx_mac_pause_num"] == 0 and counters["mac_rx_mac_pause_num"] == 7


def test_the_short_form_of_older_drivers_parses() -> None:
    assert parse_stat(SHORT) == {"roce_rx_err_pkt_num": 3, "roce_tx_err_pkt_num": 0}


def test_a_space_after_the_colon_and_a_crlf_are_tolerated() -> None:
    assert parse_stat("packet statistics:\r\nroce_rx_err_pkt_num: 5\r\n") == {"roce_rx_err_pkt_num": 5}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "packet statistics:"),
        ("roce_rx_err_pkt_num:3\n", "packet statistics:"),
        ("packet statistics:\n", "counter:value"),
        ("packet statistics:\nroce_rx_err_pkt_num:-3\n", "unrecognised -stat line"),
        ("packet statistics:\n| port | 400 G |\n", "unrecognised -stat line"),
        (f"packet statistics:\nroce_rx_err_pkt_num:{COUNTER_MAX + 1}\n", "larger than a 64-bit counter"),
        ("packet statistics:\nroce_rx_err_pkt_num:1\nroce_rx_err_pkt_num:2\n", "listed twice"),
        ("packet statistics:\n" + "".join(f"c{i}:1\n" for i in range(600)), "more than 512"),
    ],
)
def test_output_the_tool_does_not_print_is_refused(text: str, fragment: str) -> None:
    with pytest.raises(UnexpectedOutput, match=fragment):
        parse_stat(text)


def test_the_time_stamp_is_hundredths_of_a_second() -> None:
    assert sample_time("35073547") == 350735.47
    assert sample_time("") is None and sample_time("12a") is None and sample_time("9" * 16) is None
    assert sample({"a": 1}, 2, "500").at_s == 5.0 and sample({"a": 1}, None, "").pass_number == 1


def test_growth_per_second_over_the_interval() -> None:
    first = CounterSample(1, 100.0, {"mac_rx_fcs_err_pkt_num": 10, "only_first": 1})
    second = CounterSample(2, 105.0, {"mac_rx_fcs_err_pkt_num": 260})
    measured = rates(first, second)
    assert set(measured) == {"mac_rx_fcs_err_pkt_num"}
    assert measured["mac_rx_fcs_err_pkt_num"].rate_per_s == 50.0


def test_a_counter_that_went_down_has_no_rate_never_a_negative_one() -> None:
    rate = counter_rate("mac_rx_pfc_pkt_num", 2**64 - 10, 5, 5.0)
    assert rate.rate_per_s is None and "cleared or wrapped" in (rate.problem or "")


def test_no_positive_interval_means_no_rates() -> None:
    assert rates(CounterSample(1, 100.0, {"a": 1}), CounterSample(2, 100.0, {"a": 5})) == {}
    assert rates(CounterSample(1, None, {"a": 1}), CounterSample(2, 105.0, {"a": 5})) == {}


def test_the_pair_is_the_last_read_of_each_pass() -> None:
    a, b, c = CounterSample(1, 1.0, {}), CounterSample(2, 6.0, {}), CounterSample(2, 7.0, {})
    assert sample_pair((a, b, c)) == (a, c)
    assert sample_pair((a,)) == (a, None)
