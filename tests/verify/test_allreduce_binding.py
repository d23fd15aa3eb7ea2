"""The all-reduce binds each node's ranks to the NIC holding its inventory address (no lab).

Preflight lists the host's NICs; :func:`binding_of` picks the interface; the launch script
exports GLOO/NCCL_SOCKET_IFNAME and HCCL_IF_IP unless set_env.sh already chose them.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from nodescript import run_node_script

from ascendprep.facts.model import InterfaceAddress
from ascendprep.verify.allreduce.jobs import Job, JobNode, JobResult, binding_of, node_address
from ascendprep.verify.allreduce.scripts import interface_exports, parse_preflight, render_preflight_script

ADDRESSES = (InterfaceAddress("lo", "inet", "127.0.0.1", 8), InterfaceAddress("eth0", "inet", "10.231.0.11", 24))


def _node(host: str) -> JobNode:
    return JobNode("node1", host, 0, 1, "/tmp/ascendprep-allreduce-x-node1")


def _pre(addresses=ADDRESSES, problem=None) -> SimpleNamespace:
    return SimpleNamespace(addresses=addresses, addresses_problem=problem)


def test_the_preflight_lists_this_hosts_interfaces(tmp_path):
    directory = f"/tmp/ascendprep-allreduce-t{tmp_path.name[-8:].replace('_', '')}-node1"
    done = run_node_script(
        ["sh", "-s"],
        input=render_preflight_script(directory, sys.executable, False),
        capture_output=True,
        text=True,
        timeout=60,
    )
    subprocess.run(["rm", "-rf", "--", directory], check=True)
    pre = parse_preflight(done.stdout)
    assert pre.addresses_problem is None
    assert any(a.ifname == "lo" and a.address == "127.0.0.1" for a in pre.addresses)


def test_a_node_is_bound_to_the_interface_holding_its_address():
    assert binding_of(_node("10.231.0.11"), _pre()) == ("10.231.0.11", "eth0")


@pytest.mark.parametrize(
    "host, pre, why",
    [
        ("10.231.0.99", _pre(), "no interface holds its inventory address 10.231.0.99"),
        ("127.0.0.1", _pre(), "no interface holds"),  # loopback is the trap itself, never a binding
        ("10.231.0.11", _pre(addresses=()), "listed no interfaces"),
        ("10.231.0.11", _pre(problem="not an 'ip -o addr' line"), "could not be read"),
        ("no-such-host.invalid", _pre(), "does not resolve to an address here"),
    ],
)
def test_a_node_that_cannot_be_bound_says_why(host, pre, why):
    result = binding_of(_node(host), pre)
    assert isinstance(result, str) and why in result


def test_a_name_resolving_only_to_loopback_has_no_address():
    assert node_address("localhost") is None
    assert node_address("10.0.0.7") == "10.0.0.7"


def test_master_addr_is_the_bound_address_not_the_hostname():
    job = Job((JobNode("node1", "node1.example", 0, 1, "/tmp/ascendprep-allreduce-x-node1"),))
    result = JobResult(job)
    assert result.master_addr == "node1.example"
    result.bindings["node1"] = ("10.231.0.11", "eth0")
    assert result.master_addr == "10.231.0.11"


def _exported(before: str) -> str:
    script = (
        before
        + interface_exports("10.231.0.11", "eth0")
        + 'printf "%s|%s|%s|%s" "$GLOO_SOCKET_IFNAME" "$NCCL_SOCKET_IFNAME" "${HCCL_IF_IP-}" "${HCCL_SOCKET_IFNAME-}"'
    )
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30, env={}).stdout


def test_the_launch_exports_bind_gloo_nccl_and_hccl():
    assert _exported("") == "eth0|=eth0|10.231.0.11|"


def test_what_set_env_sh_chose_is_kept():
    # training.socket_ifname (HCCL_SOCKET_IFNAME) and a user's GLOO choice win: the smoke test runs
    # the environment the user's jobs get.
    assert _exported("export GLOO_SOCKET_IFNAME=bond0 HCCL_SOCKET_IFNAME==bond0\n") == "bond0|=eth0||=bond0"


@pytest.mark.parametrize("address, ifname", [("10.0.0.1", "eth0;reboot"), ("node1", "eth0"), ("10.0.0.1", "")])
def test_unsafe_binding_values_are_refused(address, ifname):
    with pytest.raises(ValueError):
        interface_exports(address, ifname)
