"""A running lab, reached the way ascendprep reaches real servers: over SSH, host keys checked."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from ascendprep.cli import main
from ascendprep.lab.lab import Lab
from ascendprep.lab.testing import ssh

pytestmark = pytest.mark.lab


def test_hccn_tool_answers_on_every_node(lab):
    for node in lab.nodes:
        result = ssh(lab, node.name, "hccn_tool -i 0 -ip -g")
        # A fresh device has no IP: exit 13 and the driver's message on stderr (ascend-reference §1.2).
        assert result.returncode == 13, (node.name, result.stderr)
        assert result.stdout == ""
        assert "Get ipconf failed, because no ip was preset there!" in result.stderr


def test_npu_smi_info_prints_the_device_table_on_every_node(lab):
    for node in lab.nodes:
        result = ssh(lab, node.name, "npu-smi info")
        assert result.returncode == 0, result.stderr
        assert "npu-smi 24.1.rc2" in result.stdout
        assert result.stdout.count("910B3") == node.npus


def test_each_node_knows_who_it_is(lab):
    for node in lab.nodes:
        result = ssh(lab, node.name, "hostname; cat /etc/ascendprep-lab/node.json")
        hostname, identity = result.stdout.split("\n", 1)
        assert hostname == node.name
        assert json.loads(identity) == {
            "lab": lab.name,
            "node": node.name,
            "state_dir": str(lab.state_dir),
            "hccn_conf": "/etc/hccn.conf",
        }


def test_a_file_written_in_node1_etc_is_seen_nowhere_else(lab):
    path = f"/etc/ascendprep-isolation-{uuid.uuid4().hex}"
    written = ssh(lab, "node1", f"echo node1 > {path} && cat {path}")
    try:
        assert written.stdout == "node1\n"
        assert ssh(lab, "node2", f"test -e {path}").returncode == 1
        assert not Path(path).exists()
    finally:
        ssh(lab, "node1", f"rm -f {path}")


@pytest.mark.parametrize(
    "private, sees_host_files",
    [("/root", False), ("/home", False), ("/tmp", False), ("/var/tmp", False), ("/opt", True)],  # /opt: an overlay
)
def test_a_node_writes_its_own_private_dirs_never_the_hosts(lab, private, sees_host_files):
    if not Path(private).is_dir():
        pytest.skip(f"this host has no {private}")
    name = f"ascendprep-guest-{uuid.uuid4().hex}"
    on_host = Path(private) / f"{name}-host"
    on_host.write_text("host\n")
    try:
        written = ssh(
            lab, "node1", f"echo node1 > {private}/{name} && cat {private}/{name}; test -e {on_host}; echo $?"
        )
        assert written.stdout.splitlines() == ["node1", "0" if sees_host_files else "1"], written.stderr
        assert not (Path(private) / name).exists()
        assert ssh(lab, "node2", f"test -e {private}/{name}").returncode == 1
    finally:
        on_host.unlink()
        ssh(lab, "node1", f"rm -f {private}/{name}")


def test_each_nodes_tmp_is_its_own_and_the_shared_folder_is_everyones(lab):
    """What a node leaves in /tmp (a sticky tmpfs, as on a server) no other node and not the host
    sees; the lab's shared folder is the same on the host and on every node."""
    name = f"ascendprep-guest-{uuid.uuid4().hex}"
    mode = ssh(lab, "node1", f"stat -c %a /tmp; echo node1 > /tmp/{name}; cat /tmp/{name}")
    assert mode.stdout.splitlines() == ["1777", "node1"], mode.stderr
    assert ssh(lab, "node2", f"test -e /tmp/{name}").returncode == 1
    assert not Path(f"/tmp/{name}").exists()
    shared = lab.shared_dir / name
    shared.write_text("host\n")
    try:
        written = ssh(lab, "node1", f"cat {shared} && echo node1 >> {shared}")
        assert written.stdout == "host\n", written.stderr
        assert ssh(lab, "node2", f"cat {shared}").stdout == "host\nnode1\n"
    finally:
        shared.unlink()
        ssh(lab, "node1", f"rm -f /tmp/{name}")


