"""``ascendprep diagnose``: read the log trees given, diagnose each job, print the answer.

A tree is a collect bundle (``manifest.json`` of kind ``ascendprep-collect``, ``nodes/<node>/``
with ``plog/``, ``device/``, ``console/``, ``kernel.log`` and ``state.json``) or a plain tree as
users keep one: one folder per node, any names inside; a folder that holds the logs themselves
(plogs, ``rank-N.txt``, ``plog/``, ``debug/``, ``run/``) is one node, named after the folder.

Every file is streamed (scan.py); a link that leads out of its tree is not followed and is named,
a link to a folder inside it is not followed either (no loops), binary files and files that are
not logs are named and skipped. ``--inventory`` maps device IPs to the inventory's nodes and NPUs
(the desired state's addresses); the collected NPU state (``state.json``) gives the TLS switch
and the device IPs each node had.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple

from ascendprep.base import exitcodes
from ascendprep.base.findings import Finding
from ascendprep.base.jsoninput import read_json_file
from ascendprep.base.limits import DIAGNOSE_MAX_FILES, DIAGNOSE_MAX_WORKERS, DIAGNOSE_PARALLEL_MIN_BYTES
from ascendprep.base.outputfile import write_file
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError, Located
from ascendprep.desired.state import build_desired
from ascendprep.diagnose.analyse import Diagnosis, diagnose
from ascendprep.diagnose.baseline import note_for
from ascendprep.diagnose.model import CONSOLE, DEVICE, KERNEL, PLOG, Event, FileStats, LogFile, Skipped
from ascendprep.diagnose.scan import HEAD_BYTES, Scanner, kind_of
from ascendprep.facts.model import HostFacts
from ascendprep.inventory.load import load_inventory
from ascendprep.report.diagnose import print_diagnosis, render_html, write_json_diagnosis
from ascendprep.run.bundle import BundleError, read_bundle, read_saved_verdict
from ascendprep.run.common import fail_input, stderr_console
from ascendprep.verify.knowledge import knowledge

#: Folder names that mean "this folder holds one node's logs" in a plain tree.
_LOG_FOLDERS = {"plog", "debug", "run", "log", "logs", "device_log", "process_log", "console", "hisi_logs"}
_BUNDLE_KINDS = {"plog": PLOG, "device": DEVICE, "console": CONSOLE}


@dataclass
class Tree:
    """The files found under the directories given, and those skipped."""

    files: List[Tuple[Path, LogFile]] = field(default_factory=list)
    states: Dict[str, Path] = field(default_factory=dict)
    skipped: List[Skipped] = field(default_factory=list)


def _bundle_manifest(root: Path) -> Optional[Dict[str, Any]]:
    manifest = root / "manifest.json"
    if not manifest.is_file():
        return None
    data = read_json_file(manifest)
    if not isinstance(data, dict) or data.get("kind") != "ascendprep-collect":
        return None
    if data.get("schema_version") != 1:
        raise InputError([Located(str(manifest), None, "schema_version", "not a collect bundle of schema_version 1")])
    return data


def _is_one_node(root: Path) -> bool:
    """A folder whose own entries are logs or log folders is one node's folder."""
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise InputError([Located(str(root), None, "", f"cannot read the folder: {exc.strerror}")]) from None
    for entry in entries:
        if entry.is_file(follow_symlinks=False):
            kind, _pid, _rank = kind_of(entry.name, b"")
            if kind is not None or entry.name.startswith("plog-"):
                return True
        elif entry.is_dir(follow_symlinks=False) and (entry.name in _LOG_FOLDERS or entry.name.startswith("device-")):
            return True
    return False


