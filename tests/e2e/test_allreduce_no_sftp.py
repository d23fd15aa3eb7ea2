"""``verify --allreduce`` on hosts whose sshd has no sftp subsystem (``lab up --no-sftp``).

Today's bug: the worker upload died with ``paramiko SSHException: Channel closed``. The worker
now streams through the exec channel there; with SFTP the upload still costs no exec. Both lab
variants run the same all-reduce, on 2 nodes each. The SFTP-less variant is a hardened host in
full: its hostname is not in /etc/hosts either (gloo must be bound to the inventory address).
"""

from __future__ import annotations

from typing import Iterator

import paramiko
import pytest
from allreduce_cluster import Cluster, applied_cluster, run_dirs_left

from ascendprep.inventory.load import load_inventory
from ascendprep.remote.ssh import SSHTransport
from ascendprep.run.hosts import host_accesses

pytestmark = pytest.mark.lab

TINY = {"nproc_per_node": 1, "sizes": "1K", "warmup": 1, "iters": 2}


@pytest.fixture(scope="module", params=[False, True], ids=["no-sftp-unresolvable-hostnames", "sftp"])
def sftp_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    sftp = request.param
    hostnames = "resolve" if sftp else "missing"
    yield from applied_cluster(tmp_path_factory, "sftp" if sftp else "nosftp", nodes=2, sftp=sftp, hostnames=hostnames)


def _has_sftp(cluster: Cluster) -> bool:
    access = host_accesses(load_inventory(cluster.inventory))[0]
    client = paramiko.SSHClient()
    client.load_host_keys(str(cluster.lab.known_hosts_path))
    client.connect(
        access.address,
        username="root",
        key_filename=str(cluster.lab.key_path),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    try:
        client.open_sftp().close()
        return True
    except paramiko.SSHException:
        return False
    finally:
        client.close()


def test_the_lab_variant_is_what_it_says(sftp_cluster: Cluster) -> None:
    assert _has_sftp(sftp_cluster) == sftp_cluster.lab.spec.sftp
    resolves = sftp_cluster.lab.ssh("node1", 'getent hosts "$(hostname)"')
    assert (resolves.returncode == 0) == sftp_cluster.lab.spec.sftp, resolves.stdout


def test_allreduce_uploads_the_worker_with_or_without_sftp(sftp_cluster: Cluster) -> None:
    run = sftp_cluster.allreduce(**TINY, timeout=120, min_busbw=1e-9)
    assert run.outcome.passed, run.printed
    assert "Traceback" not in run.printed and "Channel closed" not in run.printed
    # preflight + launch; without SFTP the upload is one more exec on each node.
    per_node = 2 if sftp_cluster.lab.spec.sftp else 3
    assert run.execs == {"node1": per_node, "node2": per_node}
    assert run_dirs_left(sftp_cluster.lab) == []


def test_put_and_fetch_on_a_lab_node(sftp_cluster: Cluster) -> None:
    access = host_accesses(load_inventory(sftp_cluster.inventory))[1]
    payload = bytes(range(256)) * 64 + b"\n-%s'\\"
    with SSHTransport(access) as host:
        host.put(payload, "/tmp/ascendprep-sftp-test.bin", 0o640)
        assert host.fetch("/tmp/ascendprep-sftp-test.bin") == payload
        assert (
            host.run_script("stat -c %a /tmp/ascendprep-sftp-test.bin; rm /tmp/ascendprep-sftp-test.bin").stdout
            == "640\n"
        )
