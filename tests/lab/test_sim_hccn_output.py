"""Simulated hccn_tool output, exit codes and stream split against ascend-reference §1.2/§1.4."""

from __future__ import annotations

import re

import pytest

# asctime(): "Wed Jun  7 10:08:28 2023"
ASCTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}"


def test_ip_get_prints_two_lines_without_spaces(lab):
    lab.set_ip("node1", 0, "192.168.100.101")
    result = lab.hccn("node1", "-i", "0", "-ip", "-g")
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ipaddr:192.168.100.101\nnetmask:255.255.255.0\n",
        "",
    )


def test_set_prints_success_on_stdout_only(lab):
    result = lab.hccn("node1", "-i", "3", "-ip", "-s", "netmask", "255.255.0.0", "address", "29.1.137.205")
    assert (result.returncode, result.stdout, result.stderr) == (0, "Cmd executed successfully!\n", "")
    assert lab.ok("node1", "-i", "3", "-ip", "-g") == "ipaddr:29.1.137.205\nnetmask:255.255.0.0\n"


def test_ip_get_unconfigured_is_rc13_on_stderr(lab):
    result = lab.hccn("node1", "-i", "2", "-ip", "-g")
    assert (result.returncode, result.stdout, result.stderr) == (
        13,
        "",
        "Get ipconf failed, because no ip was preset there!\n",
    )


@pytest.mark.parametrize(
    "args, rc, stderr",
    [
        (
            ("-i", "1", "-ip", "-s", "address", "10.20.0.10", "netmask", "255.255.255.0"),
            7,
            "The ip address configured is conflicted!\n",
        ),
        (
            ("-i", "1", "-ip", "-s", "address", "192.168.1.20", "netmask", "255.255.255.0"),
            7,
            "The ip address configured is conflicted!\n",
        ),
        (
            ("-i", "1", "-ip", "-s", "address", "10.20.0.300", "netmask", "255.255.255.0"),
            6,
            "The ip address you configured is invalid!\n",
        ),
        (
            ("-i", "1", "-ip", "-s", "address", "10.20.0.11", "netmask", "255.0.255.0"),
            6,
            "The ip address you configured is invalid!\n",
        ),
    ],
)
def test_ip_set_validation(lab, args, rc, stderr):
    lab.set_ip("node1", 0, "10.20.0.10")
    result = lab.hccn("node1", *args)
    assert (result.returncode, result.stdout, result.stderr) == (rc, "", stderr)


def test_conflict_is_checked_before_syntax(lab):
    """A conflicting address with a bad netmask reports the conflict (rc 7), as the real tool."""
    result = lab.hccn("node1", "-i", "1", "-ip", "-s", "address", "192.168.1.9", "netmask", "banana")
    assert result.returncode == 7


def test_wrong_argument_count_prints_usage_on_stdout(lab):
    result = lab.hccn("node1", "-i", "0", "-ip", "-s", "address", "10.0.0.1")
    assert result.returncode == 4
    assert result.stderr == "The total count of input parameters is wrong!\n"
    assert result.stdout.startswith("[ hccn_tool -i devid -ip ] needs the following parameters:\n")
    assert "       address %s       : set IPv4 ip address, such as x.x.x.x\n" in result.stdout
    assert result.stdout.endswith("\n\n")


def test_unknown_key_is_unknown_option_rc3(lab):
    result = lab.hccn("node1", "-i", "0", "-ip", "-s", "addr", "10.0.0.1", "netmask", "255.0.0.0")
    assert (result.returncode, result.stderr) == (3, "Get unknown option!\n")
    assert "needs the following parameters" in result.stdout


@pytest.mark.parametrize(
    "args, rc, stderr",
    [
        (("-i", "0", "-net_heath", "-g"), 3, "Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n"),
        (("-i", "8", "-ip", "-g"), 4, "Get invalid device id.\n"),
        (("-i", "x", "-ip", "-g"), 4, "Get invalid device id.\n"),
        (("-i", "100", "-ip", "-g"), 4, "Get invalid device id.\n"),
        (
            ("-x", "0", "-ip", "-g"),
            1,
            'Get invalid major cmd type. The valid major cmd type should be "-a" or "-i".\n'
            "Enter [ hccn_tool -h ] for more details.\n",
        ),
        ((), 2, "Get invalid major cmd number. Please check your input.\nEnter [ hccn_tool -h ] for more details.\n"),
        (("-a", "-ip", "-g"), 3, "Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n"),
    ],
)
def test_major_command_errors(lab, args, rc, stderr):
    result = lab.hccn("node1", *args)
    assert (result.returncode, result.stdout, result.stderr) == (rc, "", stderr)


