"""A host that prints without end costs the controller its cap, not what it printed.

50 MB of output against a 1 MB cap, over the real sshd and through the local transport: the
step fails for that host with "output over 1024 KB", the other host's result is intact, and the
controller's Python allocations stay near the cap (tracemalloc) instead of growing to 50 MB.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Callable, Tuple, TypeVar

import pytest
from sshd_server import Sshd

from ascendprep.remote.errors import OutputTooLarge
from ascendprep.remote.local import LocalTransport
from ascendprep.remote.ssh import SSHTransport
from ascendprep.run.fanout import Session

T = TypeVar("T")
CAP = 1024 * 1024
FLOOD = "head -c 50000000 /dev/zero | tr '\\0' x; echo 'and stderr too' >&2\n"


def _peak_while(action: Callable[[], T]) -> Tuple[T, int]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _flood_error(run: Callable[[], object]) -> Tuple[OutputTooLarge, int]:
    def attempt() -> OutputTooLarge:
        with pytest.raises(OutputTooLarge) as caught:
            run()
        return caught.value

    return _peak_while(attempt)


def test_ssh_flood_is_cut_at_the_cap(sshd: Sshd, known_hosts: Path) -> None:
    with SSHTransport(sshd.access(name="noisy", known_hosts=[known_hosts])) as host:
        host.output_cap = CAP
        error, peak = _flood_error(lambda: host.run_script(FLOOD))
        assert host.run_script("echo still fine").stdout == "still fine\n"
    assert str(error).startswith("noisy: output over 1024 KB: the remote script printed 50000015 bytes")
    assert (error.kind, error.limit, error.cap) == ("error", "HOST_OUTPUT_CAP", CAP)
    assert peak < 8 * CAP, f"the controller held {peak} bytes for a {CAP}-byte cap"


def test_local_flood_is_cut_at_the_cap() -> None:
    host = LocalTransport("here", output_cap=CAP)
    error, peak = _flood_error(lambda: host.run_script(FLOOD))
    assert str(error).startswith("here: output over 1024 KB: the remote script printed 50000015 bytes")
    assert peak < 8 * CAP, f"the controller held {peak} bytes for a {CAP}-byte cap"
    assert host.run_script("echo ok; echo err >&2").stdout == "ok\n"


def test_a_flooding_host_does_not_affect_the_others(sshd: Sshd, known_hosts: Path) -> None:
    hosts = [sshd.access(name="noisy", known_hosts=[known_hosts]), sshd.access(name="quiet", known_hosts=[known_hosts])]

    def connect(access):  # type: ignore[no-untyped-def]
        transport = SSHTransport(access).open()
        transport.output_cap = CAP
        return transport

    def job(transport, access):  # type: ignore[no-untyped-def]
        return transport.run_script(FLOOD if access.name == "noisy" else "echo quiet").stdout

    with Session(hosts, forks=2, transport_factory=connect) as session:
        outcomes = session.run(job)
    assert outcomes["quiet"].ok and outcomes["quiet"].value == "quiet\n"
    assert outcomes["noisy"].kind == "error"
    assert "output over 1024 KB" in (outcomes["noisy"].error or "")
    assert session.limits_hit == [
        {"limit": "host_output_cap", "bytes": CAP, "step": "the remote step", "hosts": ["noisy"]}
    ]


def test_the_cap_is_named_in_limits_hit_for_every_host_it_cut() -> None:
    """``--format json``'s ``limits_hit`` names the controller's cap and the hosts it cut; a step
    where nothing flooded adds no entry (the unlike case)."""
    from ascendprep.remote.access import HostAccess

    hosts = [HostAccess(name=name, address="127.0.0.1") for name in ("n1", "n2", "n3")]
    flood = "head -c 3000000 /dev/zero\n"

    def job(transport, access):  # type: ignore[no-untyped-def]
        return transport.run_script(flood if access.name != "n2" else "echo quiet").stdout

    with Session(
        hosts, forks=3, transport_factory=lambda access: LocalTransport(access.name, output_cap=CAP)
    ) as session:
        session.run(lambda transport, access: transport.run_script("echo calm").stdout, step="a calm step")
        assert session.limits_hit == []
        outcomes = session.run(job, step="the flood")
    assert outcomes["n2"].ok and [outcomes[n].limit for n in ("n1", "n3")] == ["HOST_OUTPUT_CAP"] * 2
    assert session.limits_hit == [
        {"limit": "host_output_cap", "bytes": CAP, "step": "the flood", "hosts": ["n1", "n3"]}
    ]


def test_local_timeout_still_kills_and_keeps_what_was_printed(tmp_path: Path) -> None:
    host = LocalTransport("here", output_cap=CAP)
    result = host.run_script("echo started; sleep 30", timeout=1)
    assert result.timed_out and result.stdout == "started\n"


def test_a_cut_host_is_named_even_when_the_deadline_ends_the_step() -> None:
    """n1 floods and is cut at once; n2 is still at work when the deadline passes: both limits
    are listed, each with its own hosts."""
    from ascendprep.remote.access import HostAccess
    from ascendprep.remote.deadline import Deadline

    hosts = [HostAccess(name=name, address="127.0.0.1") for name in ("n1", "n2")]

    def job(transport, access):  # type: ignore[no-untyped-def]
        return transport.run_script("head -c 3000000 /dev/zero\n" if access.name == "n1" else "sleep 20\n").stdout

    with Session(
        hosts,
        forks=2,
        transport_factory=lambda access: LocalTransport(access.name, output_cap=CAP),
        deadline=Deadline(3),
    ) as session:
        outcomes = session.run(job, step="the flood")
    assert outcomes["n1"].limit == "HOST_OUTPUT_CAP" and outcomes["n2"].kind == "timeout"
    assert [(hit["limit"], hit["hosts"]) for hit in session.limits_hit] == [
        ("command_timeout", ["n2"]),
        ("host_output_cap", ["n1"]),
    ]


def test_an_all_reduce_node_cut_at_the_cap_is_named_in_limits_hit(tmp_path: Path) -> None:
    """The all-reduce runs its steps on the session's connections outside Session.run: a node
    whose preflight printed past the cap (here an interpreter that floods) is named in
    ``limits_hit`` with the step, as JSON output shows it; the other node is not."""
    import io

    import yaml
    from rich.console import Console

    from ascendprep.inventory.load import inventory_from_text
    from ascendprep.remote.access import HostAccess
    from ascendprep.report.limits_hit import collect_limits_hit
    from ascendprep.run.allreduce import run_jobs
    from ascendprep.verify.allreduce.jobs import cluster_job, new_run_id
    from ascendprep.verify.allreduce.options import AllreduceOptions, resolve_settings

    inventory = inventory_from_text(
        yaml.safe_dump(
            {
                "name": "t",
                "product": "atlas-a2",
                "npus_per_node": 8,
                "device_network": {"subnet": "10.20.0.0/24"},
                "nodes": [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}],
                "software": {"cann": "8.0.RC3"},
            }
        )
    )
    settings, problems = resolve_settings(AllreduceOptions(), [(n.name, n.npus) for n in inventory.nodes], None)
    assert settings is not None and problems == []
    noisy = tmp_path / "python3"
    noisy.write_text("#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\n")
    noisy.chmod(0o755)
    hosts = [HostAccess(name=node.name, address="127.0.0.1") for node in inventory.nodes]

    def connect(access):  # type: ignore[no-untyped-def]
        return LocalTransport(access.name, output_cap=CAP if access.name == "n1" else 16 * CAP)

    with Session(hosts, forks=2, transport_factory=connect) as session:
        [result] = run_jobs(
            session, [cluster_job(inventory, settings, new_run_id())], settings, str(noisy), Console(file=io.StringIO())
        )
    assert "output over 1024 KB" in result.problems["n1"].message and result.launches == {}
    assert session.limits_hit == [
        {"limit": "host_output_cap", "bytes": CAP, "step": "the all-reduce preflight", "hosts": ["n1"]}
    ]
    assert collect_limits_hit(session.limits_hit, {}) == session.limits_hit
