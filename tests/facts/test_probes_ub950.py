"""The Ascend 950 (Atlas 350) hccn_tool and npu-smi answers: the documented examples parse to the
values a user reads in them, damaged or foreign text is refused, and the 910 parsers keep refusing
the 950 table forms. Sources of the raw files: tests/fixtures/probes/README.md (Ascend 950)."""

from __future__ import annotations

import pytest

from ascendprep.facts import (
    hccn,
    npu_procs,
    optics,
    port_state,
    sio_info,
    ub_connect,
    ub_dev_info,
    ub_fec,
    ub_link_stat,
    ub_ping,
    ub_port_info,
    ub_speed,
    ub_stat,
)
from ascendprep.facts.text import UnexpectedOutput


def test_speed_table_gives_die_port_speed_and_lanes(fixture_text):
    udie, port, speed = ub_speed.parse_speed(fixture_text("hccn/a5_speed.out"))
    assert (udie, port) == (0, 4)
    assert (speed.speed_gbps, speed.cap_lanes, speed.width_lanes, speed.status) == (400, 4, 4, "normal")
    assert not speed.downgraded


def test_speed_downgraded_port_reads_as_downgraded(fixture_text):
    # built: the documented row with Width X2 and Status downgraded (the page's Status values)
    text = fixture_text("hccn/a5_speed.out").replace("| X4    | normal    |", "| X2    | downgraded|")
    _, _, speed = ub_speed.parse_speed(text)
    assert (speed.width_lanes, speed.status, speed.downgraded) == (2, "downgraded", True)


def test_speed_unknown_while_link_down(fixture_text):
    text = fixture_text("hccn/a5_speed.out").replace("| 400 G   |", "| unknown |")
    assert ub_speed.parse_speed(text)[2].speed_gbps is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace("| X4    | normal", "| 4     | normal"),
        lambda t: t.replace("normal", "fine  "),
        lambda t: t.rsplit("+", 1)[0].rsplit("\n", 1)[0],  # cut before the closing border
        lambda t: t.replace("| 0   | 0    | 4    |", "| 0   | 0    |"),  # a cell short
        lambda t: t + t,  # two tables
        lambda t: "Speed: 400000 Mb/s\n",  # the 910 form
    ],
)
def test_speed_damaged_is_refused(fixture_text, damage):
    with pytest.raises(UnexpectedOutput):
        ub_speed.parse_speed(damage(fixture_text("hccn/a5_speed.out")))


def test_fec_table(fixture_text):
    udie, port, fec = ub_fec.parse_fec(fixture_text("hccn/a5_fec.out"))
    assert (udie, port, fec.rs_mode, fec.auto_change_mode, fec.itlv_mode) == (0, 4, "128 T4", "Static", "Interweave")


def test_link_stat_counts_and_history_newest_first(fixture_text):
    stat = ub_link_stat.parse_link_stat(fixture_text("hccn/a5_link_stat.out"))
    assert (stat.up_count, stat.down_count) == (2, 2)
    assert [event.state for event in stat.events] == ["LINK_UP", "LINK_DOWN", "LINK_UP", "LINK_DOWN"]
    assert stat.events[0].time == "Mon Feb 9 21:45:51 2026"


def test_link_stat_without_counts_is_refused(fixture_text):
    text = fixture_text("hccn/a5_link_stat.out").replace("link down count :  2\n", "")
    with pytest.raises(UnexpectedOutput, match="link down count"):
        ub_link_stat.parse_link_stat(text)


def test_stat_reads_the_ub_counters(fixture_text):
    counters = ub_stat.parse_ub_stat(fixture_text("hccn/a5_stat.out"))
    assert counters["port_id"] == 4 and counters["crc_error_sum"] == 0 and counters["retry_req_sum"] == 0
    assert len(counters) == 42


def test_stat_of_a_910_port_is_not_a_ub_answer(fixture_text):
    with pytest.raises(UnexpectedOutput, match="not a UB port"):
        ub_stat.parse_ub_stat("packet statistics:\nmac_tx_total_pkt_num:10\nroce_rx_err_pkt_num:0\n")


