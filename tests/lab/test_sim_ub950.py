"""The lab's atlas-350 profile: its simulated hccn_tool and npu-smi print the documented Ascend 950
forms (each answer goes through ascendprep's own 950 parsers, which refuse anything else), refuse
the 910 forms, take the bond-device writes apply makes, and show each UB fault and its unlike
variant."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ascendprep.facts import (
    hccn,
    npu_procs,
    npu_smi,
    sio_info,
    ub_connect,
    ub_dev_info,
    ub_link_stat,
    ub_ping,
    ub_port_info,
    ub_speed,
    ub_stat,
)
from ascendprep.lab.sim import state

FIXTURES = Path(__file__).parent.parent / "fixtures" / "probes"


@pytest.fixture
def lab4(make_lab):
    return make_lab(product="atlas-350", nodes=("node1",), npus=4)


def _get(lab, *args):
    return lab.ok("node1", *args)


def test_healthy_four_card_node_prints_the_documented_forms(lab4):
    connect = ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "1"))
    assert (connect.status, connect.ports) == ("UP", {4: "UP", 5: "UP", 6: "UP"})
    info = ub_dev_info.parse_dev_info(_get(lab4, "-g", "-dev_info", "-i", "1"))
    assert [(p.port, p.link_status) for p in info.ports] == [(4, "UP"), (5, "UP"), (6, "UP")]
    assert len(info.eids) == 4 and all(len(e) == 32 for e in info.eids)
    assert sorted(ub_dev_info.normalise_eid(a) for a in info.interfaces[1].addresses) == sorted(info.eids)
    udie, port, speed = ub_speed.parse_speed(_get(lab4, "-g", "-speed", "-i", "1", "-u", "0", "-p", "5"))
    assert (udie, port, speed.width_lanes, speed.status) == (0, 5, 4, "normal")
    assert not ub_port_info.parse_port_info(
        _get(lab4, "-g", "-port_info", "-i", "1", "-u", "0", "-p", "5")
    ).lanes_reduced
    assert ub_stat.parse_ub_stat(_get(lab4, "-g", "-stat", "-i", "1", "-u", "0", "-p", "5"))["crc_error_sum"] == 0
    assert ub_link_stat.parse_link_stat(_get(lab4, "-g", "-link_stat", "-i", "1", "-u", "0", "-p", "5")).down_count == 0
    sio = sio_info.parse_sio_info(lab4.npu_smi("node1", "info", "-t", "sio-info", "-i", "1").stdout)
    assert (sio.tx_errors, sio.rx_errors) == (0, 0)


def test_the_910_forms_are_refused_as_the_950_tool_refuses_them(lab4):
    result = lab4.hccn("node1", "-i", "0", "-speed", "-g")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "Please specify a valid mode.\nEnter [ hccn_tool -h ] for more details.\n"
    assert lab4.hccn("node1", "-g", "-speed", "-i", "0", "-u", "0", "-p", "8").returncode == 13  # not a 4-card port
    assert lab4.hccn("node1", "-g", "-speed", "-i", "0", "-u", "1", "-p", "4").returncode == 12
    chip = lab4.npu_smi("node1", "info", "-t", "health", "-i", "0", "-c", "0")
    assert chip.returncode == 1 and "-p %d          Chip Physical ID" in chip.stderr


def test_npu_smi_names_an_a5_card_with_slots(lab4):
    listing = npu_smi.parse_list(lab4.npu_smi("node1", "info", "-l").stdout)
    assert [d.product_name for d in listing.devices] == ["A5 PCIe Card"] * 4
    mapping = lab4.npu_smi("node1", "info", "-m").stdout.splitlines()
    assert mapping[0].split() == ["NPU", "ID", "Slot", "ID", "Chip", "ID", "Chip", "Phy-ID", "Chip", "Name"]
    board = lab4.npu_smi("node1", "info", "-t", "board", "-i", "2").stdout
    assert "PCI Device ID                  : 0xD806" in board and "Slot ID                        : 2" in board


def test_plain_npu_smi_info_is_the_documented_card_level_box(lab4):
    """The documented 950 box (one row pair per card, no Chip column); a busy card's process row
    is read by the parser the job-blocker check uses, an idle card stays idle."""
    documented = (FIXTURES / "npu_smi" / "a5_info.out").read_text().splitlines()
    text = lab4.npu_smi("node1", "info").stdout
    lines = text.splitlines()
    assert lines[0] == documented[0] and lines[2:6] == documented[2:6]
    head = lines.index(documented[10])  # the process table's header, as on the page
    assert lines[head - 1 : head + 2] == documented[9:12] and len(lines) == head + 2 + 2 * 4
    assert [line.split("|")[1].strip() for line in lines[6:18:3]] == ["0", "1", "2", "3"]
    assert all(len(line) == 99 for line in lines)
    assert npu_procs.parse_process_table(text).idle_npus == (0, 1, 2, 3)
    state.set_fault(lab4.state_dir, "node1", "npu-busy", npu=2)
    table = npu_procs.parse_process_table(lab4.npu_smi("node1", "info").stdout)
    assert [(p.npu_id, p.chip, p.name) for p in table.processes] == [(2, 0, "python3")]
    assert table.idle_npus == (0, 1, 3) and table.odd_rows == ()


def test_ip_gateway_netdetect_on_the_bond_device_and_hccn_conf_by_slot(lab4):
    _get(lab4, "-s", "-ip", "-i", "2", "-d", "bond2", "-address", "10.50.0.12", "-netmask", "255.255.255.0")
    _get(lab4, "-s", "-gateway", "-i", "2", "-d", "bond2", "-address", "10.50.0.1")
    _get(lab4, "-s", "-netdetect", "-i", "2", "-address", "10.50.0.1")
    assert (
        lab4.conf("node1")
        == "address_2=10.50.0.12\nnetmask_2=255.255.255.0\ngateway_2=10.50.0.1\nnetdetect_2=10.50.0.1\n"
    )
    assert _get(lab4, "-g", "-ip", "-i", "2", "-d", "bond2") == "ipaddr:10.50.0.12\nnetmask:255.255.255.0\n"
    assert _get(lab4, "-g", "-gateway", "-i", "2", "-d", "bond2") == "default gateway:10.50.0.1\n"
    assert _get(lab4, "-g", "-ip", "-i", "3", "-d", "bond3") == "ipaddr:0.0.0.0\nnetmask:0.0.0.0\n"
    assert _get(lab4, "-g", "-netdetect", "-i", "3") == "netdetect addr: 0.0.0.0\n"
    wrong = lab4.hccn(
        "node1", "-s", "-ip", "-i", "2", "-d", "bond1", "-address", "10.50.0.9", "-netmask", "255.255.255.0"
    )
    assert wrong.returncode != 0 and "Bond device ID mismatch: name='bond1', expected 'bond2'." in wrong.stderr
    not_bond = lab4.hccn(
        "node1", "-s", "-ip", "-i", "2", "-d", "eth2", "-address", "10.50.0.9", "-netmask", "255.255.255.0"
    )
    assert "expected 'bond2'" in not_bond.stderr
    for address in ("192.168.1.20", "192.168.2.20"):
        refused = lab4.hccn(
            "node1", "-s", "-ip", "-i", "1", "-d", "bond1", "-address", address, "-netmask", "255.255.255.0"
        )
        assert refused.returncode != 0
    off = lab4.hccn("node1", "-s", "-gateway", "-i", "2", "-d", "bond2", "-address", "10.60.0.1")
    assert off.returncode != 0 and "same network segment" in off.stderr


def test_tls_query_is_the_documented_form_and_set_persists_by_slot(lab4):
    documented = (FIXTURES / "hccn" / "a5_tls.out").read_text().splitlines()
    text = _get(lab4, "-g", "-tls", "-i", "1")
    assert text.splitlines()[0] == documented[0].replace("dev_id:0", "dev_id:1")
    assert text.splitlines()[2:7] == documented[2:7]  # the pub cert block, as on the page
    assert hccn.parse_tls(text)["tls"].switch == 0
    assert _get(lab4, "-s", "-tls", "-i", "1", "-enable", "1") == "Cmd executed successfully!\n"
    assert hccn.parse_tls(_get(lab4, "-g", "-tls", "-i", "1"))["tls"].enabled
    assert hccn.parse_tls(_get(lab4, "-g", "-tls", "-i", "2"))["tls"].switch == 0
    assert lab4.conf("node1") == "tls_enable_1=1\n"
    assert lab4.hccn("node1", "-s", "-tls", "-i", "1", "-enable", "2").returncode != 0
    assert lab4.hccn("node1", "-i", "1", "-tls", "-g").returncode == 2  # the 910 form
    # the mismatch fault: that card reports the other switch, the others their own
    state.set_fault(lab4.state_dir, "node1", "tls-mismatch", npu=2)
    assert hccn.parse_tls(_get(lab4, "-g", "-tls", "-i", "2"))["tls"].switch == 1
    assert hccn.parse_tls(_get(lab4, "-g", "-tls", "-i", "3"))["tls"].switch == 0


def test_port_down_is_that_port_on_that_card_only(lab4):
    state.set_fault(lab4.state_dir, "node1", "ub-port-down", npu=1, port=5)
    connect = ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "1"))
    assert (connect.status, connect.ports) == ("PARTIAL LINK", {4: "UP", 5: "DOWN", 6: "UP"})
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "2")).status == "UP"
    # unlike variant: the same port down on another card
    state.clear_faults(lab4.state_dir, "node1")
    state.set_fault(lab4.state_dir, "node1", "ub-port-down", npu=3, port=5)
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "1")).status == "UP"
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "3")).ports[5] == "DOWN"


def test_lane_downgrade_and_a_partial_link_that_recovers(lab4):
    state.set_fault(lab4.state_dir, "node1", "ub-lane-downgrade", npu=0, port=6)
    _, _, speed = ub_speed.parse_speed(_get(lab4, "-g", "-speed", "-i", "0", "-u", "0", "-p", "6"))
    assert (speed.width_lanes, speed.status) == (2, "downgraded")
    assert ub_port_info.parse_port_info(_get(lab4, "-g", "-port_info", "-i", "0", "-u", "0", "-p", "6")).lanes_reduced
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "0")).ports[6] == "PARTIAL UP"
    state.clear_faults(lab4.state_dir, "node1")
    state.set_fault(lab4.state_dir, "node1", "ub-partial-link", npu=0, port=4, recover_s=3600)
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "0")).ports[4] == "PARTIAL UP"
    # unlike variant: the partial link already recovered (its flap stays in the history)
    state.clear_faults(lab4.state_dir, "node1")
    state.set_fault(lab4.state_dir, "node1", "ub-partial-link", npu=0, port=4, recover_s=0)
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "0")).status == "UP"
    history = ub_link_stat.parse_link_stat(_get(lab4, "-g", "-link_stat", "-i", "0", "-u", "0", "-p", "4"))
    assert history.down_count == 2 and history.events[0].state == "LINK_UP"


def test_a_recent_flap_and_one_long_ago_in_the_link_history(lab4):
    def history(npu, port):
        return ub_link_stat.parse_link_stat(_get(lab4, "-g", "-link_stat", "-i", str(npu), "-u", "0", "-p", str(port)))

    state.set_fault(lab4.state_dir, "node1", "ub-link-flap", npu=1, port=5)
    flapped = history(1, 5)
    assert (flapped.up_count, flapped.down_count) == (4, 3)
    assert [e.state for e in flapped.events] == ["LINK_UP", "LINK_DOWN"] * 3
    when = time.mktime(time.strptime(flapped.events[1].time, "%a %b %d %H:%M:%S %Y"))
    assert time.time() - 600 < when < time.time()  # minutes ago, local time as the tool prints it
    assert ub_connect.parse_ub_connect(_get(lab4, "-g", "-ub_connect", "-i", "1")).status == "UP"  # up again
    assert history(1, 4).events == ()  # another port of the card
    # unlike variant: one flap three days ago
    state.clear_faults(lab4.state_dir, "node1")
    state.set_fault(lab4.state_dir, "node1", "ub-old-flap", npu=1, port=5)
    old = history(1, 5)
    assert (old.down_count, len(old.events)) == (1, 2)
    when = time.mktime(time.strptime(old.events[1].time, "%a %b %d %H:%M:%S %Y"))
    assert time.time() - 3 * 86400 - 60 < when < time.time() - 3 * 86400 + 60


def test_growing_crc_grows_and_a_static_count_does_not(lab4):
    def crc(port):
        return ub_stat.parse_ub_stat(_get(lab4, "-g", "-stat", "-i", "2", "-u", "0", "-p", str(port)))["crc_error_sum"]

    state.set_fault(lab4.state_dir, "node1", "ub-crc-growing", npu=2, port=4)
    first = crc(4)
    time.sleep(0.2)
    assert crc(4) > first
    state.set_fault(lab4.state_dir, "node1", "ub-crc-static", npu=2, port=5)
    assert crc(5) == crc(5) == 5000


def test_ub_ping_between_cards_and_across_a_down_port(lab4):
    eid = {
        n: ub_dev_info.parse_dev_info(_get(lab4, "-g", "-dev_info", "-i", str(n))).eids_by_udma["udma1"][0]
        for n in range(4)
    }

    def ping(src, dst):
        result = lab4.hccn(
            "node1",
            "-t",
            "-ub_ping",
            "-i",
            str(src),
            "-src_eid",
            _colons(eid[src]),
            "-dst_eid",
            _colons(eid[dst]),
            "-cnt",
            "3",
        )
        return ub_ping.parse_ub_ping(eid[src], eid[dst], result.returncode, result.stdout)

    assert ping(0, 1).ok and ping(0, 3).ok
    state.set_fault(lab4.state_dir, "node1", "ub-port-down", npu=0, port=4)  # card 0's port toward card 1
    lost = ping(0, 1)
    assert not lost.ok and lost.error == "3 of 3 packets lost"
    assert ping(0, 2).ok


def _colons(eid: str) -> str:
    return ":".join(eid[i : i + 4] for i in range(0, 32, 4))


def test_ub_faults_need_an_atlas_350_node(make_lab):
    a2 = make_lab(product="atlas-a2", nodes=("node1",), npus=8)
    with pytest.raises(state.LabStateError, match="atlas-350"):
        state.set_fault(a2.state_dir, "node1", "ub-port-down", npu=0, port=4)


def test_icmp_ping_from_the_bond_address(make_lab):
    lab = make_lab(product="atlas-350", nodes=("node1", "node2"), npus=2)
    for node, last in (("node1", 1), ("node2", 2)):
        lab.ok(node, "-s", "-ip", "-i", "0", "-d", "bond0", "-address", f"10.70.0.{last}", "-netmask", "255.255.255.0")
    answered = lab.hccn("node1", "-t", "-ping", "-i", "0", "-src_address", "10.70.0.1", "-dst_address", "10.70.0.2")
    assert answered.returncode == 0 and "3 packets transmitted, 3 received, 0.00% packet loss" in answered.stdout
    lost = lab.hccn("node1", "-t", "-ping", "-i", "0", "-src_address", "10.70.0.1", "-dst_address", "10.70.0.9")
    assert lost.returncode == 1 and "3 packets transmitted, 0 received, 100.00% packet loss" in lost.stdout
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "10.70.0.2").returncode == 2  # the 910 form


@pytest.mark.parametrize(
    "text",
    [
        "0000:0000:0000:0000:0010:0000:dfdf:0020",
        "::10:0:dfdf:20",
        "::40:10:0:dfdf:90",
        "1:0:0:2:0:0:0:3",
        "fe80::1",
        "::",
        "1:2:3:4:5:6:7:8",
    ],
)
def test_eid_forms_agree_with_the_standard_library(text):
    import ipaddress

    from ascendprep.lab.sim import ub950

    address = ipaddress.IPv6Address(text)
    assert ub950.eid_words(text) == tuple(int(address.exploded.split(":")[i], 16) for i in range(8))
    assert ub950._short(address.exploded) == str(address)


@pytest.mark.parametrize("text", ["", "1::2::3", "12345::", "1:2:3:4:5:6:7", "g::1", "1:2:3:4:5:6:7:8:9"])
def test_what_is_not_an_eid_is_refused(text):
    from ascendprep.lab.sim import ub950

    assert ub950.eid_words(text) is None
