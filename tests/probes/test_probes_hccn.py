"""Given hccn_tool's output (stdout, stderr, exit status), expect this NPU fact or this error."""

from __future__ import annotations

import pytest

from ascendprep.probes import hccn, optics
from ascendprep.probes.gather import parse_gather_output
from ascendprep.probes.text import UnexpectedOutput

# (probe, exit status, stdout fixture, stderr fixture, expected NpuFacts fields, expected error kind)
CASES = [
    ("hccn.ip", 0, "hccn/ip_get.out", None, {"ip": "192.168.100.101", "netmask": "255.255.255.0"}, None),
    ("hccn.ip", 13, None, "hccn/ip_get_unset.err", {"ip": None, "netmask": None}, None),
    ("hccn.ip", 0, "hccn/ip_get_old_driver_empty.out", None, {"ip": None, "netmask": None}, None),
    ("hccn.ip", 124, None, None, {"ip": None}, "timeout"),
    ("hccn.gateway", 0, "hccn/gateway_get.out", None, {"gateway": "29.1.0.1", "gateway_iface": "eth3"}, None),
    ("hccn.gateway", 2, None, "hccn/gateway_get_unset.err", {"gateway": None, "gateway_iface": None}, None),
    ("hccn.netdetect", 0, "hccn/netdetect_get.out", None, {"netdetect": "29.1.0.1"}, None),
    ("hccn.netdetect", 0, "hccn/netdetect_get_unset.out", None, {"netdetect": None}, None),
    ("hccn.link", 0, "hccn/link_up.out", None, {"link": "UP"}, None),
    ("hccn.link", 0, "hccn/link_down.out", None, {"link": "DOWN"}, None),
    ("hccn.link", 11, "hccn/busy.out", None, {"link": None}, "error"),
    ("hccn.link", 4, None, "hccn/invalid_device.err", {"link": None}, "error"),
    ("hccn.link", 0, "hccn/speed_get.out", None, {"link": None}, "error"),
    ("hccn.net_health", 0, "hccn/net_health_success.out", None, {"net_health": "Success"}, None),
    ("hccn.net_health", 0, "hccn/net_health_socket_failed_old_driver.out", None, {"net_health": "Socket fail"}, None),
    ("hccn.net_health", 0, "hccn/net_health_socket_fail.out", None, {"net_health": "Socket fail"}, None),
    ("hccn.net_health", 0, "hccn/net_health_detect_ip_set.out", None, {"net_health": "Detect ip set"}, None),
    ("hccn.net_health", 0, "hccn/net_health_init.out", None, {"net_health": "Init"}, None),
    ("hccn.net_health", 0, "hccn/net_health_fault.out", None, {"net_health": "Fault"}, None),
    ("hccn.net_health", 1, None, "hccn/command_failed.err", {"net_health": None}, "error"),
    ("hccn.tls", 0, "hccn/tls_get.out", None, {"tls": {"switch": 0, "preconfigured": 1, "certificates": True}}, None),
    ("hccn.tls", 0, "hccn/tls_get_old_driver.out", None, {"tls": {"switch": 1, "preconfigured": None, "certificates": True}}, None),
    ("hccn.tls", 14, None, "hccn/tls_get_no_certificate.err", {"tls": {"switch": None, "preconfigured": None, "certificates": False}}, None),
    ("hccn.optical", 0, "hccn/optical_get.out", None, {"optical_present": True}, None),
    ("hccn.optical", 0, "hccn/optical_not_present.out", None, {"optical_present": False}, None),
    ("hccn.speed", 0, "hccn/speed_get.out", None, {"speed_mbps": 200000}, None),
    ("hccn.speed", 0, "hccn/speed_unknown.out", None, {"speed_mbps": None}, None),
    ("hccn.speed", 13, "hccn/unsupported.out", None, {"speed_mbps": None}, "unsupported"),
    ("hccn.lldp", 0, "hccn/lldp_get_empty.out", None, {"lldp": None}, None),
    # no neighbour answering: the driver's generic failure is the answer "no LLDP neighbour"
    ("hccn.lldp", 1, None, "hccn/command_failed.err", {"lldp": None}, None),
    # ... but a tool that could not run stays a probe error
    ("hccn.lldp", 124, None, None, {"lldp": None}, "timeout"),
    ("hccn.lldp", 4, None, "hccn/invalid_device.err", {"lldp": None}, "error"),
]


@pytest.mark.parametrize("probe, rc, stdout, stderr, expected, error_kind", CASES)
def test_query_output_becomes_fact(fixture_text, transcript, probe, rc, stdout, stderr, expected, error_kind):
    text = transcript(
        "gather",
        [
            {"name": "npus", "stdout": "3\n"},
            {"name": probe, "attrs": {"npu": 3}, "rc": rc, "stdout": fixture_text(stdout), "stderr": fixture_text(stderr)},
        ],
    )
    facts = parse_gather_output(text)
    npu = facts.to_dict()["npus"]["3"]
    assert {key: npu[key] for key in expected} == expected
    kinds = [error.kind for error in facts.errors_for(probe, npu=3)]
    assert kinds == ([error_kind] if error_kind else [])
    assert len(facts.errors) == len(kinds)  # nothing else went wrong