def test_dev_info_ports_interfaces_and_normalised_eids(fixture_text):
    info = ub_dev_info.parse_dev_info(fixture_text("hccn/a5_dev_info.out"))
    assert [(p.udie, p.port, p.speed_gbps, p.port_type, p.link_status) for p in info.ports] == [
        (0, 4, 400, "UB", "UP"),
        (0, 5, 400, "UB", "UP"),
        (0, 6, 400, "UB", "UP"),
    ]
    names = [interface.name for interface in info.interfaces]
    assert names == ["end0v0", "ipourma0"]
    assert info.interfaces[0].addresses == ("192.168.2.199",)
    assert len(info.interfaces[1].addresses) == 4
    assert info.eids[0] == "000000000000000000100000dfdf0020"
    assert info.eids_by_udma == {"udma1": info.eids}
    # the ipourma0 addresses are the same EIDs in their IPv6-like form
    assert sorted(ub_dev_info.normalise_eid(a) for a in info.interfaces[1].addresses) == sorted(info.eids)


def test_eid_normalisation_refuses_what_is_not_128_bits():
    assert ub_dev_info.normalise_eid("::10:0:dfdf:20") == "000000000000000000100000dfdf0020"
    with pytest.raises(UnexpectedOutput):
        ub_dev_info.normalise_eid("0000:0010:dfdf:0020:zz")


def test_dev_info_unknown_table_is_refused(fixture_text):
    text = fixture_text("hccn/a5_dev_info.out").replace("| Name            |", "| Device          |")
    with pytest.raises(UnexpectedOutput, match="unrecognised table"):
        ub_dev_info.parse_dev_info(text)


def test_ub_connect_names_each_port(fixture_text):
    connect = ub_connect.parse_ub_connect(fixture_text("hccn/a5_ub_connect.out"))
    assert connect.status == "PARTIAL LINK"
    assert connect.ports == {4: "UP", 5: "DOWN", 6: "PARTIAL UP"}


def test_ub_connect_single_card_has_no_ports():
    connect = ub_connect.parse_ub_connect("link status : DOWN\n")
    assert (connect.status, connect.ports) == ("DOWN", {})


@pytest.mark.parametrize("text", ["link status : SOMETIMES\n", "port 4 : UP\n", "link status : UP\nport 4 : HALF\n"])
def test_ub_connect_foreign_text_is_refused(text):
    with pytest.raises(UnexpectedOutput):
        ub_connect.parse_ub_connect(text)


def test_port_info_lanes_and_state(fixture_text):
    info = ub_port_info.parse_port_info(fixture_text("hccn/a5_port_info.out"))
    assert (info.lane_num, info.cur_tx_lane_num, info.cur_rx_lane_num) == (4, 4, 4)
    assert (info.lstm_state, info.port_link, info.link_down_err) == ("LINK_ACTIVE", "link", "0x302")
    assert not info.lanes_reduced


def test_port_info_lane_loss_is_seen(fixture_text):
    # built: the documented answer with the transmit side trained on two lanes
    text = fixture_text("hccn/a5_port_info.out").replace("cur_tx_lane_num: X4", "cur_tx_lane_num: X2")
    assert ub_port_info.parse_port_info(text).lanes_reduced


def test_port_info_without_its_blocks_is_refused(fixture_text):
    text = fixture_text("hccn/a5_port_info.out").split("======================== UB DLPHY")[0]
    with pytest.raises(UnexpectedOutput, match="UB DLPHY INFO"):
        ub_port_info.parse_port_info(text)


def test_sio_info(fixture_text):
    info = sio_info.parse_sio_info(fixture_text("npu_smi/a5_sio_info.out"))
    assert (info.tx_errors, info.rx_errors) == (0, 0)
    with pytest.raises(UnexpectedOutput):
        sio_info.parse_sio_info("TX Error Count : 0\n")
    with pytest.raises(UnexpectedOutput):
        sio_info.parse_sio_info("TX Error Count : 0\nRX Error Count : many\n")


