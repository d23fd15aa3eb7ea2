"""Version files, /etc/hccn.conf, sysctl, os-release, firewalls: given this text, expect this fact."""

from __future__ import annotations

import pytest

from ascendprep.facts import VersionFile, Versions
from ascendprep.probes import firewall, hccn_conf, sysctl, system, versions
from ascendprep.probes.gather import parse_gather_output
from ascendprep.probes.text import UnexpectedOutput


@pytest.mark.parametrize(
    "name, version, extra",
    [
        ("versions/driver_version.info", "23.0.7", {"Innerversion": "V100R001C15SPC012B220", "compatible_version_fw": "[7.0.0,7.1.99]"}),
        ("versions/firmware_version.info", "7.1.0.11.220", {"package_version": "23.0.7"}),
        ("versions/ascend_toolkit_install.info", "7.0.T10", {"innerversion": "V100R001C13B222", "arch": "aarch64"}),
        ("versions/ascend_nnae_install.info", "8.0.RC2", {"package_name": "Ascend-cann-nnae"}),
        ("versions/cann_runtime_version.info", "9.0.0", {"version_dir": "9.0.0"}),
    ],
)
def test_version_files(fixture_text, name, version, extra):
    info = versions.parse_version_file("/x/" + name, fixture_text(name))
    assert info.version == version
    assert {key: info.values[key] for key in extra} == extra


def test_a_file_without_key_values_is_refused(fixture_text):
    with pytest.raises(UnexpectedOutput):
        versions.parse_version_file("/x", fixture_text("versions/garbage.info"))


def _info(path, version):
    return VersionFile(path=path, values={"Version": version})


@pytest.mark.parametrize(
    "found, expected",
    [
        ({"toolkit": _info("/h/ascend-toolkit/latest/x", "8.0.0"), "nnae": _info("/h/nnae/latest/y", "7.0.0")}, "8.0.0"),
        ({"nnae": _info("/h/nnae/latest/y", "7.0.0")}, "7.0.0"),
        ({"cann": (_info("/h/cann-8.5.0/share/info/runtime/version.info", "8.5.0"),)}, "8.5.0"),
        (
            {
                "cann": (
                    _info("/h/cann/share/info/runtime/version.info", "9.0.0"),
                    _info("/h/cann-8.5.0/share/info/runtime/version.info", "8.5.0"),
                )
            },
            "9.0.0",
        ),
        (
            {
                "cann": (
                    _info("/h/cann-8.5.0/share/info/runtime/version.info", "8.5.0"),
                    _info("/h/cann-9.0.0/share/info/runtime/version.info", "9.0.0"),
                )
            },
            None,
        ),
        ({}, None),
    ],
)
def test_which_cann_counts(found, expected):
    assert Versions(**found).cann_version == expected


def test_hccn_conf_reference_sample(fixture_text):
    conf = hccn_conf.parse_hccn_conf(fixture_text("hccn_conf/blog_l3.conf"))
    assert conf.devices == {
        0: {
            "address": "29.1.137.205",
            "netmask": "255.255.0.0",
            "netdetect": "29.1.0.1",
            "gateway": "29.1.0.1",
            "send_arp_status": "1",
        }
    }
    assert conf.raw == fixture_text("hccn_conf/blog_l3.conf")


def test_hccn_conf_eight_npus(fixture_text):
    conf = hccn_conf.parse_hccn_conf(fixture_text("hccn_conf/atlas800_8npu.conf"))
    assert sorted(conf.devices) == list(range(8))
    assert conf.get(4, "address") == "192.168.100.100"
    assert conf.get(7, "tls_enable") == "0"
    assert conf.get(8, "address") is None


def test_hccn_conf_hand_edits_are_visible(fixture_text):
    conf = hccn_conf.parse_hccn_conf(fixture_text("hccn_conf/hand_edited.conf"))
    assert conf.get(0, "address") == "10.20.0.11"  # the later line wins
    assert conf.duplicates == ("address_0",)
    assert conf.get(0, "route_address_10.30.0.0_netmask_255.255.0.0") == "10.20.0.1"
    assert conf.get(12, "mtu") == "9000"
    assert conf.other_lines == ("some garbage line",)


def test_sysctl_file_syntax(fixture_text):
    parsed = sysctl.parse_sysctl_conf(fixture_text("system/sysctl_ascendprep.conf"))
    assert parsed.values == {
        "net.core.somaxconn": "65535",
        "net.ipv4.tcp_max_syn_backlog": "65535",
        "net.ipv4.ip_local_reserved_ports": "60000-60015",
    }


