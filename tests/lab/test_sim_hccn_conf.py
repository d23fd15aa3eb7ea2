"""``/etc/hccn.conf`` semantics: remove-then-append, gateway pruning, recovery, the stale fault."""

from __future__ import annotations

from ascendprep.lab.sim import hccnconf


def test_set_value_moves_key_to_end():
    text = "address_0=1.1.1.1\nnetmask_0=255.0.0.0\naddress_1=1.1.1.2\n"
    assert hccnconf.set_value(text, "address", 0, "1.1.1.9") == (
        "netmask_0=255.0.0.0\naddress_1=1.1.1.2\naddress_0=1.1.1.9\n"
    )


def test_set_value_keeps_other_devids_with_common_prefix():
    text = "address_1=1.1.1.1\naddress_10=1.1.1.10\n"
    assert hccnconf.set_value(text, "address", 1, "2.2.2.2") == "address_10=1.1.1.10\naddress_1=2.2.2.2\n"


def test_get_ignores_comments_and_short_lines():
    text = "# address_0=9.9.9.9\nx\naddress_0=1.2.3.4\n"
    assert hccnconf.get_value(text, "address", 0) == "1.2.3.4"
    assert hccnconf.get_value(text, "gateway", 0) is None
    assert hccnconf.entries(text) == [("address", 0, "1.2.3.4")]


def test_make_stale_changes_only_the_address_in_place():
    text = "address_0=10.20.0.10\nnetmask_0=255.255.255.0\naddress_1=10.20.0.11\n"
    stale = hccnconf.make_stale(text, 0)
    lines = stale.splitlines()
    assert lines[1:] == ["netmask_0=255.255.255.0", "address_1=10.20.0.11"]
    new = hccnconf.get_value(stale, "address", 0)
    assert new != "10.20.0.10" and new.startswith("10.20.0.")
    assert hccnconf.get_value(hccnconf.make_stale("", 4), "address", 4) == "192.0.2.5"


def test_sequence_of_sets_writes_file_in_modification_order(lab):
    lab.set_ip("node1", 0, "29.1.137.205", "255.255.0.0")
    lab.ok("node1", "-i", "0", "-netdetect", "-s", "address", "29.1.0.1")
    lab.ok("node1", "-i", "0", "-gateway", "-s", "gateway", "29.1.0.1")
    lab.set_ip("node1", 1, "29.1.137.206", "255.255.0.0")
    lab.ok("node1", "-i", "0", "-tls", "-s", "enable", "0")
    assert lab.conf("node1") == (
        "address_0=29.1.137.205\nnetmask_0=255.255.0.0\nnetdetect_0=29.1.0.1\ngateway_0=29.1.0.1\n"
        "address_1=29.1.137.206\nnetmask_1=255.255.0.0\ntls_enable_0=0\n"
    )
    # Re-setting the same address moves address/netmask to the end, the gateway stays.
    lab.set_ip("node1", 0, "29.1.137.210", "255.255.0.0")
    assert lab.conf("node1") == (
        "netdetect_0=29.1.0.1\ngateway_0=29.1.0.1\naddress_1=29.1.137.206\nnetmask_1=255.255.0.0\n"
        "tls_enable_0=0\naddress_0=29.1.137.210\nnetmask_0=255.255.0.0\n"
    )
    assert lab.ok("node1", "-i", "0", "-gateway", "-g") == "default gateway:29.1.0.1, Iface:eth0\n"


def test_moving_ip_off_subnet_drops_the_gateway(lab):
    lab.set_ip("node1", 2, "10.20.0.12")
    lab.ok("node1", "-i", "2", "-gateway", "-s", "gateway", "10.20.0.1")
    lab.set_ip("node1", 2, "10.30.0.12")
    assert lab.conf("node1") == "address_2=10.30.0.12\nnetmask_2=255.255.255.0\n"
    assert lab.hccn("node1", "-i", "2", "-gateway", "-g").returncode == 2


def test_failed_set_leaves_file_untouched(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    before = lab.conf("node1")
    taken = lab.hccn("node1", "-i", "1", "-ip", "-s", "address", "10.20.0.10", "netmask", "255.255.255.0")
    assert taken.returncode == 7
    assert lab.hccn("node1", "-i", "0", "-gateway", "-s", "gateway", "10.99.0.1").returncode == 8
    assert lab.conf("node1") == before


def test_first_tls_query_saves_the_switch(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.ok("node1", "-i", "0", "-tls", "-g")
    assert lab.conf("node1").endswith("tls_enable_0=0\n")
    lab.ok("node1", "-i", "0", "-tls", "-g")
    assert lab.conf("node1").count("tls_enable_0=") == 1


def test_recovery_reapplies_the_file(lab):
    lab.conf_path("node1").write_text(
        "address_0=10.20.0.10\nnetmask_0=255.255.255.0\nnetdetect_0=10.20.0.1\ngateway_0=10.20.0.1\n"
        "address_1=10.20.0.11\nnetmask_1=255.255.255.0\ntls_enable_1=1\n"
    )
    assert lab.ok("node1", "-a", "-cfg", "recovery") == "Cmd executed successfully!\n"
    assert lab.ok("node1", "-i", "0", "-ip", "-g") == "ipaddr:10.20.0.10\nnetmask:255.255.255.0\n"
    assert lab.ok("node1", "-i", "0", "-gateway", "-g") == "default gateway:10.20.0.1, Iface:eth0\n"
    assert lab.ok("node1", "-i", "0", "-netdetect", "-g") == "netdetect addr: 10.20.0.1\n"
    assert lab.ok("node1", "-i", "1", "-ip", "-g") == "ipaddr:10.20.0.11\nnetmask:255.255.255.0\n"
    assert "tls switch[1]" in lab.ok("node1", "-i", "1", "-tls", "-g")
    assert lab.hccn("node1", "-i", "2", "-ip", "-g").returncode == 13


def test_stale_file_reapplied_changes_the_live_ip(lab):
    lab.set_ip("node1", 0, "10.20.0.10")
    lab.conf_path("node1").write_text(hccnconf.make_stale(lab.conf("node1"), 0))
    stale = hccnconf.get_value(lab.conf("node1"), "address", 0)
    assert lab.ok("node1", "-i", "0", "-ip", "-g").startswith("ipaddr:10.20.0.10\n")
    lab.ok("node1", "-i", "0", "-cfg", "recovery")
    assert lab.ok("node1", "-i", "0", "-ip", "-g").startswith(f"ipaddr:{stale}\n")


def test_recovery_conflict_reports_failure(lab):
    lab.set_ip("node1", 1, "10.20.0.11")
    lab.conf_path("node1").write_text("address_0=10.20.0.11\nnetmask_0=255.255.255.0\n")
    result = lab.hccn("node1", "-i", "0", "-cfg", "recovery")
    assert result.returncode == 7
    assert result.stderr == "The ip address configured is conflicted!\n"
    assert lab.ok("node1", "-i", "0", "-cfg", "status") == "config status:FAIL\n"
