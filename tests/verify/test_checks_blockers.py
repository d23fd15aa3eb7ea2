"""npu.busy, node.hccl_ports, node.host_nic: each fails on its node only, names the process or
NIC and the fix, says "could not check" when its probe failed, and passes on the healthy cluster.

Facts are the healthy cluster's (verify_cluster_facts.py) with node2 changed the way each cause
shows up in npu-smi, ss and ip.
"""

from __future__ import annotations

from dataclasses import replace

from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, healthy_facts, judge

from ascendprep.desired.state import DesiredState
from ascendprep.facts.blocker_model import LinkState, NpuProcess, NpuProcessTable, PortSockets, RouteLookup, SocketUse
from ascendprep.facts.model import InterfaceAddress, ProbeError
from ascendprep.verify.checks.blockers import busy_npu_refusal
from ascendprep.verify.checks.model import Status
from ascendprep.verify.checks.runner import run_checks

IDS = ("npu.busy", "node.hccl_ports", "node.host_nic")


def _run(desired: DesiredState, **changes: object):
    facts = replace(healthy_facts(desired, "node2"), **changes)
    hosts, plan = cluster_evidence(desired, {"node2": facts})
    results = run_checks(desired, hosts, plan, today=TODAY)
    return [r for r in results if r.failed], {(r.check, r.node, r.npu): r for r in results if r.check in IDS}, hosts


def test_the_healthy_cluster_passes_all_three(desired):
    failed, mine, hosts = _run(desired)
    assert failed == []
    assert {r.status for r in mine.values()} == {Status.PASSED}
    assert len([key for key in mine if key[0] == "npu.busy"]) == 4 * 8
    assert busy_npu_refusal(hosts) is None


def test_a_busy_npu_fails_with_pid_and_name_and_the_allreduce_is_refused(desired):
    table = NpuProcessTable(
        (NpuProcess(3, 0, 784780, "VLLMWorker_DP", 30112), NpuProcess(5, 0, 1333928, "", 37709)),
        idle_npus=(0, 1, 2, 4, 6, 7),
    )
    failed, mine, hosts = _run(desired, npu_processes=table)
    assert sorted((r.check, r.node, r.npu) for r in failed) == [("npu.busy", "node2", 3), ("npu.busy", "node2", 5)]
    three = mine[("npu.busy", "node2", 3)]
    assert "pid 784780 (VLLMWorker_DP, 30112 MB)" in three.message and "EJ0001" in three.message
    assert "kill 784780" in three.fix
    assert "another container" in mine[("npu.busy", "node2", 5)].message
    refusal = busy_npu_refusal(hosts)
    assert refusal is not None and refusal.id == "allreduce.busy_npus"
    assert "node2: NPU 3 chip 0 pid 784780" in refusal.message and "--allow-busy-npus" in refusal.fix


def test_an_unreadable_table_row_is_could_not_check_shown_escaped_never_a_pass(desired):
    table = NpuProcessTable(idle_npus=(0, 1, 2, 3, 4, 5, 6), odd_rows=("| 7  0 | ?? | evil\x1b]0;x\x07 | 1 |",))
    failed, mine, _ = _run(desired, npu_processes=table)
    result = mine[("npu.busy", "node2", 7)]
    assert result.failed and result.message.startswith("could not check: ")
    assert "\\x1b]0;x\\x07" in result.message and "\x1b" not in result.message


def test_npu_smi_failing_is_could_not_check(desired):
    error = ProbeError(
        "npu_smi.procs",
        "error",
        "npu-smi info failed: dcmi model initialized failed, because the device is used. ret is -8020",
    )
    failed, mine, _ = _run(desired, npu_processes=None, errors=(error,))
    busy = [r for r in failed if r.check == "npu.busy"]
    assert len(busy) == 8 and all("could not check: npu-smi info failed" in r.message for r in busy)


def test_a_listener_on_60000_fails_and_names_the_process_an_unrelated_port_does_not(desired):
    sockets = PortSockets(
        "ss",
        (SocketUse("LISTEN", "0.0.0.0", 60000, 4242, "python3"), SocketUse("TIME-WAIT", "10.231.0.12", 60007)),
        ranges=((60000, 60031), (29500, 29500)),
    )
    failed, mine, _ = _run(desired, port_sockets=sockets)
    assert [(r.check, r.node) for r in failed] == [("node.hccl_ports", "node2")]
    result = failed[0]
    assert "pid 4242 (python3) listens on 0.0.0.0:60000" in result.message and "EJ0003" in result.message
    assert "stop pid 4242" in result.fix
    # CANN 8.2 uses 60000-60015: a socket on 60020 is outside its block, and 29500 only matters on the master.
    # A loopback-only listener does not collide with HCCL's bind on the host NIC's address.
    sockets = PortSockets(
        "ss",
        (
            SocketUse("LISTEN", "0.0.0.0", 60020, 1, "x"),
            SocketUse("LISTEN", "0.0.0.0", 29500, 2, "y"),
            SocketUse("LISTEN", "127.0.0.1", 60001, 3, "z"),
        ),
        ranges=((60000, 60031), (29500, 29500)),
    )
    failed, mine, _ = _run(desired, port_sockets=sockets)
    assert failed == [] and mine[("node.hccl_ports", "node2", None)].evidence["hccl_ports"] == "60000-60015"


def test_the_master_port_counts_on_the_master(desired):
    facts = replace(
        healthy_facts(desired, "node1"),
        port_sockets=PortSockets(
            "/proc/net/tcp",
            (SocketUse("LISTEN", "::", 29500),),
            owners_read=False,
            ranges=((60000, 60031), (29500, 29500)),
        ),
    )
    result = next(r for r in judge(desired, {"node1": facts}) if r.check == "node.hccl_ports" and r.node == "node1")
    assert result.failed and "the master port" in result.message and "cannot see" in result.message


