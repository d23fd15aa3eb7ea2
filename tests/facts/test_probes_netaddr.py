"""Host NIC addresses and the hostname's resolution: parsers, and the gather's two sections run
for real under sh with fake ``ip``/``getent`` on PATH (the way /etc/hosts shapes them)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import InterfaceAddress
from ascendprep.facts.netaddr import interface_holding, is_loopback, parse_ip_addr

IP_ADDR = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever
2: eth0@if7    inet 10.231.0.11/24 brd 10.231.0.255 scope global eth0\\       valid_lft forever preferred_lft forever
2: eth0@if7    inet6 fe80::1/64 scope link \\       valid_lft forever preferred_lft forever
"""


def test_ip_addr_lines_become_interface_addresses():
    assert parse_ip_addr(IP_ADDR) == (
        InterfaceAddress("lo", "inet", "127.0.0.1", 8),
        InterfaceAddress("lo", "inet6", "::1", 128),
        InterfaceAddress("eth0", "inet", "10.231.0.11", 24),
        InterfaceAddress("eth0", "inet6", "fe80::1", 64),
    )


def test_the_interface_holding_an_address_is_never_loopback():
    addresses = parse_ip_addr(IP_ADDR)
    assert interface_holding("10.231.0.11", addresses) == "eth0"
    assert interface_holding("127.0.0.1", addresses) is None
    assert interface_holding("10.231.0.12", addresses) is None
    assert is_loopback("127.0.1.1") and is_loopback("::1") and not is_loopback("10.0.0.1")


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(
    "getent, expected, error",
    [
        ("printf '10.231.0.11     STREAM node1\\n10.231.0.11     DGRAM\\n'", ("10.231.0.11",), None),
        ("printf '127.0.1.1       STREAM node1\\n'", ("127.0.1.1",), None),
        ("exit 2", (), None),  # getent: not found -- the fact "does not resolve", not an error
        ("echo 'getent: broken' >&2; exit 1", None, "exited with status 1"),
    ],
)
def test_the_gather_reads_interfaces_and_the_hostname_resolution(tmp_path, getent, expected, error):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "ip", f"cat <<'EOF'\n{IP_ADDR}EOF\n")
    _fake(bin_dir, "getent", f'[ "$1" = ahosts ] && [ "$2" = "$(uname -n)" ] || exit 9\n{getent}\n')
    done = run_node_script(
        ["sh", "-s"],
        input=render_gather_script(0, "/bin/true"),
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        timeout=60,
    )
    facts = parse_gather_output(done.stdout)
    assert [a.ifname for a in facts.addresses] == ["lo", "lo", "eth0", "eth0"]
    assert facts.hostname_addresses == expected
    errors = facts.errors_for("hostname.resolve")
    if error is None:
        assert errors == ()
    else:
        assert len(errors) == 1 and error in errors[0].message