def test_ub_ping_success(fixture_text):
    ping = ub_ping.parse_ub_ping("a", "b", 0, fixture_text("hccn/a5_ub_ping.out"))
    assert (ping.ok, ping.sent, ping.received, ping.loss_percent, ping.avg_ms) == (True, 6, 6, 0.0, 0.286)


def test_ub_ping_loss_and_garbage_are_failures(fixture_text):
    lossy = fixture_text("hccn/a5_ub_ping.out").replace("6 received, 0.00%", "4 received, 33.33%")
    ping = ub_ping.parse_ub_ping("a", "b", 0, lossy)
    assert (ping.ok, ping.error) == (False, "2 of 6 packets lost")
    failed = ub_ping.parse_ub_ping("a", "b", 1, "Get invalid device id.\n")
    assert not failed.ok and "Get invalid device id." in failed.error


# -- the 910 parsers keep refusing the 950 forms ------------------------------------------------


@pytest.mark.parametrize(
    "parse, raw",
    [
        (hccn.parse_speed, "hccn/a5_speed.out"),
        (hccn.parse_link_stat, "hccn/a5_link_stat.out"),
        (port_state.parse_fec, "hccn/a5_fec.out"),
        (hccn.parse_ip, "hccn/a5_dev_info.out"),
        (optics.parse_optical, "hccn/a5_dev_info.out"),
    ],
)
def test_910_parsers_refuse_the_950_tables(fixture_text, parse, raw):
    with pytest.raises(UnexpectedOutput):
        parse(fixture_text(raw))


def test_950_ping_script_names_the_source_address_mode_first():
    from ascendprep.facts.ping import render_ping_script
    from ascendprep.facts.shell import UnsafeValue

    script = render_ping_script([(1, "10.20.0.3")], 5, sources={1: "10.20.0.2"})
    assert 'ap_tool "$AP_HCCN" -t -ping -i "$1" -src_address "$3" -dst_address "$2"' in script
    assert "ap_ping 1 10.20.0.3 10.20.0.2" in script
    assert "-ping -g address" not in script
    assert "-ping -g address" in render_ping_script([(1, "10.20.0.3")], 5)  # the 910 form, unchanged
    with pytest.raises(UnsafeValue):
        render_ping_script([(1, "10.20.0.3")], 5, sources={1: "10.20.0.2; reboot"})


def test_plain_npu_smi_info_of_950_reads_its_card_level_process_table(fixture_text):
    """The documented box: NPU 0 idle; the process table's first column is the NPU alone."""
    text = fixture_text("npu_smi/a5_info.out")
    table = npu_procs.parse_process_table(text)
    assert (table.processes, table.idle_npus, table.odd_rows) == ((), (0,), ())
    # built: the idle line replaced by a process row in the page's columns
    idle = "| No running processes found in NPU 0" + " " * 61 + "|"
    busy = "| 0                         | 1333928       | python3                  | 37709                    |"
    assert idle in text
    (process,) = npu_procs.parse_process_table(text.replace(idle, busy)).processes
    assert (process.npu_id, process.chip, process.pid, process.name, process.memory_mb) == (
        0,
        0,
        1333928,
        "python3",
        37709,
    )
    # a 910 row ("NPU  Chip") under the 950 header is not a process of the card
    odd = npu_procs.parse_process_table(text.replace(idle, busy.replace("| 0          ", "| 0       0  ")))
    assert odd.processes == () and len(odd.odd_rows) == 1


def test_tls_of_950_is_the_910_form_and_reads_the_same(fixture_text):
    """The 950 guide's -tls example: switch 0, not preset (four certificate blocks follow)."""
    (tls,) = hccn.parse_tls(fixture_text("hccn/a5_tls.out")).values()
    assert (tls.switch, tls.preconfigured, tls.enabled) == (0, 0, False)
    enabled = fixture_text("hccn/a5_tls.out").replace("tls switch[0]", "tls switch[1]", 1)
    assert hccn.parse_tls(enabled)["tls"].enabled
