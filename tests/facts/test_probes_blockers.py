"""The probes of issue 17: npu-smi's process table, sockets on HCCL's ports (ss and /proc), NICs.

Fixtures (tests/fixtures/jobs) are real output shapes: the 910B table with a process npu-smi
cannot name (a container's) and a named one, the 116-character npu-smi 26.x A3 table with its
"Process id in container" column, ss of iproute2 6.x and of the old 3.x (``("java",2121,88)``),
and what the /proc fallback prints.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from nodescript import run_node_script

from ascendprep.facts import hostnic, npu_procs, ports
from ascendprep.facts.blocker_model import NpuProcess, SocketUse
from ascendprep.facts.blockers import JobProbes
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.ports import PortQuery
from ascendprep.facts.text import UnexpectedOutput

FIXTURES = Path(__file__).parent.parent / "fixtures" / "jobs"
QUERY = PortQuery(((60000, 60031), (29500, 29500)))


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_the_910b_table_names_each_process_and_the_idle_npus():
    table = npu_procs.parse_process_table(_fixture("npu_smi_info_910b_one_busy.txt"))
    assert table.processes == (NpuProcess(2, 0, 1333928, "", 37709), NpuProcess(3, 0, 784780, "VLLMWorker_DP", 30112))
    assert table.idle_npus == (0, 1)
    assert table.odd_rows == ()


def test_the_wide_26x_a3_table_reads_per_chip():
    table = npu_procs.parse_process_table(_fixture("npu_smi_info_a3_wide_busy.txt"))
    assert [(p.npu_id, p.chip, p.pid, p.name, p.memory_mb) for p in table.processes] == [
        (0, 0, 1803913, "VLLMWorker_DP", 59887),
        (0, 1, 1803992, "VLLMWorker_DP", 60166),
    ]
    assert table.idle_npus == (1,)


def test_odd_rows_are_kept_as_printed_and_a_bar_in_a_name_is_put_back():
    text = (
        "| NPU     Chip | Process id | Process name | Process memory(MB) |\n"
        "| 0  0 | 77 | a|b | 12 |\n"
        "| 1  0 | not-a-pid | x\x1b]0;t\x07 | 5 |\n"
        "| No running processes found in NPU 2 |\n"
    )
    table = npu_procs.parse_process_table(text)
    assert table.processes == (NpuProcess(0, 0, 77, "a|b", 12),)
    assert table.odd_rows == ("| 1  0 | not-a-pid | x\x1b]0;t\x07 | 5 |",)
    assert table.idle_npus == (2,)


def test_output_without_a_process_table_is_unexpected():
    with pytest.raises(UnexpectedOutput, match="process table"):
        npu_procs.parse_process_table("dcmi model initialized failed, because the device is used. ret is -8020\n")


def test_ss_names_listeners_and_holders_on_the_queried_ports_only():
    sockets = ports.parse_ss(_fixture("ss_tanp_60000_taken.txt"), QUERY)
    assert sockets.source == "ss" and sockets.owners_read
    assert sockets.sockets == (
        SocketUse("LISTEN", "0.0.0.0", 60000, 4242, "python3"),
        SocketUse("ESTAB", "10.0.0.12", 60004, 5120, "ssh"),
        SocketUse("TIME-WAIT", "10.0.0.12", 60007),
        SocketUse("LISTEN", "::ffff:10.0.0.12", 29500, 7001, "torchrun"),
        SocketUse("LISTEN", "::ffff:10.0.0.12", 29500, 7002, "python3"),
    )
    # TIME-WAIT belongs to no process and does not stop a new listener.
    assert [s.local_port for s in ports.blocking(sockets.sockets)] == [60000, 60004, 29500, 29500]


def test_old_ss_without_pid_labels_still_names_the_owner():
    sockets = ports.parse_ss(_fixture("ss_tanp_old_iproute.txt"), QUERY)
    assert sockets.sockets == (SocketUse("LISTEN", "*", 60001, 2121, "java"),)


def test_proc_fallback_decodes_addresses_states_and_owners():
    sockets = ports.parse_proc_ports(_fixture("proc_ports_taken.txt"), QUERY)
    assert sockets.source == "/proc/net/tcp"
    assert sockets.sockets == (
        SocketUse("LISTEN", "0.0.0.0", 60000, 4242, "python3"),
        SocketUse("TIME-WAIT", "10.0.0.12", 60007),
        SocketUse("LISTEN", "::", 29500),  # owner not readable (another user's process, not root)
    )


@pytest.mark.parametrize("text", ["LISTEN 0 128 0.0.0.0:notaport *:*\n", "hello world\n"])
def test_ss_output_that_is_not_ss_is_unexpected(text):
    with pytest.raises(UnexpectedOutput):
        ports.parse_ss(text, QUERY)


def test_ip_link_and_route_get():
    links = hostnic.parse_ip_link(
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00\n"
        "2: eth0@if7: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default\\    link/ether 02:00:00:00:00:01\n"
        "3: eth1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc mq state DOWN mode DEFAULT group default qlen 1000\n"
    )
    assert [(l.ifname, l.up) for l in links] == [("lo", True), ("eth0", True), ("eth1", False)]
    route = hostnic.parse_route_get("10.1.0.5 via 10.0.0.1 dev eth0 src 10.0.0.12 uid 0 \n    cache \n", "10.1.0.5")
    assert (route.dev, route.via, route.src) == ("eth0", "10.0.0.1", "10.0.0.12")
    local = hostnic.parse_route_get(
        "local 10.0.0.12 dev lo table local src 10.0.0.12 uid 0 \n    cache <local> \n", "10.0.0.12"
    )
    assert local.dev == "lo"


def _gather(script: str, env=None) -> str:
    return run_node_script(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60, env=env).stdout


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def _script(port: int) -> str:
    return render_gather_script(0, "/bin/true", job_probes=JobProbes(PortQuery(((port, port),)), None))


def test_the_gather_finds_a_real_listener_with_ss_and_through_proc_without_it(listener, tmp_path):
    facts = parse_gather_output(_gather(_script(listener)))
    assert facts.port_sockets is not None and facts.port_sockets.source == "ss"
    assert [(s.state, s.local_port, s.pid) for s in facts.port_sockets.sockets] == [("LISTEN", listener, os.getpid())]
    # A PATH without ss: the /proc fallback finds the same socket and its owner.
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("sh", "timeout", "mktemp", "head", "tail", "wc", "cat", "rm", "ls", "uname", "sleep"):
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found.startswith("/"):
            (tools / tool).symlink_to(found)
    script = _script(listener).replace("PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin", "PATH=$PATH")
    facts = parse_gather_output(_gather(script, env={"PATH": str(tools)}))
    assert facts.port_sockets is not None and facts.port_sockets.source == "/proc/net/tcp"
    assert [(s.state, s.local_port, s.pid) for s in facts.port_sockets.sockets] == [("LISTEN", listener, os.getpid())]
    assert facts.port_sockets.sockets[0].process  # python's comm, whatever the interpreter is called


def test_no_ss_and_an_unreadable_proc_is_an_error_not_an_empty_answer():
    from ascendprep.facts.blockers import PORTS_PROC
    from ascendprep.facts.sections import Section
    from ascendprep.facts.unit import Draft

    draft = Draft()
    PORTS_PROC.read(Section("ports.proc", {"ranges": "60000-60031"}, "", "cannot read /proc/net/tcp\n", rc=1), draft)
    assert "port_sockets" not in draft.fields and draft.errors[0].probe == "ports"
    assert "ss is not installed" in draft.errors[0].message and "cannot read /proc/net/tcp" in draft.errors[0].message


def test_without_an_inventory_the_script_asks_about_the_default_ports_and_no_route():
    facts = parse_gather_output(_gather(render_gather_script(0, "/bin/true")))
    assert facts.port_sockets is not None and facts.port_sockets.ranges == ((60000, 60031), (29500, 29500))
    assert facts.links and facts.route_to_master is None and not facts.errors_for("net.route")
    routed = parse_gather_output(
        _gather(render_gather_script(0, "/bin/true", job_probes=JobProbes(QUERY, "127.0.0.1")))
    )
    assert routed.route_to_master is not None and routed.route_to_master.dev == "lo"


@pytest.mark.parametrize(
    "answer, resolved, routed",
    [
        ("printf '10.9.8.7       STREAM m\\n10.9.8.7       DGRAM  \\n'", ("10.9.8.7",), "10.9.8.7"),
        ("printf '127.0.1.1       STREAM m\\n10.9.8.7       STREAM \\n'", ("127.0.1.1", "10.9.8.7"), None),
        ("exit 2", (), None),
    ],
)
def test_a_master_named_by_hostname_is_resolved_on_the_node_before_its_route(tmp_path, answer, resolved, routed):
    """getent ahostsv4 NAME on the node (a fake one first on PATH): the route is looked up to the
    first address only when it is one outside loopback; a loopback or missing answer is recorded
    as such (the check's finding), with no route asked."""
    tools = tmp_path / "bin"
    tools.mkdir()
    getent = tools / "getent"
    getent.write_text(f'#!/bin/sh\n[ "$1 $2" = "ahostsv4 master-0.cluster" ] || exit 9\n{answer}\n')
    getent.chmod(0o755)
    script = render_gather_script(0, "/bin/true", job_probes=JobProbes(QUERY, None, "master-0.cluster"))
    assert "AP_MASTER_NAME=master-0.cluster" in script
    facts = parse_gather_output(_gather(script, env={**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}))
    assert facts.master_addresses == resolved and not facts.errors_for("net.master")
    if routed is None:
        assert facts.route_to_master is None and not facts.errors_for("net.route")
    else:
        assert facts.route_to_master is not None and facts.route_to_master.destination == routed


def test_a_master_name_must_be_a_hostname():
    for name in ("-x", "a b", "10.0.0.1", "x;reboot", ""):
        with pytest.raises(ValueError, match="is not a hostname"):
            JobProbes(QUERY, None, name)