def test_a_nodes_authorized_keys_are_not_the_hosts(lab):
    host_keys = Path("/root/.ssh/authorized_keys")
    before = host_keys.read_bytes() if host_keys.exists() else None
    result = ssh(lab, "node1", "mkdir -p /root/.ssh && echo 'ssh-ed25519 AAAA node-only' >> /root/.ssh/authorized_keys")
    assert result.returncode == 0, result.stderr
    after = host_keys.read_bytes() if host_keys.exists() else None
    assert after == before


def test_nodes_run_the_interpreter_that_brought_the_lab_up_venv_kept(lab):
    """A venv's bin/python is a symlink: resolving it would drop the venv and its packages."""
    import sys

    assert lab.python.executable == os.path.abspath(sys.executable)
    probe = "import sys, ascendprep; print(sys.prefix)"
    result = ssh(lab, "node2", f"{lab.python.executable} -c '{probe}'")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == sys.prefix
    for kept in lab.python.runtime_dirs:
        if any(
            kept != root and root in kept.parents
            for root in (Path("/root"), Path("/home"), Path("/tmp"), Path("/var/tmp"))
        ):
            refused = ssh(lab, "node2", f"touch {kept}/ascendprep-guest-write")
            assert refused.returncode != 0 and "Read-only file system" in refused.stderr


def test_nodes_reach_each_other_over_the_management_network(lab):
    peer = lab.node("node2").mgmt_ip
    probe = f"import socket; s = socket.create_connection(('{peer}', 22), 5); print(s.recv(7).decode())"
    result = ssh(lab, "node1", f'{lab.python.executable} -c "{probe}"')
    assert result.stdout.strip() == "SSH-2.0"


def test_nodes_have_the_lab_versions_installed(lab):
    query = (
        f"grep '^Version=' /usr/local/Ascend/driver/version.info; "
        f"{lab.python.executable} -c 'import importlib.metadata as m; print(m.version(\"torch_npu\"))'"
    )
    result = ssh(lab, "node3", query)
    assert result.stdout.splitlines() == [f"Version={lab.spec.versions.driver}", lab.spec.versions.torch_npu]


def test_status_json_lists_nodes_files_and_faults(lab):
    result = CliRunner().invoke(main, ["lab", "status", "--name", lab.name, "--format", "json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["schema_version"] == 1
    assert [(n["name"], n["mgmt_ip"], n["sshd_running"]) for n in status["nodes"]] == [
        (n.name, n.mgmt_ip, True) for n in lab.nodes
    ]
    assert Path(status["inventory"]).is_file()
    assert Path(status["key"]) == lab.key_path
    assert Path(status["known_hosts"]) == lab.known_hosts_path
    assert Path(status["shared_dir"]) == lab.shared_dir and lab.shared_dir.is_dir()
    assert status["faults"] == []


def test_a_second_up_changes_nothing(lab):
    sshd_before = [lab.sshd_process(n.name) for n in lab.nodes]
    inventory_mtime = lab.inventory_path.stat().st_mtime_ns
    again = Lab.up(lab.spec)
    assert again.created is False
    assert [lab.sshd_process(n.name) for n in lab.nodes] == sshd_before
    assert lab.inventory_path.stat().st_mtime_ns == inventory_mtime

    args = ["lab", "up", "--name", lab.name, "--nodes", str(len(lab.nodes)), "--subnet", lab.spec.subnet]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "already up" in result.output
    assert result.output.splitlines()[-1] == str(lab.inventory_path)


def test_up_with_other_settings_is_refused_and_the_lab_stays(lab):
    args = ["lab", "up", "--name", lab.name, "--nodes", str(len(lab.nodes) + 1), "--subnet", lab.spec.subnet]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert f"nodes: {len(lab.nodes)} → {len(lab.nodes) + 1}" in result.output
    assert ssh(lab, "node1", "true").returncode == 0
