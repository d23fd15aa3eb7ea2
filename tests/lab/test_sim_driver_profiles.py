"""Driver profiles: one node prints the older driver's forms, its neighbour the current ones.

Each behaviour is asserted in both profiles (the unlike variant), and the legacy text is fed
through ascendprep's own parsers, so the lab exercises the paths real old drivers take.
"""

from __future__ import annotations

import re

import pytest

from ascendprep.facts import hccn, npu_smi
from ascendprep.lab.sim import state

ASCTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}"


@pytest.fixture
def mixed(make_lab):
    """node1 current driver, node2 legacy driver, Atlas A2."""
    return make_lab(driver_profiles={"node2": "legacy"})


def test_ip_get_without_ip(mixed):
    current = mixed.hccn("node1", "-i", "2", "-ip", "-g")
    legacy = mixed.hccn("node2", "-i", "2", "-ip", "-g")
    assert (current.returncode, current.stdout) == (13, "")
    assert (legacy.returncode, legacy.stdout, legacy.stderr) == (0, "", "")
    assert hccn.parse_ip(legacy.stdout) == {"ip": None, "netmask": None}


def test_net_health_of_a_port_that_cannot_send(mixed):
    for node in ("node1", "node2"):
        mixed.set_ip(node, 0, "10.20.0.1" if node == "node1" else "10.20.0.2")
        state.set_fault(mixed.state_dir, node, "link-down", npu=0)
    assert mixed.ok("node1", "-i", "0", "-net_health", "-g") == "net health status: Fault\n"
    legacy = mixed.ok("node2", "-i", "0", "-net_health", "-g")
    assert legacy == "net health status: Socket failed\n"
    assert hccn.parse_net_health(legacy) == {"net_health": "Socket fail"}


def test_link_stat_prefix_and_down_count(mixed):
    current = mixed.ok("node1", "-i", "1", "-link_stat", "-g").splitlines()
    legacy = mixed.ok("node2", "-i", "1", "-link_stat", "-g").splitlines()
    assert current[2] == "[devid 1]link down count     : 0"
    assert [line[:10] for line in legacy] == ["[device 1]"] * len(legacy)
    assert not any("link down count" in line for line in legacy)
    assert re.fullmatch(rf"\[device 1\]    {ASCTIME}    LINK UP", legacy[-1])
    fact = hccn.parse_link_stat("\n".join(legacy))["link_stat"]
    assert (fact.up_count, fact.down_count, [r.state for r in fact.records]) == (1, None, ["UP"])


def test_tls_layout(mixed):
    current = mixed.ok("node1", "-i", "0", "-tls", "-g").splitlines()
    legacy = mixed.ok("node2", "-i", "0", "-tls", "-g").splitlines()
    assert "tls preconfigured[1]" in current[0] and current[2].startswith("\t subject[")
    assert legacy[0] == "dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days"
    assert [line for line in legacy if line.startswith("dev_id:0, [")] == [
        "dev_id:0, [pub cert] info:",
        "dev_id:0, [ca1 cert] info:",
        "dev_id:0, [ca2 cert] info:",
    ]
    assert legacy[2] == "         issuer[/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA]"
    assert re.fullmatch(rf" {{9}}start_time\[{ASCTIME} GMT\]", legacy[3])
    assert not any("subject" in line or "expiration" in line for line in legacy)
    assert hccn.parse_tls("\n".join(legacy))["tls"].preconfigured is None


def test_stat_short_form(mixed):
    assert len(mixed.ok("node1", "-i", "0", "-stat", "-g").splitlines()) > 40
    assert (
        mixed.ok("node2", "-i", "0", "-stat", "-g")
        == "packet statistics:\nroce_rx_err_pkt_num:1\nroce_tx_err_pkt_num:0\n"
    )  # 1: since boot (lab/sim/counters.py)


def test_speed_not_supported_on_the_old_driver(mixed):
    assert mixed.ok("node1", "-i", "0", "-speed", "-g") == "Speed: 200000 Mb/s\n"
    legacy = mixed.hccn("node2", "-i", "0", "-speed", "-g")
    assert (legacy.returncode, legacy.stdout, legacy.stderr) == (
        13,
        "The command is not supported on this product.\n",
        "",
    )


