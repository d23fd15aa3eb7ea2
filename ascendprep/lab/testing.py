"""Labs for tests and benchmarks: session names, free subnets, fault context, host snapshots.

Free of pytest, because it ships in the wheel (the lab is part of the package). The pytest
side -- fixtures, and skipping where a lab cannot start -- is in the repository's
``tests/labsupport.py``, built on this module.

Each session's lab has its own name (``pytest-<pid>``) and subnet, so test runs that overlap
on one machine do not take each other's lab down, and a lab whose process died is found and
taken down by the next session.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ascendprep.lab.lab import Lab
from ascendprep.lab.lifecycle import tear_down
from ascendprep.lab.network import NETNS_DIR, existing_links, existing_netns, subnet_conflicts
from ascendprep.lab.paths import LAB_ROOT, RUN_ROOT, LabPaths
from ascendprep.lab.spec import LabSpec, netns_pattern, short_hash
from ascendprep.lab.system import LabError, mount_points, netns_inode, processes_in_net_namespaces

#: Session labs are named ``pytest-<pid>[-suffix]``; one whose pid is gone was left by a crash.
SESSION_LAB_RE = re.compile(r"^pytest-([0-9]+)(-[A-Za-z0-9._-]+)?$")
#: Test labs take a /24 from here (the 4-node session lab and small labs of single tests).
TEST_SUBNETS = ipaddress.IPv4Network("10.231.128.0/17")


def session_lab_name(suffix: str = "") -> str:
    return f"pytest-{os.getpid()}{'-' + suffix if suffix else ''}"


def free_test_subnet(offset: int = 0) -> str:
    """A /24 of :data:`TEST_SUBNETS` no interface or route uses, starting from a pid-based guess."""
    subnets = list(TEST_SUBNETS.subnets(new_prefix=24))
    start = (os.getpid() + offset * 7) % len(subnets)
    for step in range(len(subnets)):
        candidate = str(subnets[(start + step) % len(subnets)])
        if not subnet_conflicts(LabSpec(name="probe", subnet=candidate)):
            return candidate
    raise LabError(f"no free /24 left in {TEST_SUBNETS} for a test lab")


def remove_abandoned_test_labs() -> list[str]:
    """Take down ``pytest-<pid>`` labs whose test session died without tearing them down."""
    names: set[str] = set()
    for root in (LAB_ROOT, RUN_ROOT):
        if root.is_dir():
            names |= {entry.name for entry in root.iterdir()}
    names |= {
        n.split("-node")[0].removeprefix("ascendprep-") for n in existing_netns() if n.startswith("ascendprep-pytest-")
    }
    removed = []
    for name in sorted(names):
        match = SESSION_LAB_RE.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            tear_down(LabPaths(name))
            removed.append(name)
    return removed


def start_session_lab(nodes: int = 4, product: str = "atlas-a2", suffix: str = "", **options: Any) -> Lab:
    """Bring up this process's lab (``pytest-<pid>[-suffix]``) on a free test subnet, after
    taking down the labs of dead sessions. Raises :class:`LabError` where a lab cannot start."""
    remove_abandoned_test_labs()
    spec = LabSpec(
        name=session_lab_name(suffix),
        nodes=nodes,
        product=product,
        subnet=options.pop("subnet", None) or free_test_subnet(offset=len(suffix)),
        **options,
    )
    return Lab.up(spec)


def ssh(lab: Lab, node: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on ``node`` with plain OpenSSH, the lab key and strict host-key checking.

    Deliberately the command line a user would type (not :meth:`Lab.ssh_argv`): tests that
    pass through it prove the lab works for ordinary ssh.
    """
    argv = [
        "ssh", "-i", str(lab.key_path),
        "-o", f"UserKnownHostsFile={lab.known_hosts_path}",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=5",
        f"root@{lab.node(node).mgmt_ip}", command,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@contextmanager
def fault_injected(lab: Lab, node: str, kind: str, **options: Any) -> Iterator[dict[str, Any]]:
    """``with fault_injected(lab, "node2", "link-down", npu=3): ...`` heals it afterwards."""
    record = lab.fault(node, kind, **options)
    try:
        yield record
    finally:
        lab.heal(node, kind)


# --- "the host is as it was" ----------------------------------------------------------------


@dataclass(frozen=True)
class HostSnapshot:
    """What a lab may leave behind: namespaces, links, mounts, and processes in its namespaces."""

    netns: frozenset[str]
    links: frozenset[str]
    mounts: frozenset[str]

    @classmethod
    def take(cls) -> "HostSnapshot":
        return cls(frozenset(existing_netns()), frozenset(existing_links()), frozenset(mount_points()))

    def new_since(self, before: "HostSnapshot", lab: str) -> list[str]:
        """Things present now, absent ``before``, that belong to lab ``lab`` or to labs at all.

        Only those count: other programs on a shared test machine come and go meanwhile.
        """
        digest = short_hash(lab)
        pattern = netns_pattern(lab)
        leftovers = [f"netns {n}" for n in sorted(self.netns - before.netns) if pattern.match(n)]
        leftovers += [
            f"link {n}"
            for n in sorted(self.links - before.links)
            if n == f"apb{digest}" or n.startswith(f"apv{digest}")
        ]
        leftovers += [
            f"mount {m}"
            for m in sorted(self.mounts - before.mounts)
            if m.startswith(("/run/netns", "/run/ascendprep-lab", "/var/lib/ascendprep", "/run/sshd"))
        ]
        return leftovers


def lab_netns_inodes(lab: str) -> set[int]:
    """Inodes of the lab's network namespaces now (keep them to look for survivors later)."""
    pattern = netns_pattern(lab)
    inodes = (netns_inode(NETNS_DIR / name) for name in existing_netns() if pattern.match(name))
    return {i for i in inodes if i is not None}


def processes_naming(text: str) -> list[str]:
    """Live (not zombie) processes whose command line contains ``text``, as "pid N: cmdline"."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry.name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # exited while we looked
        if text in cmdline and state != "Z":
            found.append(f"pid {entry.name}: {cmdline.strip()}")
    return found


def surviving_processes(netns_inodes: set[int], run_dir: Optional[str] = None) -> list[str]:
    """Live processes still in the given namespaces or naming the lab's run dir on their command line."""
    found = [f"pid {ref.pid} (in a lab namespace)" for ref in processes_in_net_namespaces(netns_inodes)]
    if run_dir is not None:
        found += processes_naming(run_dir)
    return found