@pytest.mark.parametrize("text, value", [("4096\n", "4096"), ("\n", ""), ("60000-60015,\t61000\n", "60000-60015, 61000")])
def test_proc_values(text, value):
    assert sysctl.parse_proc_value(text) == value


@pytest.mark.parametrize(
    "name, expected",
    [
        ("system/os_release_debian12.txt", {"ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"}),
        ("system/os_release_openeuler.txt", {"ID": "openEuler", "VERSION_ID": "22.03", "VERSION": "22.03 (LTS-SP1)"}),
    ],
)
def test_os_release(fixture_text, name, expected):
    values = system.parse_os_release(fixture_text(name))
    assert {key: values[key] for key in expected} == expected


def test_firewall_parsers(fixture_text):
    assert firewall.parse_ufw_status(fixture_text("firewall/ufw_active.out")) is True
    assert firewall.parse_ufw_status(fixture_text("firewall/ufw_inactive.out")) is False
    assert firewall.parse_firewalld_state(fixture_text("firewall/firewalld_running.out")) is True
    assert firewall.parse_firewalld_state(fixture_text("firewall/firewalld_not_running.out")) is False
    assert firewall.parse_nft_tables(fixture_text("firewall/nft_tables.out")) == ("inet filter", "ip nat")
    assert firewall.parse_nft_tables(fixture_text("firewall/nft_tables_empty.out")) == ()


def test_firewall_facts_in_gather(fixture_text, transcript):
    text = transcript(
        "gather",
        [
            {"name": "firewall.ufw", "rc": 1, "stderr": fixture_text("firewall/ufw_not_root.err")},
            {"name": "firewall.firewalld", "rc": 252, "stdout": fixture_text("firewall/firewalld_not_running.out")},
            {"name": "firewall.nftables", "rc": 127, "stderr": "nft: not installed\n"},
        ],
    )
    facts = parse_gather_output(text)
    assert facts.to_dict()["firewall"] == {
        "ufw": {"installed": True, "active": None, "detail": None},
        "firewalld": {"installed": True, "active": False, "detail": None},
        "nftables": {"installed": False, "active": None, "detail": None},
    }
    assert not facts.firewall.any_active
    (error,) = facts.errors
    assert (error.probe, error.kind) == ("firewall.ufw", "error")
    assert "You need to be root" in error.message


def test_files_absent_are_facts_not_errors(transcript):
    missing = {"rc": 1, "stderr": "cat: x: No such file or directory\n"}
    text = transcript(
        "gather",
        [
            {"name": "settings", "stdout": "ascend_home=/opt/Ascend\n"},
            {"name": "file.hccn_conf", **missing},
            {"name": "file.sysctl", **missing},
            {"name": "managed", "attrs": {"path": "/etc/ascendprep/env.sh"}, "rc": 1, "stderr": "sha256sum: /etc/ascendprep/env.sh: No such file or directory\n"},
            {"name": "managed", "attrs": {"path": "/etc/ascendprep/rank_table.json"}, "stdout": "a" * 64 + "  /etc/ascendprep/rank_table.json\n"},
            {"name": "managed", "attrs": {"path": "/etc/ascendprep/set_env.sh"}, "rc": 1, "stderr": "sha256sum: /etc/ascendprep/set_env.sh: Permission denied\n"},
            {"name": "version.driver", "attrs": {"file": "driver/version.info"}, **missing},
            {"name": "version.firmware", "attrs": {"file": "firmware/version.info"}, "stdout": "Version=7.1.0.11.220\n"},
        ],
    )
    facts = parse_gather_output(text)
    assert facts.hccn_conf is None and facts.sysctl_file is None
    assert facts.managed_files["/etc/ascendprep/env.sh"].exists is False
    assert facts.managed_files["/etc/ascendprep/rank_table.json"].sha256 == "a" * 64
    assert "/etc/ascendprep/set_env.sh" not in facts.managed_files
    assert facts.versions.driver is None
    assert facts.versions.firmware.path == "/opt/Ascend/firmware/version.info"
    assert facts.versions.firmware_version == "7.1.0.11.220"
    (error,) = facts.errors  # only the unreadable managed file is a failure
    assert (error.probe, error.kind) == ("file:/etc/ascendprep/set_env.sh", "error")
