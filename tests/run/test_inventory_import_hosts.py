"""``inventory import --hosts``: the read-only gather per host, what it reads, and unreachable hosts."""

from __future__ import annotations

import re
from typing import Optional

import pytest

from ascendprep.adopt.compact import SshSettings, compact
from ascendprep.base.yamlsource import InputError
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import UnreachableError
from ascendprep.remote.result import ExecResult
from ascendprep.run.inventory_import import host_list, read_hosts


def transcript(nonce: str, sections: list[dict]) -> str:
    """What the gather script prints (tests/facts/conftest.py writes the same form)."""
    out = [f"@@ascendprep gather v2 {nonce}\n"]
    for section in sections:
        attrs = "".join(f" {k}={v}" for k, v in section.get("attrs", {}).items())
        out += [f"@@{nonce} begin {section['name']}{attrs}\n", section.get("stdout", ""), f"@@{nonce} stderr\n"]
        out.append(f"@@{nonce} end rc={section.get('rc', 0)} tries=1\n")
    return "".join(out) + f"@@{nonce} done\n"


class FakeHost:
    """A host whose two NPUs answer hccn_tool as the vendor reference prints it (tests/fixtures/probes)."""

    scripts: list[str] = []

    def __init__(self, name: str, base: int):
        self.name, self.base = name, base

    def exec_count(self) -> int:
        return len(self.scripts)

    def run_script(self, script: str, timeout: Optional[float] = None) -> ExecResult:
        self.scripts.append(script)
        nonce = re.search(r"@@ascendprep gather v\d+ ([0-9a-f]{16})", script).group(1)  # type: ignore[union-attr]
        sections = [{"name": "settings", "stdout": "timeout=10\n"}, {"name": "npus", "stdout": "0\n1\n"}]
        for npu in range(2):
            ip = f"10.20.0.{self.base + npu}"
            sections += [
                {"name": "hccn.ip", "attrs": {"npu": npu}, "stdout": f"ipaddr:{ip}\nnetmask:255.255.255.0\n"},
                {
                    "name": "hccn.gateway",
                    "attrs": {"npu": npu},
                    "stdout": f"default gateway:10.20.0.254, Iface:eth{npu}\n",
                },
                {"name": "hccn.netdetect", "attrs": {"npu": npu}, "stdout": "netdetect addr: 10.20.0.254\n"},
            ]
        return ExecResult(0, transcript(nonce, sections), "", 0.1)

    def close(self) -> None:
        pass


def factory(access: HostAccess) -> FakeHost:
    if access.name == "10.0.0.3":
        raise UnreachableError(access.name, "connection refused (port 22)")
    return FakeHost(access.name, {"10.0.0.1": 1, "10.0.0.2": 3}[access.name])


def test_every_reachable_host_is_read_and_the_unreachable_one_is_named() -> None:
    FakeHost.scripts = []
    seen = read_hosts(host_list("10.0.0.[1-3]"), "atlas-a2", SshSettings(), False, 2, factory)
    assert [n.name for n in seen.nodes] == ["10.0.0.1", "10.0.0.2"]
    assert seen.unreachable == {"10.0.0.3": "connection refused (port 22)"}
    assert seen.nodes[1].npus[1].ip == "10.20.0.4" and seen.nodes[1].npus[1].gateway == "10.20.0.254"
    # the gather reads what an inventory can say, not what verify reads: no port counters, no LLDP
    assert "-lldp" not in FakeHost.scripts[0] and "-stat" not in FakeHost.scripts[0]
    result = compact(seen, "atlas-a2")
    assert not result.complete and "# INCOMPLETE" in result.text
    assert 'host: "10.0.0.[1-2]"' in result.text and "device_ips" not in result.text


def test_a_host_list_file_has_comments_ranges_and_located_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "hosts"
    path.write_text("# the racks\nnode[01-02]  # rack 1\n\nnode03\n")
    assert host_list(str(path)) == ["node01", "node02", "node03"]
    path.write_text("node01\nnode;reboot\n")
    with pytest.raises(InputError, match=f"{path}:2:"):
        host_list(str(path))


def test_a_missing_host_file_is_not_taken_for_a_host_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="no such file"):
        host_list(str(tmp_path / "hosts.txt"))


def test_the_written_ssh_block_connects_as_the_import_did(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """--user/--key/--known-hosts given relative to the working folder end up in the inventory's
    ssh: block relative to the output file, so that plan of it opens the same sessions."""
    from pathlib import Path

    from ascendprep.inventory.load import load_inventory
    from ascendprep.run.hosts import host_accesses
    from ascendprep.run.inventory_import import run_import

    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_lab").write_text("not a real key\n")
    (tmp_path / "keys" / "known").write_text("")
    monkeypatch.chdir(tmp_path)
    seen: dict[str, HostAccess] = {}

    def recording(access: HostAccess) -> FakeHost:
        seen[access.name] = access
        return factory(access)

    output = Path("out") / "cluster" / "inventory.yaml"
    output.parent.mkdir(parents=True)
    ssh = SshSettings(user="ops", key="keys/id_lab", known_hosts="keys/known")
    code = run_import("10.0.0.[1-2]", ssh, None, None, "atlas-a2", output, forks=2, transport_factory=recording)
    assert code == 0
    text = output.read_text()
    assert 'key: "../../keys/id_lab"' in text and 'known_hosts: "../../keys/known"' in text and 'user: "ops"' in text
    inventory = load_inventory(output)
    planned = {a.name: a for a in host_accesses(inventory)}
    assert set(planned) == set(seen) == {"10.0.0.1", "10.0.0.2"}
    for name, access in seen.items():
        again = planned[name]
        assert (
            (again.user, again.address, again.port)
            == (access.user, access.address, access.port)
            == (
                "ops",
                name,
                22,
            )
        )
        assert Path(again.key_file).resolve() == Path(access.key_file).resolve() == tmp_path / "keys" / "id_lab"
        assert Path(again.known_hosts[0]).resolve() == Path(access.known_hosts[0]).resolve()


def test_without_o_relative_ssh_paths_are_written_absolute(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ascendprep.run.inventory_import import ssh_for_output

    monkeypatch.chdir(tmp_path)
    written = ssh_for_output(SshSettings(key="k/id", known_hosts="~/.ssh/known_hosts"), None)
    assert written.key == str(tmp_path / "k" / "id") and written.known_hosts == "~/.ssh/known_hosts"


def test_the_gather_reads_the_adopted_settings_only_when_asked() -> None:
    from ascendprep.run.inventory_import import import_gather_script

    plain = import_gather_script("0123456789abcdef")
    adopting = import_gather_script("0123456789abcdef", frozenset({"sysctl", "env", "firewall"}))
    for marker in ("/proc/sys/net/core/somaxconn", "/etc/ascendprep/env.sh", "ufw status", "firewall-cmd --state"):
        assert marker not in plain and marker in adopting