def test_help_lists_commands(lab):
    result = lab.hccn("node1", "-h")
    assert result.returncode == 0 and result.stderr == ""
    assert "hccn_tool -i devid -net_health\n   [-g]        : get net health status\n\n" in result.stdout
    assert "hccn_tool -a  -cfg\n" in result.stdout
    assert "Cmd executed successfully!" not in result.stdout
    assert lab.hccn("node1", "--help").stdout == result.stdout


def test_netdetect_get_and_set(lab):
    assert lab.ok("node1", "-i", "0", "-netdetect", "-g") == "netdetect addr: 0.0.0.0\n"
    assert lab.ok("node1", "-i", "0", "-netdetect", "-s", "address", "29.1.0.1") == "Cmd executed successfully!\n"
    assert lab.ok("node1", "-i", "0", "-netdetect", "-g") == "netdetect addr: 29.1.0.1\n"
    broadcast = lab.hccn("node1", "-i", "0", "-netdetect", "-s", "address", "255.255.255.255")
    assert (broadcast.returncode, broadcast.stderr) == (37, "Can not config broadcast address!\n")


def test_net_health_argument_errors(lab):
    assert lab.hccn("node1", "-i", "0", "-net_health", "-g", "x").returncode == 4
    assert lab.hccn("node1", "-i", "0", "-net_health", "-s").returncode == 3


def test_gateway_rules_and_format(lab):
    no_ip = lab.hccn("node1", "-i", "3", "-gateway", "-s", "gateway", "29.1.0.1")
    assert (no_ip.returncode, no_ip.stderr) == (26, "Unable to configure gateway, because ip is not configured!\n")
    lab.set_ip("node1", 3, "29.1.137.205", "255.255.0.0")
    off = lab.hccn("node1", "-i", "3", "-gateway", "-s", "gateway", "29.2.0.1")
    assert (off.returncode, off.stderr) == (
        8,
        "The segment of configured gateway doesn't match that of the configured ip adress!\n",
    )
    missing = lab.hccn("node1", "-i", "3", "-gateway", "-g")
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        2,
        "",
        "Get gateway failed, because no gateway was preset there!\n",
    )
    lab.ok("node1", "-i", "3", "-gateway", "-s", "gateway", "29.1.0.1")
    assert lab.ok("node1", "-i", "3", "-gateway", "-g") == "default gateway:29.1.0.1, Iface:eth3\n"


def test_link_status_lines(lab):
    assert lab.ok("node1", "-i", "0", "-link", "-g") == "link status: UP\n"
    assert lab.ok("node1", "-i", "0", "-link", "-s", "down") == "Cmd executed successfully!\n"
    assert lab.ok("node1", "-i", "0", "-link", "-g") == "link status: DOWN\n"
    assert lab.hccn("node1", "-i", "0", "-link", "-s", "sideways").returncode == 3


def test_link_stat_records_newest_first(lab):
    lab.ok("node1", "-i", "0", "-link", "-s", "down")
    lab.ok("node1", "-i", "0", "-link", "-s", "up")
    lines = lab.ok("node1", "-i", "0", "-link_stat", "-g").splitlines()
    assert re.fullmatch(rf"\[devid 0\]current time        : {ASCTIME}", lines[0])
    assert lines[1:4] == [
        "[devid 0]link up count       : 2",
        "[devid 0]link down count     : 1",
        "[devid 0]link change records :",
    ]
    assert [line[-9:].strip() for line in lines[4:]] == ["LINK UP", "LINK DOWN", "LINK UP"]
    assert all(re.fullmatch(rf"\[devid 0\]    {ASCTIME}    LINK (UP|DOWN)", line) for line in lines[4:])


def test_link_stat_cleared_shows_na(lab):
    assert lab.ok("node1", "-i", "1", "-link_stat", "-c") == "Cmd executed successfully!\n"
    lines = lab.ok("node1", "-i", "1", "-link_stat", "-g").splitlines()
    assert lines[1:] == [
        "[devid 1]link up count       : 0",
        "[devid 1]link down count     : 0",
        "[devid 1]link change records : NA",
    ]


def test_atlas800_prints_legacy_forms(make_lab):
    lab = make_lab(product="atlas-800", nodes=("node1",))
    lines = lab.ok("node1", "-i", "0", "-link_stat", "-g").splitlines()
    assert not any("link down count" in line for line in lines)
    first = lab.ok("node1", "-i", "0", "-tls", "-g").splitlines()[0]
    assert first == "dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days"
    assert lab.ok("node1", "-i", "0", "-speed", "-g") == "Speed: 100000 Mb/s\n"


