"""What the gather's parsers take from output that is not quite the usual: odd spacing and case,
CRs and blank lines, quoting, address spellings, and hostile numbers; each either read or
refused in words that name what was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendprep.facts import hccn, netaddr, optics, port_stats, system
from ascendprep.facts.model import OpticalLane
from ascendprep.facts.text import UnexpectedOutput

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench" / "scale_data" / "a2-converged.gather.txt"
RECORDED_PINGS = ROOT / "bench" / "scale_data" / "a2-converged.ping.txt"


def test_optical_lines_read_whatever_their_spacing_case_and_line_ends() -> None:
    text = "Optical Info:\r\n\r\nPRESENT : present\r\n  Tx\tPower 0 :  0.8912 MW \r\nrx  power0:NA\ntx bias07 : 7.5 mA\nRX LOS FLAG : 0X80\n"
    info = optics.parse_optical_info(text)
    assert info.present_line is True and info.indexed is True and info.flags == {"rx_los": 0x80}
    assert info.lanes == (
        OpticalLane(0, tx_power_mw=0.8912, rx_los=False),
        OpticalLane(7, tx_bias_ma=7.5, rx_los=True),
    )


def test_an_optical_line_printed_twice_counts_once_its_last_reading() -> None:
    info = optics.parse_optical_info("optical info:\npresent : present\nTx Power0 : 1.0 mW\nTx Power0 : 2.0 mW\n")
    assert [lane.tx_power_mw for lane in info.lanes] == [2.0]


def test_an_optical_threshold_in_the_wrong_unit_is_refused_naming_it() -> None:
    with pytest.raises(UnexpectedOutput, match="vcc high thres '3465.00 mA' is not a number in mv"):
        optics.parse_optical_info("optical info:\npresent : present\nVcc High Thres : 3465.00 mA\n")


def test_stat_reads_the_largest_counter_and_odd_spacing() -> None:
    assert port_stats.parse_stat(f"packet statistics:\na:{port_stats.COUNTER_MAX}\n") == {"a": port_stats.COUNTER_MAX}
    assert port_stats.parse_stat("Packet Statistics:\n\n  a : 1  \n") == {"a": 1}
    assert dict(port_stats.read_counters("packet statistics:\na:1\nb:2")) == {"a": 1, "b": 2}


def test_os_release_values_are_read_with_shell_quoting() -> None:
    text = '# a comment\nID=debian\nNAME="Debian GNU/Linux"\nV=\'x y\'\nA="a\\"b"\nBAD="open\nlower=x\nW=a b\nE=\n'
    assert system.parse_os_release(text) == {
        "ID": "debian",
        "NAME": "Debian GNU/Linux",
        "V": "x y",
        "A": 'a"b',
        "W": "a b",
        "E": "",
    }


@pytest.mark.parametrize("value", ["10.0.0.01", "010.0.0.1", "1.2.3.4.5", "10.0.0.256", "٣.1.1.1", "::1"])
def test_a_device_address_ipaddress_refuses_is_refused(value: str) -> None:
    with pytest.raises(UnexpectedOutput, match="is not an IPv4 address"):
        hccn.parse_ip(f"ipaddr:{value}\n")


@pytest.mark.parametrize(
    "text, read",
    [
        ("10.0.0.11/24", ("10.0.0.11", 24)),
        ("10.0.0.11/024", ("10.0.0.11", 24)),
        ("10.0.0.11/255.255.255.0", ("10.0.0.11", 24)),
        ("FE80::A/64", ("fe80::a", 64)),
        ("::ffff:1.2.3.4/128", ("::ffff:102:304", 128)),
        ("10.0.0.256/24", None),
        ("10.0.0.11/33", None),
        ("fe80::1/129", None),
    ],
)
def test_host_addresses_are_read_as_ipaddress_reads_them(text: str, read) -> None:
    if read is None:
        with pytest.raises(UnexpectedOutput, match="is not an address/prefix"):
            netaddr.parse_ip_addr(f"2: eth0    inet {text} scope global eth0\n")
    else:
        (address,) = netaddr.parse_ip_addr(f"2: eth0    inet {text} scope global eth0\n")
        assert (address.address, address.prefixlen) == read


def test_getent_addresses_are_spelled_as_ipaddress_spells_them() -> None:
    assert netaddr.parse_getent_ahosts("FE80::1   STREAM node1\n10.0.0.1   STREAM\n10.0.0.1   DGRAM\n") == (
        "fe80::1",
        "10.0.0.1",
    )
    with pytest.raises(UnexpectedOutput, match="not a 'getent ahosts' line"):
        netaddr.parse_getent_ahosts("10.0.0.01   STREAM node1\n")


def test_a_ping_loss_that_is_no_number_is_no_summary() -> None:
    """``1.2.3%`` once matched the summary and then made float() raise, losing every pair of the
    transcript; now that line is no summary, and the pair says so."""
    from ascendprep.facts.ping import parse_ping_output, parse_ping_summary

    assert parse_ping_summary("3 packets transmitted, 3 received, 1.2.3% packet loss\n") is None
    assert parse_ping_summary(
        "3 packets transmitted, 3 received, 1.2.3% packet loss\n3 packets transmitted, 3 received, 0.00% packet loss\n"
    ) == (3, 3, 0.0)
    assert parse_ping_summary("recv seq=1,time=0.03ms\n3 PACKETS TRANSMITTED, 2 received, 33.33% packet loss\n") == (
        3,
        2,
        33.33,
    )
    assert parse_ping_summary("12345678901 packets transmitted, 3 received, 0% packet loss\n") is None
    results = parse_ping_output(RECORDED_PINGS.read_text().replace("0.00% packet loss", "1.2.3% packet loss", 1))
    assert len(results) == 8 and sum(result.ok for result in results) == 7
    assert not results[0].ok and "no ping summary" in (results[0].error or "")


@pytest.mark.parametrize("npu", ["²", "9" * 5000])
def test_an_id_int_refuses_costs_the_section_not_the_host(npu: str) -> None:
    """``npu=²`` (a digit to str.isdigit(), not to int()) or a 5,000-digit id once raised out of
    the gather and the ping parse, losing every section or pair of the host."""
    from ascendprep.facts.gather import parse_gather_output
    from ascendprep.facts.ping import parse_ping_output

    facts = parse_gather_output(RECORDED.read_text().replace("begin hccn.ip npu=3", f"begin hccn.ip npu={npu}", 1))
    assert any(error.probe == "hccn.ip" and "without an NPU id" in error.message for error in facts.errors)
    assert facts.npus[3].optics is not None  # the NPU's other sections still read
    results = parse_ping_output(RECORDED_PINGS.read_text().replace("npu=3 target", f"npu={npu} target", 1))
    assert len(results) == 8 and sum(result.ok for result in results) == 7
    assert any("not run" in (result.error or "") for result in results)
