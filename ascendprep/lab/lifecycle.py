"""Bringing a lab up and taking it down, leaving the host exactly as it was.

``bring_up`` records each thing it is about to create in the journal *before* creating it, and
``tear_down`` removes whatever the journal names or the lab's names reveal (namespaces, the
processes inside them, links, the tmpfs, files). So ``down`` also cleans up after an ``up`` that
was killed half-way, and running it twice is harmless.
"""

from __future__ import annotations

import errno
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional

from ascendprep.lab import network, nodefs, nodeproc, sshd
from ascendprep.lab.hostpython import HostPython, host_python
from ascendprep.lab.inventory_doc import render_inventory
from ascendprep.lab.journal import Journal
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.spec import LabSpec, NodeSpec, netns_pattern, short_hash
from ascendprep.lab.system import (
    LabError,
    ProcessRef,
    is_mountpoint,
    is_running,
    missing_requirements,
    netns_inode,
    processes_in_net_namespaces,
    run,
    stop_processes,
    tool,
)

Progress = Callable[[str], None]
#: Nodes set up at once; the work is mostly waiting on short-lived processes, so more threads
#: than the 2 cores here still pay off (see bench/bench_lab_up.py).
PARALLEL_NODES = 8
TMPFS_SIZE = "1g"


def quiet(_: str) -> None:
    """Progress sink that drops messages (the API's default; the CLI prints them)."""