def test_tls_get_and_set(lab):
    lines = lab.ok("node1", "-i", "5", "-tls", "-g").splitlines()
    assert lines[0] == (
        "dev_id:5, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, "
        "1:preset), tls alarm time threshold[60]days"
    )
    assert lines[1] == "dev_id:5, [pub cert] info:"
    assert lines[2].startswith("\t subject[") and lines[3].startswith("\t issuer[/C=CN/O=Huawei/CN=")
    assert re.fullmatch(rf"\t start_time\[{ASCTIME} GMT\]", lines[4])
    assert lines[6] == "\t tls expiration status[0](0:normal, 1:near expiration, 2:has expired)"
    assert lab.ok("node1", "-i", "5", "-tls", "-s", "enable", "1") == "Cmd executed successfully!\n"
    assert "tls switch[1]" in lab.ok("node1", "-i", "5", "-tls", "-g")
    bad = lab.hccn("node1", "-i", "5", "-tls", "-s", "enable", "2")
    assert (bad.returncode, bad.stderr) == (16, "Get invalid enable value!\n")
    assert bad.stdout.startswith("[ hccn_tool -i devid -tls ] needs the following parameters:")


def test_speed_optical_stat_and_lldp(lab):
    assert lab.ok("node1", "-i", "0", "-speed", "-g") == "Speed: 200000 Mb/s\n"
    optical = lab.ok("node1", "-i", "0", "-optical", "-g").splitlines()
    assert optical[:2] == ["optical info:", "present              : present"]
    assert "Rx Los Flag          : 0x0" in optical
    stat = lab.ok("node1", "-i", "0", "-stat", "-g").splitlines()
    assert stat[0] == "packet statistics:" and stat[1] == "mac_tx_mac_pause_num:0"
    # counters run on with time (lab/sim/counters.py): the last line's value is not fixed
    assert stat[-1].startswith("nic_rx_all_oct_num:") and all(":" in line and " " not in line for line in stat[1:])
    lldp = lab.ok("node1", "-i", "2", "-lldp", "-g").splitlines()
    assert lldp[2:4] == ["Port ID TLV", "\tIfname: 200GE1/0/1"]
    assert lldp[4:6] == ["System Name TLV", "\tleaf-3"]
    assert lldp[-1] == "End of LLDPDU TLV"
    assert lab.hccn("node1", "-i", "2", "-lldp", "-s").returncode == 3


def test_ping_success_output(lab):
    lab.set_ip("node1", 3, "29.1.137.204", "255.255.0.0")
    lab.set_ip("node2", 3, "29.1.137.205", "255.255.0.0")
    result = lab.hccn("node1", "-i", "3", "-ping", "-g", "address", "29.1.137.205")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "device 3 PING 29.1.137.205"
    assert all(re.fullmatch(rf"recv seq={i},time=\d+\.\d{{6}}ms", lines[1 + i]) for i in range(3))
    assert lines[4] == "3 packets transmitted, 3 received, 0.00% packet loss"
    # the 3 echo frames are counted on top of the time-driven traffic (lab/sim/counters.py)
    assert lab.doc("node1")["devices"][3]["counters"]["nic_tx_all_pkg_num"] == 3
    assert "nic_tx_all_pkg_num:" in lab.ok("node1", "-i", "3", "-stat", "-g")


def test_ping_failure_output_and_streams(lab):
    lab.set_ip("node1", 3, "29.1.137.204", "255.255.0.0")
    result = lab.hccn("node1", "-i", "3", "-ping", "-g", "address", "29.1.137.99", "pkt", "1000")
    assert result.returncode == 1
    assert result.stdout == (
        "device 3 PING 29.1.137.99\nrecv time out seq=0\nrecv time out seq=1\n"
        "recv time out seq=2\n3 packets transmitted, 0 received, 100.00% packet loss\n"
    )
    assert result.stderr == "Command execute failed!\n"


def test_ping_argument_errors(lab):
    assert lab.hccn("node1", "-i", "0", "-ping", "-g").returncode == 4
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "1.2.3").returncode == 6
    assert lab.hccn("node1", "-i", "0", "-ping", "-g", "addr", "1.2.3.4").returncode == 3
    big = lab.hccn("node1", "-i", "0", "-ping", "-g", "address", "1.2.3.4", "pkt", "70000")
    assert (big.returncode, big.stderr) == (1, "Get invalid parameters!\n")


def test_cfg_recovery_without_conf_file(lab):
    result = lab.hccn("node1", "-i", "0", "-cfg", "recovery")
    assert result.returncode == 29
    assert result.stderr == (
        "The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.\n"
    )
    assert result.stdout == "Recovery failed. Check '/var/log/hccn_tool/hccn_config.log' for details.\n"


def test_cfg_status(lab):
    assert lab.ok("node1", "-i", "0", "-cfg", "status") == "config status:NONE\n"
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.ok("node1", "-i", "0", "-cfg", "recovery")
    assert lab.ok("node1", "-i", "0", "-cfg", "status") == "config status:SUCCESS\n"