def _walk(root: Path, tree: Tree, limit: int) -> None:
    """Every regular file under ``root`` (links inside the tree to files followed, links to
    folders and links out of the tree named and skipped), as (path, relative parts)."""
    manifest = _bundle_manifest(root)
    cut: Dict[Tuple[str, str], bool] = {}
    if manifest is not None:
        for node, record in (manifest.get("nodes") or {}).items():
            if not isinstance(record, dict):
                continue
            if record.get("status") == "failed":
                tree.skipped.append(
                    Skipped(f"nodes/{node}", f"collect could not read this node: {record.get('error')}")
                )
            for item in record.get("files") or []:
                if isinstance(item, dict) and isinstance(item.get("path"), str):
                    cut[(str(node), item["path"])] = bool(item.get("cut"))
    one_node = manifest is None and _is_one_node(root)
    real_root = os.path.realpath(root)
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                tree.skipped.append(Skipped(str(here / name), "a link to a folder: not followed"))
        dirs.sort()
        for name in sorted(names):
            path = here / name
            rel = path.relative_to(root)
            if path.is_symlink():
                target = os.path.realpath(path)
                if os.path.commonpath([real_root, target]) != real_root:
                    tree.skipped.append(Skipped(str(path), f"a link out of the tree (to {target}): not read"))
                    continue
            if not path.is_file():
                tree.skipped.append(Skipped(str(path), "not a regular file"))
                continue
            if manifest is not None:
                _bundle_file(root, rel, path, tree, cut)
            else:
                node = root.resolve().name if one_node or len(rel.parts) == 1 else rel.parts[0]
                _plain_file(path, rel, node, tree)
            if len(tree.files) > limit:
                raise InputError([Located(str(root), None, "", f"more than {limit:,} log files; give a smaller tree")])


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (a FIFO or device put in its place after
    the walk is refused at once, never waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _head(path: Path) -> bytes:
    with open_regular(path) as handle:
        return handle.read(HEAD_BYTES)


def _classified(path: Path, rel: Path, node: str, tree: Tree, cut: bool = False, forced: Optional[str] = None) -> None:
    try:
        head = _head(path)
    except OSError as exc:
        tree.skipped.append(Skipped(str(path), f"cannot be read: {exc.strerror}"))
        return
    if head[:2] == b"\x1f\x8b":
        tree.skipped.append(Skipped(str(path), "compressed (gzip): unpack it first"))
        return
    if b"\x00" in head:
        tree.skipped.append(Skipped(str(path), "binary (NUL bytes at its start): not a log"))
        return
    under_device = any(
        part == "device" or part.startswith("device-") or part == "device_log" for part in rel.parts[:-1]
    )
    kind, pid, rank = kind_of(path.name, head, under_device)
    if forced is not None:
        kind = forced
    if kind is None:
        tree.skipped.append(
            Skipped(str(path), "not a log diagnose reads (its name and first lines match no known kind)")
        )
        return
    tree.files.append((path, LogFile(str(path), node, kind, pid, rank, cut)))


def _plain_file(path: Path, rel: Path, node: str, tree: Tree) -> None:
    if path.name == "state.json":
        tree.states[node] = path
        return
    _classified(path, rel, node, tree)


def _bundle_file(root: Path, rel: Path, path: Path, tree: Tree, cut: Dict[Tuple[str, str], bool]) -> None:
    parts = rel.parts
    if parts == ("manifest.json",):
        return
    if len(parts) < 3 or parts[0] != "nodes":
        tree.skipped.append(Skipped(str(path), "outside nodes/<node>/ of a collect bundle"))
        return
    node, inner = parts[1], Path(*parts[2:])
    if inner.parts == ("state.json",):
        tree.states[node] = path
        return
    forced = (
        KERNEL
        if inner.parts == ("kernel.log",)
        else _BUNDLE_KINDS.get(inner.parts[0])
        if len(inner.parts) > 1
        else None
    )
    if forced == PLOG and any(part.startswith("device-") for part in inner.parts[:-1]):
        forced = DEVICE
    _classified(path, inner, node, tree, cut.get((node, inner.as_posix()), False), forced)


def read_trees(roots: Sequence[Path], limit: int = DIAGNOSE_MAX_FILES) -> Tree:
    tree = Tree()
    for root in roots:
        if not root.is_dir():
            raise InputError([Located(str(root), None, "", "not a folder (give a collect bundle or a folder of logs)")])
        _walk(root, tree, limit)
    return tree


_SCANNER: Optional[Scanner] = None


def _scan_files(batch: List[Tuple[Path, LogFile]]) -> Tuple[List[Event], Dict[str, FileStats], List[Skipped]]:
    """Scan ``batch`` (in a worker process, or here): its events in file order, its stats, and
    the files that could not be read."""
    global _SCANNER
    if _SCANNER is None:
        _SCANNER = Scanner(knowledge())
    events: List[Event] = []
    stats: Dict[str, FileStats] = {}
    unread: List[Skipped] = []
    for path, log in batch:
        try:
            with open_regular(path) as handle:
                stats[log.path] = _SCANNER.scan(handle, log, events.append)
        except OSError as exc:
            unread.append(Skipped(str(path), f"cannot be read: {exc.strerror}"))
    return events, stats, unread


def _batches(files: List[Tuple[Path, LogFile]], count: int) -> List[List[Tuple[Path, LogFile]]]:
    """``files`` in ``count`` batches of about equal bytes, each in the tree's order."""
    sizes = []
    for path, _log in files:
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            sizes.append(0)
    share = max(1, sum(sizes) // count)
    batches: List[List[Tuple[Path, LogFile]]] = [[]]
    held = 0
    for item, size in zip(files, sizes):
        if held >= share and len(batches) < count:
            batches.append([])
            held = 0
        batches[-1].append(item)
        held += size
    return batches


def _size(path: Path) -> int:
    """Bytes of ``path``; 0 when it cannot be looked at (the scan names it when it opens it)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan_tree(tree: Tree, workers: Optional[int] = None) -> Tuple[List[Event], Dict[str, FileStats]]:
    """Every event of every file, in file order; a file that cannot be read is named, not fatal.
    A tree over :data:`~ascendprep.base.limits.DIAGNOSE_PARALLEL_MIN_BYTES` is read by one
    process per core (each file by one process, start to end)."""
    total = sum(_size(path) for path, _log in tree.files)
    count = workers if workers is not None else min(os.cpu_count() or 1, DIAGNOSE_MAX_WORKERS)
    if count <= 1 or total < DIAGNOSE_PARALLEL_MIN_BYTES or len(tree.files) < 2:
        events, stats, unread = _scan_files(tree.files)
        tree.skipped.extend(unread)
        return events, stats
    events = []
    stats = {}
    with ProcessPoolExecutor(max_workers=count) as pool:
        for part_events, part_stats, unread in pool.map(_scan_files, _batches(tree.files, count * 4)):
            events.extend(part_events)
            stats.update(part_stats)
            tree.skipped.extend(unread)
    return events, stats


def inventory_ips(inventory_path: Optional[Path]) -> Dict[str, Tuple[str, int]]:
    """device IP -> (node, NPU) of the inventory's desired state."""
    if inventory_path is None:
        return {}
    desired = build_desired(load_inventory(inventory_path))
    return {hccn.ip: (name, hccn.npu) for name, node in desired.nodes.items() for hccn in node.hccn}


def collected_state(tree: Tree) -> Tuple[Dict[Tuple[str, int], int], Dict[str, Tuple[str, int]], Dict[str, HostFacts]]:
    """From each node's ``state.json``: the TLS switch per (node, NPU), device IP -> (node, NPU),
    and the facts themselves. A state that cannot be read is named among the skipped files."""
    tls: Dict[Tuple[str, int], int] = {}
    ips: Dict[str, Tuple[str, int]] = {}
    facts: Dict[str, HostFacts] = {}
    for node, path in sorted(tree.states.items()):
        try:
            host = HostFacts.from_dict(read_json_file(path))
        except (InputError, ValueError, TypeError, KeyError) as exc:
            tree.skipped.append(Skipped(str(path), f"the NPU state cannot be read: {str(exc).splitlines()[0][:200]}"))
            continue
        facts[node] = host
        for devid, npu in host.npus.items():
            if npu.tls is not None and npu.tls.switch is not None:
                tls[(node, devid)] = 1 if npu.tls.enabled else 0
            if npu.ip:
                ips[npu.ip] = (node, devid)
    return tls, ips, facts


@dataclass
class Baseline:
    """A verify run made before the job: its findings, the nodes it read, and their facts (a
    bundle holds facts; the ``--format json`` output does not)."""

    path: str
    findings: List[Finding]
    nodes: List[str]
    facts: Dict[str, Optional[HostFacts]] = field(default_factory=dict)


def _findings(doc: Any, where: str) -> List[Finding]:
    if not isinstance(doc, dict) or doc.get("kind") != "verify" or not isinstance(doc.get("findings"), list):
        raise InputError([Located(where, None, "", "not the --format json output of ascendprep verify (kind: verify)")])
    try:
        return [Finding.from_dict(item) for item in doc["findings"]]
    except (TypeError, ValueError, KeyError) as exc:
        raise InputError([Located(where, None, "findings", f"a finding that cannot be read: {exc}")]) from None


def read_baseline(path: Path) -> Baseline:
    """A verify bundle folder (the findings it saved then, and its hosts' facts) or a ``verify
    --format json`` file (its findings; it holds no facts, so no drift is judged)."""
    if path.is_dir():
        try:
            bundle = read_bundle(path)
            verdict = read_saved_verdict(path)
        except BundleError as exc:
            raise InputError([Located(str(path), None, "", f"not a verify bundle that can be read: {exc}")]) from None
        facts = {name: host.facts for name, host in bundle.hosts.items()}
        return Baseline(str(path), _findings(verdict, str(path / "results.json")), sorted(bundle.hosts), facts)
    doc = read_json_file(path)
    nodes = doc.get("hosts") if isinstance(doc, dict) else None
    return Baseline(str(path), _findings(doc, str(path)), sorted(str(name) for name in (nodes or {})))


def baseline_notes(result: Diagnosis, baseline: Baseline, now: Dict[str, HostFacts]) -> None:
    for job in result.jobs:
        culprits = list(job.verdict.culprits) if job.verdict else []
        for culprit in culprits:
            note = note_for(culprit, baseline.findings, baseline.nodes, baseline.facts, now)
            if note is not None:
                job.baseline.append(note)


def run_diagnose(
    roots: Sequence[Path],
    inventory: Optional[Path],
    output_format: str,
    baseline_path: Optional[Path] = None,
    html: Optional[Path] = None,
) -> int:
    """Diagnose the trees; the exit code: a root named (0), no root decided (1), bad input (2)."""
    try:
        tree = read_trees(roots)
        ips = inventory_ips(inventory)
        baseline = read_baseline(baseline_path) if baseline_path is not None else None
    except InputError as error:
        fail_input(error)
    if not tree.files:
        fail_input(
            InputError([Located(", ".join(map(str, roots)), None, "", "no log diagnose can read in the tree(s)")])
        )
    events, stats = scan_tree(tree)
    tls, state_ips, now = collected_state(tree)
    resolved = {**state_ips, **ips}
    jobs = diagnose(events, [log for _p, log in tree.files], knowledge(), resolved, tls, stats)
    result = Diagnosis(jobs, [log for _p, log in tree.files], tree.skipped, stats)
    if baseline is not None:
        baseline_notes(result, baseline, now)
    if output_format == "json":
        write_json_diagnosis(result, sys.stdout)
    else:
        print_diagnosis(result)
    code = exitcodes.ROOT_NAMED if result.decided else exitcodes.NO_ROOT_DECIDED
    if html is not None:
        try:
            write_file(html, render_html(result), mode=0o600)  # log lines: the job's own evidence
        except OSError as exc:
            stderr_console().print(
                f"[bold red]error:[/] --html {markup_safe(str(html))}: {markup_safe(str(exc.strerror or exc))}",
                soft_wrap=True,
            )
            code = exitcodes.FAILED
    return code