def read_up_marker(paths: LabPaths) -> Optional[LabSpec]:
    """The spec of the lab if it finished coming up, else None."""
    try:
        return LabSpec.from_dict(json.loads(paths.up_marker.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{paths.up_marker} is damaged ({exc}); run lab down --name {paths.name}") from None


def has_leftovers(paths: LabPaths) -> bool:
    """Anything of this lab on the host (a half-built lab, or one from before a reboot)."""
    pattern = netns_pattern(paths.name)
    return (
        paths.lab_dir.exists()
        or paths.run_dir.exists()
        or any(pattern.match(name) for name in network.existing_netns())
        or any(_is_lab_link(paths.name, name) for name in network.existing_links())
    )


def bring_up(spec: LabSpec, paths: LabPaths, progress: Progress = quiet) -> bool:
    """Create the lab; False when it was already up with this very spec (nothing changed)."""
    spec = spec.validated()
    problems = missing_requirements()
    if problems:
        raise LabError("lab up cannot run on this machine; missing:\n  " + "\n  ".join(problems))
    current = read_up_marker(paths)
    if current is not None:
        if current == spec:
            progress(f"lab '{spec.name}' is already up ({spec.nodes} {spec.product} nodes)")
            return False
        changes = "\n  ".join(current.differences(spec))
        raise LabError(
            f"lab '{spec.name}' is already up with other settings (current → requested):\n  {changes}\n"
            f"run 'ascendprep lab down --name {spec.name}' first"
        )
    if has_leftovers(paths):
        progress(f"removing a half-built lab '{spec.name}' left by an earlier up")
        tear_down(paths)
    conflicts = network.subnet_conflicts(spec)
    if conflicts:
        raise LabError(
            f"--subnet {spec.subnet} is already in use on this host ({'; '.join(conflicts)}); choose another"
        )
    try:
        _build(spec, paths, progress)
    except BaseException as exc:
        progress("lab up did not finish; removing what it created")
        try:
            tear_down(paths)
        except LabError as cleanup_error:
            progress(f"cleaning up failed too: {cleanup_error} (run 'ascendprep lab down --name {spec.name}')")
        if isinstance(exc, ValueError):  # the simulator's refusals (LabStateError and friends)
            raise LabError(f"the simulator refused the lab: {exc}") from exc
        raise
    return True


def _build(spec: LabSpec, paths: LabPaths, progress: Progress) -> None:
    started = time.monotonic()
    python = host_python()
    nodes = spec.node_list()
    journal = _create_lab_dir(paths)
    _create_run_dir(paths, journal)
    if not sshd.PRIVSEP_DIR.exists():
        _note_shared_dir(paths, sshd.PRIVSEP_DIR, created=True)
        sshd.PRIVSEP_DIR.mkdir(mode=0o755)
    sshd.generate_key(paths.key, f"ascendprep-lab-{spec.name}")
    paths.authorized_keys.write_text(sshd.public_key(paths.key) + "\n")
    _write_lab_description(spec, paths)

    progress(f"creating the network: bridge {spec.bridge} ({spec.bridge_ip}), {len(nodes)} namespaces")
    if not is_mountpoint(network.NETNS_DIR):  # the first 'ip netns add' will mount it
        _note_shared_dir(paths, network.NETNS_DIR, created=not network.NETNS_DIR.exists())
    journal.record("link", names=[spec.bridge, *(n.veth for n in nodes)])
    journal.record("netns", names=[n.netns for n in nodes])
    lines = network.bridge_commands(spec)
    for node in nodes:
        lines += network.node_commands(spec, node)
    network.ip_batch(lines)

    progress(f"starting {len(nodes)} nodes (overlays, sshd)")
    with ThreadPoolExecutor(max_workers=min(PARALLEL_NODES, len(nodes))) as pool:
        started_sshd = list(pool.map(lambda n: _start_node(spec, paths, n, python), nodes))
    for node, ref in zip(nodes, started_sshd):
        nodeproc.wait_for_sshd(paths, node, ref)

    host_keys = [(n.mgmt_ip, sshd.public_key(paths.host_key(n.name))) for n in nodes]
    paths.known_hosts.write_text(sshd.render_known_hosts(host_keys))
    paths.inventory.write_text(render_inventory(spec, python, key=paths.key.name, known_hosts=paths.known_hosts.name))
    paths.up_marker.write_text(json.dumps(spec.to_dict(), indent=2) + "\n")
    progress(f"lab '{spec.name}' is up: {len(nodes)} {spec.product} nodes in {time.monotonic() - started:.1f}s")


def _create_lab_dir(paths: LabPaths) -> Journal:
    paths.lab_dir.mkdir(parents=True, mode=0o700)
    return Journal(paths.journal)


def _create_run_dir(paths: LabPaths, journal: Journal) -> None:
    paths.run_root.mkdir(mode=0o755, parents=True, exist_ok=True)
    journal.record("tmpfs", path=str(paths.run_dir))
    paths.run_dir.mkdir(mode=0o755)
    run([tool("mount"), "-t", "tmpfs", "-o", f"mode=0755,size={TMPFS_SIZE}", "ascendprep-lab", str(paths.run_dir)])
    paths.state_dir.mkdir(mode=0o755)
    paths.shared_dir.mkdir(mode=0o755)
    (paths.run_dir / "nodes").mkdir(mode=0o700)


def _write_lab_description(spec: LabSpec, paths: LabPaths) -> None:
    """lab.json (lab contract) in the lab dir and the state dir, and the simulator's state."""
    from ascendprep.lab.sim import state

    nodes = spec.node_list()
    cabling = state.default_cabling(spec.product, [n.name for n in nodes], nodes[0].npus)
    description = {
        "schema_version": 1,
        "name": spec.name,
        "product": spec.product,
        "state_dir": str(paths.state_dir),
        "subnet": spec.subnet,
        "bridge": spec.bridge,
        "versions": spec.to_dict()["versions"],
        "nodes": [
            {
                "name": n.name,
                "mgmt_ip": n.mgmt_ip,
                "npus": n.npus,
                "cabling": cabling.get(n.name, {}),
                "netns": n.netns,
                "veth": n.veth,
                "driver_profile": n.driver_profile,
                "chip": spec.chip,
                **({"super_pod": spec.super_pod_of(n.index)} if spec.super_pod_of(n.index) else {}),
            }
            for n in nodes
        ],
    }
    text = json.dumps(description, indent=2) + "\n"
    paths.lab_json.write_text(text)
    paths.faults_json.write_text(json.dumps({"schema_version": 1, "faults": []}, indent=2) + "\n")
    (paths.state_dir / "lab.json").write_text(text)
    state.init_state(paths.state_dir, description)


def _start_node(spec: LabSpec, paths: LabPaths, node: NodeSpec, python: HostPython) -> ProcessRef:
    node_dir = paths.node_dir(node.name)
    node_dir.mkdir(parents=True, mode=0o700)
    nodefs.populate_upper(paths=paths, spec=spec, node=node, python=python, versions=spec.versions)
    sshd.generate_key(paths.host_key(node.name), f"root@{node.name}")
    paths.sshd_config(node.name).write_text(
        sshd.render_sshd_config(
            listen_ip=node.mgmt_ip,
            host_key=paths.host_key(node.name),
            authorized_keys=paths.authorized_keys,
            pid_file=node_dir / "sshd.pid",
            sftp=spec.sftp,
        )
    )
    script = nodefs.holder_script(
        spec=spec,
        node=node,
        overlays=nodefs.node_overlays(paths, node.name, python.purelib),
        ip=tool("ip"),
        mount=tool("mount"),
        sleep=nodeproc.sleep_path(),
        runtime_dirs=python.runtime_dirs,
        stash=node_dir / "keep",
    )
    holder = nodeproc.start_holder(paths, node, script)
    return nodeproc.start_sshd(paths, node, holder)


# --- down ---------------------------------------------------------------------------------


def tear_down(paths: LabPaths, progress: Progress = quiet) -> bool:
    """Remove everything of the lab; False when there was nothing to remove."""
    journal = Journal(paths.journal)
    pattern = netns_pattern(paths.name)
    netns = {name for e in journal.entries("netns") for name in e["names"]}
    netns |= {name for name in network.existing_netns() if pattern.match(name)}
    links = {name for e in journal.entries("link") for name in e["names"]}
    links |= {name for name in network.existing_links() if _is_lab_link(paths.name, name)}
    mounted = is_mountpoint(paths.run_dir)
    if not (netns or links or mounted or paths.lab_dir.exists() or paths.run_dir.exists()):
        return False

    _stop_lab_processes(paths, netns, progress)
    if netns or links:
        progress(f"removing {len(netns)} namespaces and {len(links)} links")
    network.delete_links(sorted(links))
    network.delete_netns(sorted(netns))
    _unmount(paths.run_dir)
    _remove_empty_dir(paths.run_dir)
    _remove_tree(paths.lab_dir)
    _release_shared_dirs(paths)
    # Parents named after ascendprep are ours whoever made them: remove them once empty.
    for parent in (paths.run_root, paths.lab_root, paths.lab_root.parent):
        _remove_empty_dir(parent)
    progress(f"lab '{paths.name}' is down")
    return True


def _is_lab_link(lab: str, name: str) -> bool:
    digest = short_hash(lab)
    return name == f"apb{digest}" or (name.startswith(f"apv{digest}n") and name[len(digest) + 4 :].isdigit())


def _stop_lab_processes(paths: LabPaths, netns: set[str], progress: Progress, rounds: int = 5) -> None:
    """Stop every process of the lab, looking again after each stop.

    When ``lab up`` was killed midway, the node starters it left behind (``nsenter`` on its way
    into a namespace, a daemon forking) can enter the lab's namespaces after a scan saw them
    outside; one scan would leave them running and pin the namespaces.
    """
    for _ in range(rounds):
        processes = _lab_processes(paths, netns)
        if not processes:
            return
        progress(f"stopping {len(processes)} processes")
        stop_processes(processes)
        time.sleep(0.1)
    left = _lab_processes(paths, netns)
    if left:
        raise LabError(f"processes {', '.join(str(r.pid) for r in left)} keep entering the lab's namespaces")


def _lab_processes(paths: LabPaths, netns: set[str]) -> list[ProcessRef]:
    """Every live process inside the lab's namespaces, plus recorded ones that escaped them."""
    inodes = {i for i in (netns_inode(network.NETNS_DIR / name) for name in netns) if i is not None}
    found = {ref.pid: ref for ref in processes_in_net_namespaces(inodes)}
    nodes_dir = paths.run_dir / "nodes"
    if nodes_dir.is_dir():
        for node_dir in nodes_dir.iterdir():
            for role in (nodeproc.HOLDER, nodeproc.SSHD):
                ref = nodeproc.load_process(paths, node_dir.name, role)
                if ref is not None and is_running(ref):
                    found.setdefault(ref.pid, ref)
    return list(found.values())


def _unmount(path: Path) -> None:
    """Unmount the lab tmpfs; nodes' namespaces may still pin it a moment after their end."""
    for _ in range(50):
        if not is_mountpoint(path):
            return
        result = run([tool("umount"), str(path)], check=False)
        if result.returncode != 0:
            time.sleep(0.05)
    if is_mountpoint(path):
        run([tool("umount"), "--lazy", str(path)])


# --- host directories several labs share ---------------------------------------------------
#
# /run/sshd (sshd's privilege separation dir) and the /run/netns mount that the first
# 'ip netns add' makes are not any one lab's: a marker in the run root remembers that a lab
# made them, and the last lab to go down puts them back as they were.


def _shared_marker(paths: LabPaths, path: Path) -> Path:
    return paths.run_root / f".made-{path.name}.json"


def _note_shared_dir(paths: LabPaths, path: Path, *, created: bool) -> None:
    marker = _shared_marker(paths, path)
    if not marker.exists():
        marker.write_text(json.dumps({"path": str(path), "created": created}) + "\n")


def _release_shared_dirs(paths: LabPaths) -> None:
    labs_left = paths.run_root.is_dir() and any(not e.name.startswith(".") for e in paths.run_root.iterdir())
    for path, in_use in ((sshd.PRIVSEP_DIR, labs_left), (network.NETNS_DIR, bool(network.existing_netns()))):
        marker = _shared_marker(paths, path)
        if in_use or not marker.exists():
            continue
        if path == network.NETNS_DIR and is_mountpoint(path):
            run([tool("umount"), str(path)])
        if json.loads(marker.read_text()).get("created"):
            _remove_empty_dir(path)
        marker.unlink()


def _remove_empty_dir(path: Path) -> None:
    try:
        path.rmdir()
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EBUSY):
            return  # someone else's files (or mounts) live there now: not ours to remove
        raise LabError(f"cannot remove {path}: {exc.strerror}") from None


def _remove_tree(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