def test_no_ss_and_no_proc_is_could_not_check(desired):
    error = ProbeError(
        "ports", "error", "ss is not installed and reading /proc/net/tcp failed: cannot read /proc/net/tcp"
    )
    failed, _, _ = _run(desired, port_sockets=None, errors=(error,))
    assert [(r.check, r.message) for r in failed] == [("node.hccl_ports", "could not check: " + error.message)]


def test_a_nic_without_the_address_fails(desired):
    addresses = (InterfaceAddress("lo", "inet", "127.0.0.1", 8), InterfaceAddress("eth1", "inet", "192.168.9.2", 24))
    failed, _, _ = _run(desired, addresses=addresses, hostname_addresses=("192.168.9.2",))
    nic = [r for r in failed if r.check == "node.host_nic"]
    assert len(nic) == 1 and nic[0].node == "node2"
    assert (
        "no interface of node2 holds HCCL_IF_IP=10.231.0.12" in nic[0].message
        and "eth1 192.168.9.2/24" in nic[0].message
    )


def test_a_down_nic_and_a_route_through_another_nic_fail(desired):
    down = (
        LinkState("lo", ("LOOPBACK", "UP", "LOWER_UP")),
        LinkState("eth0", ("BROADCAST", "MULTICAST", "UP"), "DOWN"),
    )
    failed, _, _ = _run(desired, links=down)
    assert [r.message for r in failed if r.check == "node.host_nic"] == [
        "eth0, which holds HCCL_IF_IP=10.231.0.12, is down"
    ]
    # Master on another network: the route decides.
    other = desired_state(INVENTORY.replace("host: 10.231.0.11", "host: 10.99.0.11"))
    facts = replace(healthy_facts(other, "node2"), route_to_master=RouteLookup("10.99.0.11", "eth1", "192.168.9.2"))
    result = next(r for r in judge(other, {"node2": facts}) if r.check == "node.host_nic" and r.node == "node2")
    assert result.failed and "leaves through eth1" in result.message


def test_socket_ifname_matching(desired):
    named = desired_state(INVENTORY.replace("firewall: check", "training: {socket_ifname: '=eth1'}\nfirewall: check"))
    results = [r for r in judge(named, {}) if r.check == "node.host_nic"]
    assert all(
        r.failed and "no interface of" in r.message and "matches HCCL_SOCKET_IFNAME==eth1" in r.message for r in results
    )
    prefix = desired_state(INVENTORY.replace("firewall: check", "training: {socket_ifname: 'eth'}\nfirewall: check"))
    assert all(r.status is Status.PASSED for r in judge(prefix, {}) if r.check == "node.host_nic")


def test_allow_busy_npus_only_goes_with_allreduce(tmp_path):
    from click.testing import CliRunner

    from ascendprep.commands.verify import verify_command

    outcome = CliRunner().invoke(verify_command, [str(tmp_path / "inventory.yaml"), "--allow-busy-npus"])
    assert outcome.exit_code == 2 and "--allow-busy-npus only apply with --allreduce" in outcome.output


def test_a_master_named_by_hostname_is_checked_by_what_it_resolves_to_on_the_node():
    """MASTER_ADDR given as a name: node2 resolved it (net.master) and its route is judged to that
    address; a name that resolves to loopback (Debian's 127.0.1.1 line) or to nothing fails,
    saying so; a lookup that failed could not check."""
    named = desired_state(INVENTORY.replace("host: 10.231.0.11", "host: master-0.cluster"))
    assert named.inventory.master.host == "master-0.cluster"

    def verdict(**changes):
        facts = replace(healthy_facts(named, "node2"), **changes)
        return next(r for r in judge(named, {"node2": facts}) if r.check == "node.host_nic" and r.node == "node2")

    same_network = verdict(master_addresses=("10.231.0.11",))
    assert same_network.status is Status.PASSED
    assert (
        same_network.message
        == "HCCL_IF_IP=10.231.0.12: eth0 is up with 10.231.0.12/24, on MASTER_ADDR master-0.cluster (10.231.0.11)'s network"
    )
    routed_away = verdict(
        master_addresses=("10.99.0.11",), route_to_master=RouteLookup("10.99.0.11", "eth1", "192.168.9.2")
    )
    assert (
        routed_away.failed
        and "the route to MASTER_ADDR master-0.cluster (10.99.0.11) leaves through eth1" in routed_away.message
    )
    loopback = verdict(master_addresses=("127.0.1.1", "10.231.0.11"))
    assert loopback.failed and loopback.message == (
        "MASTER_ADDR master-0.cluster resolves to 127.0.1.1 (loopback) on node2: its ranks would look for the master on this node itself"
    )
    assert "map 'master-0.cluster' to the master's cluster address in /etc/hosts instead of 127.0.1.1" in loopback.fix
    nowhere = verdict(master_addresses=())
    assert nowhere.failed and nowhere.message.startswith("MASTER_ADDR master-0.cluster does not resolve on node2")
    broken = verdict(
        errors=(ProbeError("net.master", "timeout", "getent ahostsv4 master-0.cluster timed out and was killed"),)
    )
    assert (
        broken.failed and broken.message == "could not check: getent ahostsv4 master-0.cluster timed out and was killed"
    )
    older = verdict()  # facts of an ascendprep that did not look the name up
    assert older.status is Status.PASSED and "was not looked up here" in older.message