def test_timeout_error_names_the_command_and_limit(transcript):
    text = transcript(
        "gather",
        [
            {"name": "settings", "stdout": "timeout=10\n"},
            {"name": "hccn.lldp", "attrs": {"npu": 3}, "rc": 124},
        ],
    )
    (error,) = parse_gather_output(text).errors
    assert (error.probe, error.npu, error.kind) == ("hccn.lldp", 3, "timeout")
    assert error.message == "hccn_tool -i 3 -lldp -g timed out after 10s and was killed"


def test_busy_after_retries_is_reported_with_the_number_of_tries(transcript, fixture_text):
    text = transcript("gather", [{"name": "hccn.ip", "attrs": {"npu": 0}, "rc": 11, "stdout": fixture_text("hccn/busy.out"), "tries": 4}])
    (error,) = parse_gather_output(text).errors
    assert "still busy after 4 tries" in error.message


def test_lldp_neighbour(fixture_text):
    fields = hccn.parse_lldp(fixture_text("hccn/lldp_get.out"))
    neighbour = fields["lldp"]
    assert neighbour.system_name == "LEAF-A-01"
    assert neighbour.port_ifname == "400GE1/1/20:2"
    assert neighbour.chassis_id == "MAC: 3c:c7:86:1a:2b:3c"


def test_lldp_without_system_name_and_mac_port_id(fixture_text):
    neighbour = hccn.parse_lldp(fixture_text("hccn/lldp_get_no_system_name.out"))["lldp"]
    assert neighbour.system_name is None
    assert neighbour.port_ifname is None
    assert neighbour.port_id == "MAC: 3c:c7:86:1a:2b:50"


def test_link_stat_current_driver(fixture_text):
    stat = hccn.parse_link_stat(fixture_text("hccn/link_stat_get.out"))["link_stat"]
    assert (stat.current_time, stat.up_count, stat.down_count) == ("Wed Jun  7 10:08:28 2023", 2, 1)
    assert [(record.time, record.state) for record in stat.records] == [
        ("Tue Jun  6 16:32:12 2023", "UP"),
        ("Tue Jun  6 16:32:10 2023", "DOWN"),
    ]


def test_link_stat_old_driver_device_prefix_and_no_down_count(fixture_text):
    stat = hccn.parse_link_stat(fixture_text("hccn/link_stat_old_driver.out"))["link_stat"]
    assert stat.up_count == 2
    assert stat.down_count is None
    assert [record.state for record in stat.records] == ["UP", "DOWN", "UP"]


def test_link_stat_without_records(fixture_text):
    stat = hccn.parse_link_stat(fixture_text("hccn/link_stat_no_records.out"))["link_stat"]
    assert (stat.up_count, stat.down_count, stat.records) == (1, 0, ())


@pytest.mark.parametrize(
    "parser, text",
    [
        (hccn.parse_ip, "ipaddr:192.168.1.300\nnetmask:255.255.255.0\n"),
        (hccn.parse_ip, "Get invalid parameters!\n"),
        (hccn.parse_gateway, "gateway: who knows\n"),
        (hccn.parse_link, "link status: maybe\n"),
        (hccn.parse_link_stat, "[devid 0]link up count       : two\n"),
        (hccn.parse_link_stat, "Get invalid device id.\n"),
        (hccn.parse_tls, "dev_id:0, tls status unknown\n"),
        (optics.parse_optical, "optical info:\n"),
        (hccn.parse_speed, "Duplex: Full\n"),
        (hccn.parse_lldp, "just some words\n"),
    ],
)
def test_unrecognised_output_is_refused(parser, text):
    with pytest.raises(UnexpectedOutput):
        parser(text)


def test_every_query_has_a_parser_and_twelve_calls_per_npu():
    assert set(hccn.QUERIES) == set(hccn.PARSERS)
    assert len(hccn.QUERIES) == 12


@pytest.mark.parametrize(
    "parser, text, message",
    [
        # the missing part is named, not the part that is there
        (
            hccn.parse_gateway,
            "default gateway:10.0.0.1\n",
            "expected ', Iface:eth<k>' after the gateway in 'default gateway:<ip>, Iface:eth<k>', got 'default gateway:10.0.0.1'",
        ),
        (hccn.parse_gateway, "gateway: who knows\n", "expected 'default gateway:<ip>, Iface:eth<k>', got 'gateway: who knows'"),
        (hccn.parse_netdetect, "detect: 10.0.0.1\n", "expected 'netdetect addr: <ip>' (or 'netdetect address: <ip>'), got 'detect: 10.0.0.1'"),
        (hccn.parse_link, "", "expected 'link status: UP|DOWN', got no output"),
        (hccn.parse_ip, "Get invalid parameters!\n", "expected 'ipaddr:<ip>' and 'netmask:<mask>' lines, got 'Get invalid parameters!'"),
    ],
)
def test_unrecognised_output_message_quotes_expected_and_got(parser, text, message):
    with pytest.raises(UnexpectedOutput) as caught:
        parser(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("netdetect addr: 29.1.0.1\n", "29.1.0.1"),  # driver source (tool_ops.c)
        ("netdetect address: 11.12.165.1\n", "11.12.165.1"),  # deployment guide's sample
    ],
)
def test_netdetect_both_spellings(text, expected):
    assert hccn.parse_netdetect(text) == {"netdetect": expected}