def test_lldp_without_system_name(mixed):
    current = mixed.ok("node1", "-i", "2", "-lldp", "-g").splitlines()
    legacy = mixed.ok("node2", "-i", "2", "-lldp", "-g").splitlines()
    assert "System Name TLV" in current and "System Name TLV" not in legacy
    description = legacy.index("System Description TLV")
    assert legacy[description + 1 : description + 5] == [
        "\tascendprep lab simulated switch",
        "\tSoftware Version: lab-sim 1.0",
        "\tCopyright (C) ascendprep lab.",
        "\tAll rights reserved.",
    ]
    neighbour = hccn.parse_lldp("\n".join(legacy))["lldp"]
    assert (neighbour.system_name, neighbour.port_ifname) == (None, "200GE1/0/2")


@pytest.mark.parametrize(
    "args, current, legacy",
    [
        (
            ("info", "-t", "health", "-i", "9"),
            "Invalid NPU ID: 9. Run [npu-smi info -l] to query the valid NPU IDs.\n",
            "Invalid card id.\n",
        ),
        (
            ("info", "-t", "health", "-i", "0", "-c", "1"),
            "Invalid chip ID: 1. NPU 0 has 1 chip(s).\n",
            "Invalid chip id.\n",
        ),
    ],
)
def test_npu_smi_invalid_ids(mixed, args, current, legacy):
    assert (mixed.npu_smi("node1", *args).returncode, mixed.npu_smi("node1", *args).stderr) == (1, current)
    assert (mixed.npu_smi("node2", *args).returncode, mixed.npu_smi("node2", *args).stderr) == (1, legacy)


def test_npu_smi_non_numeric_id_prints_the_usage_on_the_old_driver(mixed):
    result = mixed.npu_smi("node2", "info", "-t", "health", "-i", "x")
    lines = result.stderr.splitlines()
    assert result.returncode == 1
    assert lines[:2] == ["Error parameter of -i", "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]"]
    assert "       -i %d          Card ID" in lines
    assert mixed.npu_smi("node1", "info", "-t", "health", "-i", "x").stderr.startswith("Invalid NPU ID: x.")


def test_alarm_codes_and_continued_information(mixed):
    for node in ("node1", "node2"):
        state.set_fault(mixed.state_dir, node, "npu-alarm", npu=3)
    current = npu_smi.parse_health(mixed.npu_smi("node1", "info", "-t", "health", "-i", "3", "-c", "0").stdout)
    legacy_text = mixed.npu_smi("node2", "info", "-t", "health", "-i", "3", "-c", "0").stdout
    assert current[:2] == ("Alarm", "80E18402")
    assert (
        legacy_text.splitlines()[3]
        == "\t"
        + " " * 31
        + ": node type=SoC, sensor type=General, event state=major alarm (ascendprep lab fault npu-alarm)"
    )
    health, codes, information = npu_smi.parse_health(legacy_text)
    assert (health, codes) == ("Alarm", "A4025021 8C03A000 8C084E00")
    assert information.split("; ") == [
        "node type=DEVICE, sensor type=Heartbeat, event state=adda heartbeat lost",
        "node type=SoC, sensor type=General, event state=major alarm (ascendprep lab fault npu-alarm)",
        "node type=DEVICE, sensor type=Heartbeat, event state=lost",
    ]


def test_first_generation_910_name(make_lab):
    lab = make_lab(product="atlas-800", driver_profiles={"node2": "legacy"})
    assert "910A" in lab.npu_smi("node1", "info").stdout.splitlines()[6]
    assert "910B " in lab.npu_smi("node2", "info").stdout.splitlines()[6]
    board = lab.npu_smi("node2", "info", "-t", "board", "-i", "0", "-c", "0").stdout
    assert "\tChip Name                      : 910B\n" in board


