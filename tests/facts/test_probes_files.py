"""Version files, /etc/hccn.conf, sysctl, os-release, firewalls: given this text, expect this fact."""

from __future__ import annotations

import pytest

from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.model import VersionFile, Versions


def _info(path, version):
    return VersionFile(path=path, values={"Version": version})


@pytest.mark.parametrize(
    "found, expected",
    [
        (
            {"toolkit": _info("/h/ascend-toolkit/latest/x", "8.0.0"), "nnae": _info("/h/nnae/latest/y", "7.0.0")},
            "8.0.0",
        ),
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
        # an Ascend home below a directory named "cann": the cann/ vs cann-<ver> directory still decides
        (
            {
                "cann": (
                    _info("/opt/cann/Ascend/cann/share/info/runtime/version.info", "9.0.0"),
                    _info("/opt/cann/Ascend/cann-8.5.0/share/info/runtime/version.info", "8.5.0"),
                )
            },
            "9.0.0",
        ),
        (
            {
                "cann": (
                    _info("/opt/cann/Ascend/cann-8.5.0/share/info/runtime/version.info", "8.5.0"),
                    _info("/opt/cann/Ascend/cann-9.0.0/share/info/runtime/version.info", "9.0.0"),
                )
            },
            None,
        ),
        ({}, None),
    ],
)
def test_which_cann_counts(found, expected):
    assert Versions(**found).cann_version == expected


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
            {
                "name": "managed",
                "attrs": {"path": "/etc/ascendprep/env.sh"},
                "rc": 1,
                "stderr": "sha256sum: /etc/ascendprep/env.sh: No such file or directory\n",
            },
            {
                "name": "managed",
                "attrs": {"path": "/etc/ascendprep/rank_table.json"},
                "stdout": "a" * 64 + "  /etc/ascendprep/rank_table.json\n",
            },
            {
                "name": "managed",
                "attrs": {"path": "/etc/ascendprep/set_env.sh"},
                "rc": 1,
                "stderr": "sha256sum: /etc/ascendprep/set_env.sh: Permission denied\n",
            },
            {"name": "version.driver", "attrs": {"file": "driver/version.info"}, **missing},
            {
                "name": "version.firmware",
                "attrs": {"file": "firmware/version.info"},
                "stdout": "Version=7.1.0.11.220\n",
            },
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
