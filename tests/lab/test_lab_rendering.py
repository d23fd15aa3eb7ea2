"""What the lab writes and runs, checked without bringing a lab up."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
from labsupport import skip_or_fail

from ascendprep.inventory.load import inventory_from_text
from ascendprep.lab import hostsfile, nodefs, sshd
from ascendprep.lab.hostpython import HostPython
from ascendprep.lab.inventory_doc import render_inventory
from ascendprep.lab.journal import Journal
from ascendprep.lab.network import tbf_arguments
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec
from ascendprep.lab.system import LabError, missing_requirements

PYTHON = HostPython(
    executable="/usr/bin/python3.11",
    version="3.11",
    purelib=Path("/usr/lib/python3/dist-packages"),
    package_root=Path("/opt/ascendprep"),
    torch="2.13.0",
)


def _inventory(spec: LabSpec, tmp_path: Path):
    text = render_inventory(spec.validated(), PYTHON, key="id_ed25519", known_hosts="known_hosts")
    return inventory_from_text(text, base_dir=tmp_path)


def test_inventory_loads_with_every_node_and_relative_key_paths(tmp_path):
    inventory = _inventory(LabSpec(name="lab", nodes=4, subnet="10.231.0.0/24"), tmp_path)
    assert [(n.name, n.host, n.npus) for n in inventory.nodes] == [
        ("node1", "10.231.0.11", 8),
        ("node2", "10.231.0.12", 8),
        ("node3", "10.231.0.13", 8),
        ("node4", "10.231.0.14", 8),
    ]
    assert inventory.key_file == tmp_path / "id_ed25519"
    assert inventory.known_hosts == (tmp_path / "known_hosts",)
    model = inventory.model
    assert str(model.device_network.subnet) == "10.20.0.0/24"
    assert model.device_network.detect == "peer"
    assert model.firewall == "leave"
    assert (model.software.cann, model.software.driver, model.software.torch_npu) == ("8.0.RC3", "24.1.rc2", "2.13.0")
    assert model.software.python_path == "/usr/bin/python3.11"


def test_atlas_800_inventory_uses_the_four_conventional_subnets(tmp_path):
    inventory = _inventory(LabSpec(nodes=2, product="atlas-800"), tmp_path)
    assert [str(s) for s in inventory.model.device_network.subnets] == [
        "192.168.100.0/24",
        "192.168.101.0/24",
        "192.168.102.0/24",
        "192.168.103.0/24",
    ]


def test_one_node_inventory_needs_no_range(tmp_path):
    inventory = _inventory(LabSpec(nodes=1, subnet="10.231.9.0/24"), tmp_path)
    assert [(n.name, n.host) for n in inventory.nodes] == [("node1", "10.231.9.11")]


def test_sshd_config_allows_keys_only_and_many_sessions():
    config = sshd.render_sshd_config(
        listen_ip="10.231.0.11",
        host_key=Path("/run/x/hk"),
        authorized_keys=Path("/run/x/authorized_keys"),
        pid_file=Path("/run/x/sshd.pid"),
    )
    lines = set(config.splitlines())
    for expected in (
        "ListenAddress 10.231.0.11:22",
        "HostKey /run/x/hk",
        "AuthorizedKeysFile /run/x/authorized_keys",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "MaxStartups 100:30:200",
        "MaxSessions 50",
    ):
        assert expected in lines


def test_sshd_accepts_the_rendered_config(tmp_path):
    """sshd -t parses the config we write (catches a directive this OpenSSH does not know)."""
    if not Path(sshd.SSHD).exists():
        skip_or_fail("no sshd on this machine (apt-get install openssh-server)")
    key = tmp_path / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    config = tmp_path / "sshd_config"
    config.write_text(
        sshd.render_sshd_config(
            listen_ip="127.0.0.1", host_key=key, authorized_keys=tmp_path / "ak", pid_file=tmp_path / "pid"
        )
    )
    result = subprocess.run([sshd.SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ssh_argv_checks_host_keys_strictly_and_quotes_list_commands():
    argv = sshd.ssh_argv("10.0.0.1", key=Path("/k"), known_hosts=Path("/kh"), command=["echo", "a b;c"])
    assert argv[0] == "ssh"
    assert "StrictHostKeyChecking=yes" in argv
    assert "UserKnownHostsFile=/kh" in argv
    assert argv[argv.index("-i") + 1] == "/k"
    assert argv[-3:] == ["root@10.0.0.1", "--", "echo 'a b;c'"]


def test_known_hosts_has_one_line_per_node_address():
    text = sshd.render_known_hosts([("10.0.0.11", "ssh-ed25519 AAAA1"), ("10.0.0.12", "ssh-ed25519 AAAA2")])
    assert text == "10.0.0.11 ssh-ed25519 AAAA1\n10.0.0.12 ssh-ed25519 AAAA2\n"


def test_purelib_under_usr_local_or_opt_shares_its_overlay():
    opt = [Path("/opt")] if Path("/opt").is_dir() else []
    assert nodefs.overlay_targets(Path("/usr/local/lib/python3.11/dist-packages")) == [
        Path("/etc"),
        Path("/usr/local"),
        *opt,
    ]
    assert nodefs.overlay_targets(Path("/srv/py/lib/site-packages"))[-1] == Path("/srv/py/lib/site-packages")
    if opt:  # a venv in /opt: its site-packages is already inside the node's private /opt
        assert nodefs.overlay_targets(Path("/opt/venv/lib/site-packages")) == [
            Path("/etc"),
            Path("/usr/local"),
            Path("/opt"),
        ]


def test_interpreter_dirs_under_a_private_root_are_kept_outermost_first():
    private = [Path("/root"), Path("/home"), Path("/var/tmp")]
    runtime = [
        Path("/root/.pyenv/versions/3.11.7"),
        Path("/root/.pyenv/versions/3.11.7/bin"),  # inside the prefix: bound with it
        Path("/usr"),  # never hidden
        Path("/home/ci/src/ascendprep"),
        Path("/root"),  # a private root itself is not kept (that would share all of it)
    ]
    assert nodefs.kept_dirs(runtime, private) == [Path("/home/ci/src/ascendprep"), Path("/root/.pyenv/versions/3.11.7")]


def test_holder_script_mounts_each_overlay_and_quotes_values():
    spec = LabSpec(name="lab", nodes=2).validated()
    node = spec.node_list()[1]
    overlays = nodefs.node_overlays(LabPaths("lab"), node.name, Path("/srv/py/site-packages"))
    script = nodefs.holder_script(
        spec=spec, node=node, overlays=overlays, ip="/sbin/ip", mount="/bin/mount", sleep="/bin/sleep"
    )
    lines = script.splitlines()
    assert lines[0] == "set -eu"
    assert "/sbin/ip addr add 10.231.0.12/24 dev eth0" in lines
    overlay_mounts = [shlex.split(line) for line in lines if line.startswith("/bin/mount -t overlay")]
    opt = ["/opt"] if Path("/opt").is_dir() else []
    assert [m[-1] for m in overlay_mounts] == ["/etc", "/usr/local", *opt, "/srv/py/site-packages"]
    assert "mount -t tmpfs -o mode=1777,size=8m ascendprep-lab /run/lock" in script  # per-node apply lock
    if Path("/root").is_dir():
        assert "/bin/mount -t tmpfs -o mode=0700,size=256m ascendprep-lab /root" in lines
    mounts = overlay_mounts
    assert mounts[0][5] == (
        "lowerdir=/etc,upperdir=/run/ascendprep-lab/lab/nodes/node2/upper/etc,"
        "workdir=/run/ascendprep-lab/lab/nodes/node2/work/0"
    )
    assert "echo node2 > /proc/sys/kernel/hostname" in lines
    assert lines[-1] == "exec /bin/sleep infinity"


def test_holder_script_binds_kept_dirs_back_read_only_after_the_tmpfs():
    spec = LabSpec(name="lab", nodes=1).validated()
    node = spec.node_list()[0]
    script = nodefs.holder_script(
        spec=spec, node=node, overlays=[], ip="/sbin/ip", mount="/bin/mount", sleep="/bin/sleep",
        runtime_dirs=[Path("/root/src/my checkout")], stash=Path("/run/x/keep"),
    )  # fmt: skip
    lines = script.splitlines()
    if not Path("/root").is_dir():
        pytest.skip("this host has no /root to make private")
    stash = lines.index("/bin/mount --bind '/root/src/my checkout' /run/x/keep/0")
    tmpfs = lines.index("/bin/mount -t tmpfs -o mode=0700,size=256m ascendprep-lab /root")
    back = lines.index("/bin/mount --bind /run/x/keep/0 '/root/src/my checkout'")
    read_only = lines.index("/bin/mount -o remount,bind,ro '/root/src/my checkout'")
    assert stash < tmpfs < back < read_only
    assert lines[read_only + 1] == "umount /run/x/keep/0"


def test_each_node_gets_its_own_tmp_and_an_interpreter_there_is_bound_back_read_only():
    """A node's /tmp is a tmpfs of its own (sticky, as /tmp is); a venv or checkout under the
    host's /tmp stays reachable, read-only, and nothing else of the host's /tmp is."""
    if not Path("/tmp").is_dir() or Path("/tmp").is_symlink():
        pytest.skip("this host has no /tmp directory to make private")
    spec = LabSpec(name="lab", nodes=1).validated()
    script = nodefs.holder_script(
        spec=spec, node=spec.node_list()[0], overlays=[], ip="/sbin/ip", mount="/bin/mount", sleep="/bin/sleep",
        runtime_dirs=[Path("/tmp/venv"), Path("/tmp/venv/bin"), Path("/usr")], stash=Path("/run/x/keep"),
    )  # fmt: skip
    lines = script.splitlines()
    tmpfs = lines.index("/bin/mount -t tmpfs -o mode=1777,size=1g ascendprep-lab /tmp")
    assert lines.index("/bin/mount --bind /tmp/venv /run/x/keep/0") < tmpfs
    assert (
        tmpfs
        < lines.index("/bin/mount --bind /run/x/keep/0 /tmp/venv")
        < lines.index("/bin/mount -o remount,bind,ro /tmp/venv")
    )
    assert not [line for line in lines if "--bind" in line and "/tmp/venv/bin" in line]  # bound with its prefix
    assert Path("/tmp") in [path for path, _, _ in nodefs.private_dirs()]


def test_overlay_refuses_paths_that_would_break_mount_options():
    overlay = nodefs.Overlay(Path("/opt/a,b"), Path("/u"), Path("/w"))
    with pytest.raises(LabError, match="mount options"):
        overlay.mount_options()


def test_hosts_file_names_every_node():
    spec = LabSpec(nodes=2, subnet="10.231.3.0/24").validated()
    text = hostsfile.render_hosts(spec.node_list())
    assert "10.231.3.11\tnode1" in text.splitlines()
    assert "10.231.3.12\tnode2" in text.splitlines()


@pytest.mark.skipif(os.geteuid() != 0, reason="whiteouts (char 0/0) and trusted xattrs need root")
def test_host_ascend_files_are_masked_in_the_upper_layer(tmp_path):
    host = tmp_path / "host"
    (host / "etc").mkdir(parents=True)
    (host / "etc" / "hccn.conf").write_text("address_0=1.2.3.4\n")
    (host / "Ascend").mkdir()
    upper = tmp_path / "upper"
    (upper / str(host / "Ascend").lstrip("/")).mkdir(parents=True)
    nodefs.mask_host_paths(upper, [host / "etc" / "hccn.conf", host / "Ascend", host / "absent"])
    whiteout = upper / str(host / "etc" / "hccn.conf").lstrip("/")
    info = whiteout.lstat()
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(0, 0)
    assert os.getxattr(upper / str(host / "Ascend").lstrip("/"), "trusted.overlay.opaque") == b"y"
    assert not (upper / str(host / "absent").lstrip("/")).exists()


def test_missing_prerequisites_name_the_package_to_install():
    problems = missing_requirements(
        which=lambda name: None if name in ("sshd", "nsenter") else f"/usr/bin/{name}",
        euid=1000,
        filesystems="nodev\ttmpfs\nnodev\tproc\n",
    )
    assert problems[0].startswith("root:")
    assert any(p.startswith("sshd:") and "apt-get install openssh-server" in p for p in problems)
    assert any(p.startswith("nsenter:") and "apt-get install util-linux" in p for p in problems)
    assert any(p.startswith("overlayfs:") for p in problems)
    assert len(problems) == 4


def test_nothing_missing_on_a_ready_machine():
    assert missing_requirements(which=lambda name: f"/usr/bin/{name}", euid=0, filesystems="nodev\toverlay\n") == []


def test_journal_ignores_a_line_torn_by_a_crash(tmp_path):
    journal = Journal(tmp_path / "created.jsonl")
    journal.record("netns", names=["a"])
    journal.record("link", names=["b"])
    with open(journal.path, "a") as handle:
        handle.write('{"kind": "tmpfs", "pa')
    assert journal.entries() == [{"kind": "netns", "names": ["a"]}, {"kind": "link", "names": ["b"]}]
    assert journal.entries("link") == [{"kind": "link", "names": ["b"]}]


def test_tbf_bucket_holds_ten_milliseconds_of_traffic():
    assert tbf_arguments("8mbit") == ["tbf", "rate", "8mbit", "burst", "10000", "latency", "400ms"]
    assert tbf_arguments("100kbit")[4] == "4096"
    with pytest.raises(ValueError, match="8mbit"):
        tbf_arguments("fast")