def test_unknown_profile_is_refused_and_a_kept_node_follows_a_profile_change(make_lab):
    lab = make_lab()
    bad = {**lab.lab, "nodes": [{**lab.lab["nodes"][0], "driver_profile": "ancient"}]}
    with pytest.raises(
        state.LabStateError,
        match=r"lab.nodes\[0\].driver_profile: unknown driver profile 'ancient' \(known: current, legacy\)",
    ):
        state.validate_lab(bad)
    assert lab.doc("node1")["driver_profile"] == "current"
    lab.set_ip("node1", 0, "10.20.0.1")
    changed = {**lab.lab, "nodes": [{**lab.lab["nodes"][0], "driver_profile": "legacy"}, lab.lab["nodes"][1]]}
    state.init_state(lab.state_dir, changed)
    doc = lab.doc("node1")
    assert doc["driver_profile"] == "legacy" and doc["devices"][0]["ip"] == "10.20.0.1"


# npu-smi 26.0.rc1 on a 910B4 (Triton-Ascend FAQ "How to confirm chip type") and on an A3 (public test data).
WIDE_RULE = "+------------------------------------------------------------------------------------------------------------------+"
WIDE_COLUMNS = "+---------------------------+---------------+----------------------------------------------------------------------+"
WIDE_HEADER_A = "| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |"
WIDE_HEADER_B = "| Chip                      | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |"
WIDE_HEADER_B_A3 = "| Chip  Phy-ID              | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |"
WIDE_DOUBLE = "+===========================+===============+======================================================================+"
WIDE_PROCESS = "| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |"
WIDE_ROW_A = "| 0     910B4               | OK            | 82.6                 32                      0    / 0                |"
WIDE_ROW_B = "| 0                         | 0000:C1:00.0  | 0                    0    / 0                2871 / 32768            |"


def _columns(line: str) -> list[int]:
    return [len(part) for part in line.split("|")]


def _with_driver(lab, node: str, driver: str) -> None:
    from ascendprep.lab.sim import cann

    cann.install_cann_tree(lab.root(node), {**cann.DEFAULT_VERSIONS, "driver": driver}, "x86_64")


def test_npu_smi_26_prints_the_wide_table(make_lab):
    lab = make_lab(nodes=("node1", "node2"))
    _with_driver(lab, "node2", "26.0.rc1")
    narrow = lab.npu_smi("node1", "info").stdout.splitlines()
    wide = lab.npu_smi("node2", "info").stdout.splitlines()
    assert {len(line) for line in narrow} == {98}
    assert {len(line) for line in wide} == {116}
    assert wide[0] == WIDE_RULE
    assert (
        wide[1]
        == "| npu-smi 26.0.rc1                            Version: 26.0.rc1                                                    |"
    )
    assert wide[2:6] == [WIDE_COLUMNS, WIDE_HEADER_A, WIDE_HEADER_B, WIDE_DOUBLE]
    assert _columns(wide[6]) == _columns(WIDE_ROW_A) and _columns(wide[7]) == _columns(WIDE_ROW_B)
    assert wide[7].startswith(
        "| 0                         | 0000:C1:00.0  | 0                    0    / 0                "
    )
    assert WIDE_PROCESS in wide
    real = "| No running processes found in NPU 5                                                                              |"
    assert real.replace("NPU 5", "NPU 7") in wide


def test_npu_smi_26_a3_rows(make_lab):
    lab = make_lab(product="atlas-a3", nodes=("node1",), npus=16)
    _with_driver(lab, "node1", "26.0.rc1")
    wide = lab.npu_smi("node1", "info").stdout.splitlines()
    assert wide[4] == WIDE_HEADER_B_A3
    assert wide[6].startswith("| 0     Ascend910           | OK            | ")
    assert wide[7].startswith("| 0     0                   | 0000:9D:00.0  | ")
    assert wide[8] == WIDE_RULE
    assert wide[9].startswith("| 0     Ascend910           | OK            | -                    ")
    assert wide[10].startswith("| 1     1                   | 0000:9F:00.0  | ")


@pytest.mark.parametrize(
    "chip, hbm", [("910B1", 65536), ("910B2", 65536), ("910B2C", 65536), ("910B4", 32768), ("910B4-1", 65536)]
)
def test_chip_name_and_its_hbm(make_lab, chip, hbm):
    lab = make_lab(nodes=("node1",))
    lab.lab["nodes"][0]["chip"] = chip
    state.init_state(lab.state_dir, lab.lab)
    rows = lab.npu_smi("node1", "info").stdout.splitlines()[6:8]
    assert rows[0].startswith(f"| 0     {chip:<20}| OK ")
    assert f"/ {hbm} " in rows[1]
    assert (
        f"\tChip Name                      : {chip}\n"
        in lab.npu_smi("node1", "info", "-t", "board", "-i", "0", "-c", "0").stdout
    )
    default = make_lab(nodes=("node1",)).npu_smi("node1", "info").stdout.splitlines()[6]
    assert default.startswith("| 0     910B3               | OK ")


def test_unknown_chip_is_refused(make_lab):
    lab = make_lab(nodes=("node1",))
    bad = {**lab.lab, "nodes": [{**lab.lab["nodes"][0], "chip": "910C"}]}
    with pytest.raises(
        state.LabStateError, match=r"lab.nodes\[0\].chip: atlas-a2 chips are named 910B1, .* not '910C'"
    ):
        state.validate_lab(bad)


def test_no_lldp_neighbour(mixed):
    for node in ("node1", "node2"):
        state.set_fault(mixed.state_dir, node, "lldp-empty", npu=1)
    current = mixed.hccn("node1", "-i", "1", "-lldp", "-g")
    legacy = mixed.hccn("node2", "-i", "1", "-lldp", "-g")
    assert (current.returncode, current.stdout, current.stderr) == (0, "", "")
    assert (legacy.returncode, legacy.stdout, legacy.stderr) == (1, "", "Command execute failed!\n")
    assert hccn.not_configured("hccn.lldp", legacy.stdout + legacy.stderr) == {"lldp": None}


def test_lldp_on_a_link_that_is_down_says_so_on_every_driver(mixed):
    """The unlike case of test_no_lldp_neighbour: the link down, the query is refused with the
    driver's link-down error (exit 22), which the probe reads as such, not as "no neighbour"."""
    for node in ("node1", "node2"):
        state.set_fault(mixed.state_dir, node, "link-down", npu=1)
        answer = mixed.hccn(node, "-i", "1", "-lldp", "-g")
        assert (answer.returncode, answer.stdout, answer.stderr) == (22, "", "Execute failed: Link status is down.\n")
        assert hccn.not_configured("hccn.lldp", answer.stdout + answer.stderr) == {"lldp": None, "lldp_link_down": True}
        assert "Ifname:" in mixed.ok(node, "-i", "0", "-lldp", "-g")  # its other ports still answer


def test_a3_bus_ids_are_the_published_ones(make_lab):
    lab = make_lab(product="atlas-a3", nodes=("node1",), npus=16)
    rows = [line for line in lab.npu_smi("node1", "info").stdout.splitlines() if "0000:" in line]
    buses = [row.split("|")[2].strip() for row in rows]
    assert buses == [
        f"0000:{b}:00.0"
        for b in ("9D", "9F", "99", "9B", "95", "97", "91", "93", "8D", "8F", "89", "8B", "85", "87", "81", "83")
    ]


def test_npu_smi_dcmi_fault_fails_every_call_and_only_on_that_node(mixed):
    state.set_fault(mixed.state_dir, "node2", "npu-smi-dcmi")
    broken = mixed.npu_smi("node2", "info", "-l")
    assert (broken.returncode, broken.stdout) == (
        1,
        "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
        "dcmi model initialized failed, because the device is used. ret is -8020\n",
    )
    assert mixed.npu_smi("node1", "info", "-l").returncode == 0
    assert mixed.ok("node2", "-i", "0", "-link", "-g") == "link status: UP\n"  # hccn_tool is unaffected
    state.clear_faults(mixed.state_dir, "node2", "npu-smi-dcmi")
    assert mixed.npu_smi("node2", "info", "-l").returncode == 0
