"""The evidence bundle: everything a verify run saw, saved so the verdict can be re-derived offline.

Every run writes ``.ascendprep/runs/<UTC timestamp>/``::

    run.json             what ran: inventory path + sha256, mesh, selection, ping plan, per-host
                         outcomes (error kinds, seconds, SSH execs), the date, all-reduce findings
    inventory.yaml       a copy of the inventory text as it was
    hosts/<kind>.gz      every host's raw transcript of one kind, each host's a gzip member of
                         its own, appended as hosts answer; run.json's per-host "files" gives
                         its [offset, length]: gather.out and gather.err (the gather script;
                         .err only when not empty), ping.out and ping.err (the pings; .err only
                         when not empty), hccs.out (A3: the HCCS pings)
    hosts/<node>.facts.json.gz
                         the parsed facts, only for a host a person will look at: one with a
                         failed check or an error (:func:`facts_wanted`)
    results.json         the verdict (report.verify.bundle_document): verify's --format json
                         document, but its "checks" only the results that did not pass (in
                         full), the passed ones counted per check under "passed" (how many, on
                         which nodes), and "full": the --from-bundle command that gives every
                         result with its evidence
    allreduce.json       the all-reduce outcome, with --allreduce

A *node bundle* (``verify --local``) has the same layout with one host; run.json names it
(``"local_node"``), ties it to the machine that wrote it (``"node_tie"``, :class:`NodeTie`) and
its ping plan holds the pairs that node pinged from its end. Written with
``--bundle-dir DIR``, it goes to DIR itself (replacing that node's earlier bundle there, never
anything else) and DIR's parent is left as it is (it may be a shared folder).

The transcripts are appended to one file per kind, not written as a file per host (schema 2,
``hosts/node1.gather.out.gz``): creating a file costs far more kernel CPU than an append, two
per host, and on a large fleet the files per host cost more than the checks. ``zcat
hosts/gather.out.gz`` prints every host's transcript. Bundles of schema 2 and of schema 1
(``hosts/<node>/gather.out.gz``, every ``.err`` written) are still read.

``--from-bundle`` re-parses the raw transcripts (not facts.json, which is for people), rebuilds the
desired state from the inventory copy, and runs the checks on the recorded date: the same
evidence gives the same findings, with no SSH. Since nothing reads facts.json back, it is written
only where a person will look (a host with a failed check or an error), at the end of the run:
for every host it would be one more encoding, gzip and file per host that nobody reads.

A live run writes it while it goes (:class:`BundleWriter`): each host's transcripts gzip'd as
soon as that host has answered and written :data:`~ascendprep.base.limits.BUNDLE_APPEND_BUFFER_BYTES`
at a time, into ``.<name>.<pid>@<host>.partial``, renamed to ``<name>`` only when the
rest (run.json, the inventory copy, results.json) is written; a run that stops removes it, and
one that was killed before it could is cleaned up after by the next run (:func:`stale_partials`).

Bundles hold host facts: folders are 0700 and files 0600, written without following links. Every
file but run.json and inventory.yaml is gzip'd (``gather.out.gz``; ``zcat`` reads it), and only
the newest :data:`~ascendprep.base.limits.KEEP_RUNS_DEFAULT` runs are kept (``verify --keep-runs``).

A bundle handed to ``--from-bundle`` is hostile input: only the files named above are read, by
names checked against the inventory's name rule, never through a symbolic link, never outside the
folder, never a FIFO or device, a member only where it lies whole inside its file and apart from
every other host's (checked before anything is decompressed), never more than
:data:`~ascendprep.base.limits.BUNDLE_FILE_MAX_BYTES` a file and
:data:`~ascendprep.base.limits.BUNDLE_READ_MAX_BYTES` in all (decompressed; per bundle, and per merge
of node bundles); its JSON has the inventory's depth limit and refuses numbers out of range
(:mod:`ascendprep.base.jsoninput`), and every field is read for its shape (:class:`_Fields`), so a
crafted value is an error naming the file and the JSON path. Bundles written before compression
(plain ``gather.out``) are still read.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import stat
import threading
import zlib
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from ascendprep import __version__
from ascendprep.base.findings import Finding, Severity
from ascendprep.base.jsoninput import parse_json
from ascendprep.base.limits import (
    BUNDLE_APPEND_BUFFER_BYTES,
    BUNDLE_FILE_MAX_BYTES,
    BUNDLE_READ_MAX_BYTES,
    BUNDLE_SPACE_CHECK_BYTES,
    KEEP_RUNS_DEFAULT,
    RUNS_LOW_DISK_BYTES,
)
from ascendprep.base.outputfile import NewFiles, ensure_dir, make_dir
from ascendprep.base.yamlsource import InputError
from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.hccs import parse_hccs_output
from ascendprep.facts.ping import parse_ping_output
from ascendprep.plan.planfile import STATE_DIR
from ascendprep.report import jsondoc
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.model import CheckResult, Status
from ascendprep.verify.mesh import MESHES, Endpoint, PingPair, PingPlan

#: 3: every host's transcript of one kind is a gzip member of ``hosts/<kind>.gz`` (run.json
#: gives each host's offset and length); facts.json stays ``hosts/<node>.facts.json.gz``.
BUNDLE_SCHEMA_VERSION = 3
#: The versions :func:`read_bundle` reads (1: ``hosts/<node>/<file>``, every ``.err`` written;
#: 2: ``hosts/<node>.<file>``, an empty ``.err`` not written).
READABLE_SCHEMA_VERSIONS = (1, 2, 3)
BUNDLE_KIND = "ascendprep-verify-bundle"
RUNS_DIR = Path(STATE_DIR) / "runs"
RUN_FILE = "run.json"
INVENTORY_COPY = "inventory.yaml"
RESULTS_FILE = "results.json"
ALLREDUCE_FILE = "allreduce.json"
#: Suffix of the compressed files of a bundle.
GZ = ".gz"
#: What a host's name in a file name may be: the inventory's node-name rule (no "/", no "..").
#: ``<node>.<file>`` cannot name another host's file: no file name is a "."-suffix of another.
HOST_DIR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: A run folder's name, as :func:`new_bundle_dir` makes it; retention only ever removes these.
RUN_DIR_RE = re.compile(r"^(?P<stamp>\d{8}T\d{6}Z)(?:-(?P<count>\d{1,6}))?$")
#: A partial folder's name (:func:`partial_dir`): the bundle's name, the pid and host of its run.
PARTIAL_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d{1,10})@(?P<host>[A-Za-z0-9.-]{1,64})\.partial$")
DIR_MODE = 0o700
FILE_MODE = 0o600
#: gzip level of the compressed files: 1 takes a fraction of level 6's CPU on gather transcripts
#: for ~15% more bytes (7.0 vs 6.1 KB per 8-NPU host), and the level is much of the bundle's CPU.
GZIP_LEVEL = 1


class BundleError(ValueError):
    """A bundle that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class NodeTie:
    """What ties a node bundle (``verify --local``) to the machine that wrote it, recorded in
    run.json as ``node_tie``: the node it was run as, the machine's host name and a digest of its
    ``/etc/machine-id`` (None where it has none), and the inventory's sha256.
    :func:`ascendprep.run.bundlemerge.check_compatible` refuses a merge where one machine wrote
    two nodes' bundles, or a node's bundle was written on another inventory node's machine. It is
    a record, not a signature: whoever can edit a bundle can edit it too."""

    node: str
    hostname: str
    machine_id: Optional[str]
    inventory_sha256: str

    def to_dict(self) -> Dict[str, Optional[str]]:
        return {
            "node": self.node,
            "hostname": self.hostname,
            "machine_id": self.machine_id,
            "inventory_sha256": self.inventory_sha256,
        }


@dataclass
class Bundle:
    """A verify run's evidence, as written or as read back."""

    inventory_path: str
    inventory_text: str
    hosts: Dict[str, HostEvidence]
    pings: Optional[PingPlan]
    mesh: str
    selection: Dict[str, List[str]]
    day: date
    created: str = ""
    ssh_execs: Dict[str, int] = field(default_factory=dict)
    allreduce_findings: List[Finding] = field(default_factory=list)
    #: The all-reduce outcome document (``allreduce.json``), when one ran.
    allreduce_doc: Optional[Dict[str, Any]] = None
    path: Optional[Path] = None
    #: A node bundle's node (``verify --local``); None for a whole run's bundle.
    local_node: Optional[str] = None
    #: A node bundle's record of the machine that wrote it (None: a whole run's, or an older one).
    node_tie: Optional[NodeTie] = None
    #: What bundle_size encoded, kept for write_bundle so nothing is encoded twice: per host whose
    #: facts.json is written its gzip'd text, and (id of the report, its length, its gzip'd text).
    _facts_gz: Dict[str, "tuple[int, bytes]"] = field(default_factory=dict, repr=False, compare=False)
    _report_gz: Optional["tuple[int, int, bytes]"] = field(default=None, repr=False, compare=False)

    @property
    def inventory_sha256(self) -> str:
        return hashlib.sha256(self.inventory_text.encode()).hexdigest()


#: The files a host may have in ``hosts/`` (before ``.gz``). As ``<node>.<file>`` with node names
#: that may hold dots, none may end in "." + another, or two hosts could name the same file.
HOST_FILES = ("gather.out", "gather.err", "facts.json", "ping.out", "ping.err", "hccs.out")
#: Host files written only when not empty (a reader takes a missing one as empty).
OPTIONAL_HOST_FILES = frozenset({"gather.err", "ping.err"})
#: The transcripts that schema 3 appends to one file per kind (``hosts/gather.out.gz``...).
STREAMS = ("gather.out", "gather.err", "ping.out", "ping.err", "hccs.out")


def facts_wanted(results: Iterable[CheckResult], hosts: Dict[str, HostEvidence]) -> List[str]:
    """The hosts whose facts.json the bundle holds: those a person will look at, with a check
    result on the host neither passed nor skipped, or an error (gather, pings, HCCS pings)."""
    passed, skipped = Status.PASSED, Status.SKIPPED
    flagged = {r.node for r in results if r.status is not passed and r.status is not skipped}
    return [
        name
        for name, host in hosts.items()
        if host.facts is not None and (name in flagged or host.error or host.ping_error or host.hccs_error)
    ]


def host_file_name(name: str, stem: str) -> str:
    """A host's own file in ``hosts/`` (before ``.gz``): ``node1.facts.json``; schema 2 also
    ``node1.gather.out`` (schema 3 appends transcripts to ``hosts/gather.out.gz``)."""
    return f"{name}.{stem}"


def _host_file(name: str, stem: str, version: int) -> str:
    """A host file's path in a bundle of schema ``version``, relative to the bundle."""
    return f"hosts/{name}/{stem}" if version == 1 else f"hosts/{host_file_name(name, stem)}"


def _host_record(
    host: HostEvidence, execs: Optional[int], members: Optional[Dict[str, List[int]]] = None
) -> Dict[str, Any]:
    return {
        "address": host.address,
        "gathered": host.facts is not None,
        "error": host.error,
        "error_kind": host.error_kind,
        "seconds": host.seconds,
        "ping": {"ran": host.pings is not None, "error": host.ping_error, "seconds": host.ping_seconds}
        if (host.pings is not None or host.ping_error is not None)
        else None,
        # A3: the HCCS pings of this node (fleet/hccs.py), their transcript in hccs.out
        "hccs": {"ran": host.hccs_pings is not None, "error": host.hccs_error}
        if (host.hccs_pings is not None or host.hccs_error is not None)
        else None,
        "ssh_execs": execs,
        # where its transcripts lie: per kind, [offset, length] of its gzip member in hosts/<kind>.gz
        "files": members or {},
    }


def new_bundle_dir(runs_dir: Path = RUNS_DIR, now: Optional[datetime] = None) -> Path:
    """``runs_dir/<UTC timestamp>`` that does not exist yet (``-2``, ``-3``... within one second)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    candidate, count = runs_dir / stamp, 1
    busy = _partial_names(runs_dir)
    while candidate.exists() or candidate.name in busy:
        count += 1
        candidate = runs_dir / f"{stamp}-{count}"
    return candidate


def _this_host() -> str:
    """This machine's name as a partial folder's name carries it (other characters as ``-``)."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", os.uname().nodename)[:64] or "localhost"


def partial_dir(target: Path) -> Path:
    """Where the bundle ``target`` is written until complete: ``.<name>.<pid>@<host>.partial``
    beside it, naming the run that writes it, so that a later run can tell a folder left by a
    run that was killed (its process gone) from one still being written."""
    return target.parent / f".{target.name}.{os.getpid()}@{_this_host()}.partial"


def _partial_names(folder: Path) -> set:
    """The bundle names that partial folders in ``folder`` are for (older ``.<name>.partial`` too)."""
    try:
        entries = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    names = set()
    for entry in entries:
        match = PARTIAL_RE.match(entry)
        if match:
            names.add(match.group("name"))
        elif entry.startswith(".") and entry.endswith(".partial"):
            names.add(entry[1 : -len(".partial")])
    return names


def _process_gone(pid: int) -> bool:
    """No process ``pid`` runs on this machine (one of another user's answers EPERM: it runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def stale_partials(folder: Path, ours: Callable[[str], bool]) -> List[Path]:
    """Partial folders in ``folder`` that runs which stopped without cleaning up (SIGKILL, a
    crash, a power cut) left: named as :func:`partial_dir` names them for a bundle name that
    ``ours`` accepts, written on this machine, by a process that no longer runs, a real folder
    owned by this user. Anything else (another machine's, another user's, a live run's, a link,
    a name of another pattern) is never listed."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    host, me = _this_host(), os.geteuid()
    stale = []
    for entry in entries:
        match = PARTIAL_RE.match(entry.name)
        if not match or match.group("host") != host or not ours(match.group("name")):
            continue
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == me and _process_gone(int(match.group("pid"))):
            stale.append(Path(entry.path))
    return sorted(stale)


class _Stream:
    """One ``hosts/<kind>.gz`` being appended to: its descriptor, its length so far (written and
    pending) and the members not written yet (BundleWriter._append; used under its lock)."""

    __slots__ = ("fd", "length", "pending")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.length = 0
        self.pending = bytearray()

    def flush(self) -> None:
        view = memoryview(self.pending)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        finally:
            view.release()  # the last slice: until released, ``pending`` cannot be cleared
        self.pending.clear()


class BundleWriter:
    """A bundle written while verify runs, into the hidden ``.<name>.partial`` folder.

    Each host's raw transcripts are gzip'd as soon as that host's phase is done (:meth:`keep`)
    and written a buffer at a time (:meth:`_append`), and the host evidence the run holds on to drops the transcripts: at 4,096
    hosts they were ~250 MB held to the end only to be written. :func:`write_bundle` adds the rest
    (what was not written yet, run.json, the inventory copy, results.json) and renames the folder
    to its name. Until then no folder is named as a complete bundle; a run that stops (Ctrl-C, an
    error) calls :meth:`abandon`, which removes the partial folder.
    """

    def __init__(self, target: Path, chosen_dir: bool = False, local_node: Optional[str] = None) -> None:
        self.target = target
        self.partial = partial_dir(target)
        self.chosen_dir = chosen_dir
        self.local_node = local_node
        #: Why no bundle is being written (the warning to show), or None.
        self.problem: Optional[str] = None
        #: Per host, the files (``gather.out``, ``ping.out``...) already written.
        self.written: Dict[str, set] = {}
        self._open = False
        #: keep() runs in the gather's worker threads, one host each; giving up is done once.
        self._lock = threading.Lock()
        #: Bytes that may still be written before the free space is checked again, and its lock.
        self._room = 0
        self._room_lock = threading.Lock()
        self.files = NewFiles(FILE_MODE)
        #: Partial folders of runs that stopped, removed by :meth:`open` (the run says so).
        self.removed_stale: List[Path] = []
        #: Those that could not be removed, and why.
        self.stale_problems: List[str] = []
        #: Per host, per kind: [offset, length] of its member in ``hosts/<kind>.gz`` (run.json).
        self.members: Dict[str, Dict[str, List[int]]] = {}
        #: The open ``hosts/<kind>.gz`` files; appends are made under the lock.
        self._streams: Dict[str, _Stream] = {}
        self._stream_lock = threading.Lock()

    def open(self) -> None:
        """Make the partial folder, after removing those that runs which stopped left beside it
        (:func:`stale_partials`: of this bundle's name with ``--bundle-dir``, else of any run)."""
        if self.chosen_dir:
            check_bundle_target(self.target, self.local_node)
        else:
            ensure_dir(self.target.parent, DIR_MODE, tighten=True)  # the runs folder (a link to one is used as it is)
        name = self.target.name
        self._remove_stale(
            stale_partials(
                self.target.parent,
                (lambda other: other == name)
                if self.chosen_dir
                else (lambda other: RUN_DIR_RE.match(other) is not None),
            )
        )
        # Left by an earlier process of this pid (not running: this one is it), or named as
        # earlier versions named it: not in use either way.
        for leftover in (self.partial, self.target.parent / f".{name}.partial"):
            if leftover.is_symlink():
                leftover.unlink()
            elif leftover.exists():
                shutil.rmtree(leftover)
        make_dir(self.partial, DIR_MODE)
        self._open = True
        make_dir(self.partial / "hosts", DIR_MODE)

    def _remove_stale(self, folders: List[Path]) -> None:
        for folder in folders:
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                self.stale_problems.append(f"{folder}: {exc.strerror or exc}")
            else:
                self.removed_stale.append(folder)

    def keep(self, host: HostEvidence) -> HostEvidence:
        """Write what ``host`` holds that is not written yet; returns the host without its raw
        transcripts (they are in the bundle, or the bundle was given up). A failure gives the
        bundle up (:attr:`problem`), never the run."""
        if not self._open and self.problem is None:
            return host
        if self.problem is None:
            needed = sum(
                len(text)
                for text in (
                    host.gather_stdout,
                    host.gather_stderr,
                    host.ping_stdout,
                    host.ping_stderr,
                    host.hccs_stdout,
                )
            )
            refusal = self._reserve(needed)
            if refusal is not None:
                self.give_up(refusal)
            else:
                try:
                    self.write_host(host.node, host)
                except (OSError, ValueError) as exc:
                    self.give_up(f"the evidence bundle could not be saved in {self.target}: {exc}")
        return replace(host, gather_stdout="", gather_stderr="", ping_stdout="", ping_stderr="", hccs_stdout="")

    def _reserve(self, needed: int) -> Optional[str]:
        """Room for ``needed`` more bytes, or why not. The free space is read only when what the
        last reading proved is used up: it proves :data:`BUNDLE_SPACE_CHECK_BYTES` beyond the
        host at hand when the disk has that much (not a statvfs per host), else just what it
        found."""
        with self._room_lock:
            if needed > self._room:
                disk = check_free_space(self.partial, needed, low=0)
                if not disk.write:
                    return disk.warning or "the evidence bundle was not saved"
                free = disk.free if disk.free is not None else needed
                self._room = min(free, needed + BUNDLE_SPACE_CHECK_BYTES)
            self._room -= needed
        return None

    def write_host(self, name: str, host: HostEvidence) -> None:
        """The transcripts ``host`` holds, each appended once to ``hosts/<kind>.gz`` as a gzip
        member of its own (:meth:`_append`); an empty stderr is not written. facts.json is
        :func:`write_bundle`'s, for some hosts only."""
        if not HOST_DIR_RE.match(name):
            raise ValueError(f"node name {name!r} cannot name a bundle file")
        done = self.written.setdefault(name, set())
        files: List["tuple[str, Any]"] = []
        if host.facts is not None and "gather.out" not in done:
            files += [("gather.out", host.gather_stdout), ("gather.err", host.gather_stderr)]
        if host.pings is not None and "ping.out" not in done:
            files += [("ping.out", host.ping_stdout), ("ping.err", host.ping_stderr)]
        if host.hccs_pings is not None and "hccs.out" not in done:
            files += [("hccs.out", host.hccs_stdout)]
        for stem, content in files:
            if content or stem not in OPTIONAL_HOST_FILES:
                member = self._append(stem, _gzip(content.encode("utf-8")))
                self.members.setdefault(name, {})[stem] = member
            done.add(stem)

    def _append(self, stem: str, data: bytes) -> List[int]:
        """``data`` at the end of ``hosts/<stem>.gz`` (made on first use); its [offset, length].

        One file per kind, not one per host: creating a file costs far more kernel CPU than an
        append, and there would be two per host. The members are gathered in memory and written
        :data:`BUNDLE_APPEND_BUFFER_BYTES` at a time (~35 hosts' transcripts): a write per member,
        in 64 workers, cost more per host (each write lets go of the GIL and waits to take it back)."""
        with self._stream_lock:
            stream = self._streams.get(stem)
            if stream is None:
                fd = self.files.create(f"{self.partial}/hosts/{stem}{GZ}")
                stream = self._streams[stem] = _Stream(fd)
            offset = stream.length
            stream.pending += data
            stream.length += len(data)
            if len(stream.pending) >= BUNDLE_APPEND_BUFFER_BYTES:
                stream.flush()
        return [offset, len(data)]

    def close_streams(self, flush: bool = False) -> None:
        """Close the ``hosts/<kind>.gz`` files, with what they still hold in memory written first
        when ``flush`` (the bundle is put in place), dropped otherwise (it is removed)."""
        with self._stream_lock:
            streams, self._streams = self._streams, {}
        try:
            if flush:
                for stream in streams.values():
                    stream.flush()
        finally:
            for stream in streams.values():
                os.close(stream.fd)

    def give_up(self, problem: str) -> None:
        """No bundle this run: say why (the first problem), and remove what was written."""
        with self._lock:
            if self.problem is None:
                self.problem = problem
        self.abandon()

    def abandon(self) -> None:
        """Remove the partial folder, if this writer made it and it was not put in place."""
        self.close_streams()
        with self._lock:
            if not self._open:
                return
            self._open = False
            if self.partial.is_symlink():
                self.partial.unlink()
            elif self.partial.exists():
                shutil.rmtree(self.partial, ignore_errors=True)


def write_bundle(
    bundle: Bundle,
    target: Path,
    report: Dict[str, Any],
    chosen_dir: bool = False,
    writer: Optional[BundleWriter] = None,
    results: Sequence[CheckResult] = (),
) -> Path:
    """Write ``bundle`` to ``target`` (through a hidden partial dir renamed at the end).

    ``results``: the run's check results; the hosts they fail (and hosts with an error) get their
    facts.json (:func:`facts_wanted`).

    ``chosen_dir``: ``target`` is the user's ``--bundle-dir``: its parent must exist and is not
    tightened, and an earlier bundle there (:func:`check_bundle_target`) is replaced.
    ``writer``: the run's :class:`BundleWriter`, which already holds some hosts' files (they are
    not written again); without it one is opened here. On any failure the partial folder is removed.
    """
    if writer is None:
        writer = BundleWriter(target, chosen_dir, bundle.local_node)
    if writer.problem is not None:
        raise OSError(writer.problem)
    if not writer._open:
        writer.open()
    try:
        _write_rest(bundle, writer, report, results)
        writer.close_streams(flush=True)
        _put_in_place(writer.partial, target)
    except BaseException:
        writer.abandon()
        raise
    writer._open = False
    bundle.path = target
    return target


def _write_rest(bundle: Bundle, writer: BundleWriter, report: Dict[str, Any], results: Sequence[CheckResult]) -> None:
    partial = writer.partial
    for name, host in bundle.hosts.items():
        writer.write_host(name, host)  # first: run.json records where each host's members lie
    run = {
        "schema_version": BUNDLE_SCHEMA_VERSION,
        "kind": BUNDLE_KIND,
        "ascendprep_version": __version__,
        "created": bundle.created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "date": bundle.day.isoformat(),
        "inventory": {"path": bundle.inventory_path, "sha256": bundle.inventory_sha256, "copy": INVENTORY_COPY},
        "mesh": bundle.mesh,
        "selection": bundle.selection,
        "pings": bundle.pings.to_dict() if bundle.pings is not None else None,
        "hosts": {
            name: _host_record(host, bundle.ssh_execs.get(name), writer.members.get(name))
            for name, host in bundle.hosts.items()
        },
        "allreduce_findings": [f.to_dict() for f in bundle.allreduce_findings],
    }
    if bundle.local_node is not None:
        run["local_node"] = bundle.local_node
    if bundle.node_tie is not None:
        run["node_tie"] = bundle.node_tie.to_dict()
    files = writer.files
    files.write(partial / RUN_FILE, b"".join(jsondoc.json_lines(run)))  # one key per line, values compact
    files.write(partial / INVENTORY_COPY, bundle.inventory_text.encode("utf-8"))
    for name in facts_wanted(results, bundle.hosts):
        files.write(
            partial / "hosts" / (host_file_name(name, "facts.json") + GZ),
            _facts_gz(bundle, name, bundle.hosts[name])[1],
        )  # encoded by bundle_size: not again
    files.write(partial / (RESULTS_FILE + GZ), _report_gz(bundle, report)[1])
    if bundle.allreduce_doc is not None:
        # by the bundle's one encoder: a non-finite figure is null, which --from-bundle's strict reader takes (NaN it refuses)
        files.write(partial / (ALLREDUCE_FILE + GZ), _gzip(b"".join(jsondoc.json_lines(bundle.allreduce_doc))))


def check_bundle_target(target: Path, node: Optional[str] = None) -> None:
    """``--bundle-dir``: refuse anything but a new folder in an existing one, an empty folder, or
    an earlier bundle (run.json of this kind) of ``node``; raise :class:`BundleError` saying which.
    Another node's bundle is refused too: replacing it would lose that node's evidence."""
    if not target.parent.is_dir():
        raise BundleError(f"--bundle-dir {target}: {target.parent} is not an existing folder")
    if not os.path.lexists(target):
        return
    if target.is_symlink() or not target.is_dir():
        raise BundleError(
            f"--bundle-dir {target}: exists and is not a folder; refused (give a new or empty folder, or an earlier bundle)"
        )
    entries = os.listdir(target)
    if not entries:
        return
    try:
        run = _read_json(target.resolve(), RUN_FILE)
    except (BundleError, FileNotFoundError):
        run = None
    if not isinstance(run, dict) or run.get("kind") != BUNDLE_KIND:
        raise BundleError(
            f"--bundle-dir {target}: a folder holding other files than a verify bundle; refused (it would be replaced)"
        )
    if node is not None and run.get("local_node") != node:
        raise BundleError(
            f"--bundle-dir {target}: holds the bundle of {run.get('local_node') or 'a whole verify run'}, not of {node}; refused (it would be replaced)"
        )


def _put_in_place(partial: Path, target: Path) -> None:
    """Rename ``partial`` to ``target``; an earlier bundle there is moved aside first, then removed."""
    if os.path.lexists(target) and os.listdir(target):
        old = target.parent / f".{target.name}.old"
        if old.is_symlink():
            old.unlink()
        elif old.exists():
            shutil.rmtree(old)
        os.replace(target, old)
        os.replace(partial, target)
        shutil.rmtree(old)
        return
    os.replace(partial, target)


def _facts_gz(bundle: Bundle, name: str, host: HostEvidence) -> "tuple[int, bytes]":
    """(length, gzip'd text) of a host's facts.json, encoded once per bundle."""
    if name not in bundle._facts_gz:
        assert host.facts is not None
        text = host.facts.to_json() + b"\n"
        bundle._facts_gz[name] = (len(text), _gzip(text))
    return bundle._facts_gz[name]


def _report_gz(bundle: Bundle, report: Dict[str, Any]) -> "tuple[int, bytes]":
    """(length, gzip'd text) of results.json, encoded once per report and a slice at a time
    (a report with many failed or skipped results may still be large)."""
    if bundle._report_gz is None or bundle._report_gz[0] != id(report):
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
        size, parts = 0, []
        for data in jsondoc.json_bytes(report, default=str):
            size += len(data)
            parts.append(packer.compress(data))
        parts.append(packer.flush())
        bundle._report_gz = (id(report), size, b"".join(parts))
    return bundle._report_gz[1], bundle._report_gz[2]


def _gzip(data: bytes) -> bytes:
    """``data`` gzip'd as the bundle's ``.gz`` files are (:data:`GZIP_LEVEL`, no timestamp)."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


# -- retention and disk space ---------------------------------------------------------------


def run_dirs(runs_dir: Path) -> List[Path]:
    """The run folders under ``runs_dir``, oldest first (links and other names are never listed)."""
    found = []
    try:
        entries = list(os.scandir(runs_dir))
    except FileNotFoundError:
        return []
    for entry in entries:
        match = RUN_DIR_RE.match(entry.name)
        if match and entry.is_dir(follow_symlinks=False):
            found.append((match.group("stamp"), int(match.group("count") or 1), Path(entry.path)))
    return [path for _, _, path in sorted(found)]


def prune_runs(runs_dir: Path, keep: int = KEEP_RUNS_DEFAULT) -> List[Path]:
    """Remove all but the newest ``keep`` run folders; the removed folders, oldest first."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    old = run_dirs(runs_dir)[:-keep]
    for path in old:
        shutil.rmtree(path)
    return old


def bundle_size(bundle: Bundle, report: Dict[str, Any], results: Sequence[CheckResult] = ()) -> int:
    """An upper bound of the bytes a bundle takes on disk (before compression), of what is not
    written yet (a live run's hosts' transcripts are dropped once its BundleWriter wrote them).
    ``results``: as :func:`write_bundle` is given them (they choose the facts.json written)."""
    texts = [bundle.inventory_text]
    for host in bundle.hosts.values():
        texts += [host.gather_stdout, host.gather_stderr, host.ping_stdout, host.ping_stderr, host.hccs_stdout]
    raw = sum(len(t.encode("utf-8", errors="replace")) for t in texts)
    facts = sum(_facts_gz(bundle, name, bundle.hosts[name])[0] for name in facts_wanted(results, bundle.hosts))
    return raw + facts + _report_gz(bundle, report)[0] + 64 * 1024


@dataclass(frozen=True)
class DiskCheck:
    """Whether a bundle of ``needed`` bytes may be written, and what to tell the user."""

    write: bool
    warning: Optional[str] = None
    #: Bytes free where it was read (None when it could not be read).
    free: Optional[int] = None


def _mib(count: int) -> str:
    return f"{count / (1024 * 1024):,.0f} MiB"


def check_free_space(runs_dir: Path, needed: int, low: int = RUNS_LOW_DISK_BYTES) -> DiskCheck:
    """Refuse to fill the disk: no bundle when it does not fit, a warning when space runs low."""
    probe = runs_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError as exc:
        return DiskCheck(True, f"the free space under {probe} cannot be read ({exc.strerror or exc})")
    if free < needed:
        return DiskCheck(
            False,
            f"the evidence bundle was not saved: {_mib(free)} free under {probe}, it needs about {_mib(needed)}",
            free,
        )
    if free - needed < low:
        return DiskCheck(True, f"only {_mib(free)} free under {probe}; old runs are removed past --keep-runs", free)
    return DiskCheck(True, free=free)


# -- reading a bundle, confined to its folder --------------------------------------------------


def _confined(root: Path, relative: str) -> Path:
    """``root/relative`` when no part of it is a link and it stays inside ``root``; else BundleError."""
    parts = relative.split("/")
    if not relative or relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise BundleError(f"{root}: the bundle names {relative!r}, which is not a file inside it; refused")
    path = root
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise BundleError(
                f"{path}: a symbolic link inside the bundle; refused (a bundle's files are read only from its own folder)"
            )
    if not path.resolve().is_relative_to(root):
        raise BundleError(f"{path}: outside the bundle folder {root}; refused")
    return path


class ReadBudget:
    """Decompressed bytes ``--from-bundle`` may still read: :data:`~ascendprep.base.limits.BUNDLE_READ_MAX_BYTES`
    per bundle, and as many for all the node bundles of a merge together (``merge``: the merge's
    own budget, which every bundle's draws on too). A file or member is decompressed only up to
    what is left, so many small gzip bombs stop at the budget, not at the sum of their caps."""

    def __init__(self, limit: int, merge: Optional["ReadBudget"] = None) -> None:
        self.limit = limit
        self.merge = merge
        self.used = 0
        #: Bundles drawing on this budget (a merge's: how many were read so far).
        self.bundles = 0

    @classmethod
    def for_merge(cls) -> "ReadBudget":
        """The budget all the bundles of one ``--from-bundle`` draw on together."""
        return cls(BUNDLE_READ_MAX_BYTES)

    def left(self) -> int:
        own = self.limit - self.used
        return own if self.merge is None else min(own, self.merge.left())

    def take(self, count: int, folder: Path, what: Union[Path, str]) -> None:
        """Count ``count`` decompressed bytes of ``what`` (in bundle ``folder``), or refuse them."""
        if self.used + count > self.limit:
            raise BundleError(
                f"{folder}: its files decompress to more than {self.limit:,} bytes in all ({what} passes that); refused"
            )
        merge = self.merge
        if merge is not None and merge.used + count > merge.limit:
            raise BundleError(
                f"{folder}: the {merge.bundles} bundles read so far decompress to more than {merge.limit:,} bytes in all "
                f"({what} passes that); refused: merge no more than that much evidence at once"
            )
        self.used += count
        if merge is not None:
            merge.used += count


def _read_bytes(
    path: Path, compressed: bool, budget: Optional[ReadBudget] = None, folder: Optional[Path] = None
) -> bytes:
    """At most BUNDLE_FILE_MAX_BYTES of a regular file (decompressed when ``compressed``), and no
    more than ``budget`` has left (taken from it; ``folder``: the bundle, for its message)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BundleError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise BundleError(f"{path}: not a regular file; refused")
        most = BUNDLE_FILE_MAX_BYTES if budget is None else min(BUNDLE_FILE_MAX_BYTES, budget.left())
        try:
            data = gzip.GzipFile(fileobj=handle, mode="rb").read(most + 1) if compressed else handle.read(most + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise BundleError(f"{path}: not a readable gzip file: {exc}") from None
    if len(data) > BUNDLE_FILE_MAX_BYTES:
        raise BundleError(f"{path}: more than {BUNDLE_FILE_MAX_BYTES:,} bytes; refused")
    if budget is not None:
        budget.take(len(data), folder or path.parent, path)
    return data


def _read_text(root: Path, relative: str, budget: Optional[ReadBudget] = None) -> str:
    """A bundle file's text: ``relative.gz`` when present, else ``relative`` (older bundles)."""
    for name, compressed in ((relative + GZ, True), (relative, False)):
        path = _confined(root, name)
        try:
            data = _read_bytes(path, compressed, budget, root)
        except FileNotFoundError:
            continue
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BundleError(f"{path}: not UTF-8 text: {exc}") from None
    raise BundleError(f"{root / relative}: missing from the bundle")


def _read_json(root: Path, relative: str, budget: Optional[ReadBudget] = None) -> Any:
    try:
        return parse_json(_read_text(root, relative, budget), str(root / relative))
    except InputError as error:
        raise BundleError("; ".join(str(p) for p in error.problems)) from None


def read_bundle(folder: Path, merge: Optional[ReadBudget] = None) -> Bundle:
    """Read a bundle written by :func:`write_bundle`; raise :class:`BundleError` naming what is wrong.

    ``merge``: the budget all the folders of one ``--from-bundle`` draw on together
    (:meth:`ReadBudget.for_merge`); the bundle has :data:`~ascendprep.base.limits.BUNDLE_READ_MAX_BYTES`
    of its own either way."""
    if not folder.is_dir():
        raise BundleError(f"{folder}: not a directory (give a folder under {RUNS_DIR})")
    folder = folder.resolve()
    budget = ReadBudget(BUNDLE_READ_MAX_BYTES, merge)
    if merge is not None:
        merge.bundles += 1
    run_path = folder / RUN_FILE
    run = _read_json(folder, RUN_FILE, budget)
    if not isinstance(run, dict) or run.get("kind") != BUNDLE_KIND:
        raise BundleError(f"{run_path}: not a verify evidence bundle")
    if type(run.get("schema_version")) is not int or run["schema_version"] not in READABLE_SCHEMA_VERSIONS:
        raise BundleError(
            f"{run_path}: schema_version {run.get('schema_version')!r}; this ascendprep reads {', '.join(map(str, READABLE_SCHEMA_VERSIONS))}"
        )
    try:
        return _bundle_from(folder, run, budget)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"{run_path}: malformed ({type(exc).__name__}: {exc})") from None


def _local_node(folder: Path, run: Dict[str, Any], hosts: Dict[str, HostEvidence]) -> Optional[str]:
    """A node bundle's node: a node name, and the only host the bundle holds."""
    name = run.get("local_node")
    if name is None:
        return None
    if not isinstance(name, str) or not HOST_DIR_RE.match(name):
        raise BundleError(f"{folder / RUN_FILE}: local_node {name!r} is not a node name; refused")
    if set(hosts) != {name}:
        raise BundleError(
            f"{folder / RUN_FILE}: a node bundle of {name} must hold that node alone, not {', '.join(sorted(hosts)) or 'no host'}; refused"
        )
    return name


def _read_host_file(
    folder: Path,
    name: str,
    stem: str,
    version: int,
    record: Optional[Dict[str, Any]] = None,
    budget: Optional[ReadBudget] = None,
) -> str:
    """A host file's text; an optional one (an empty stderr, version 2 on) may be missing: empty.
    Version 3: the host's gzip member of ``hosts/<stem>.gz`` that ``record["files"]`` locates."""
    if version >= 3:
        return _read_member(folder, name, stem, (record or {}).get("files") or {}, budget)
    relative = _host_file(name, stem, version)
    if (
        version > 1
        and stem in OPTIONAL_HOST_FILES
        and not any(os.path.lexists(_confined(folder, relative + suffix)) for suffix in (GZ, ""))
    ):
        return ""
    return _read_text(folder, relative, budget)


def _member_place(folder: Path, name: str, stem: str, where: Any) -> "tuple[int, int]":
    """[offset, length] of ``name``'s member of ``hosts/<stem>.gz`` as run.json gives it, checked."""
    if not (
        isinstance(where, list)
        and len(where) == 2
        and all(type(v) is int for v in where)
        and where[0] >= 0
        and 0 < where[1] <= BUNDLE_FILE_MAX_BYTES
    ):
        raise BundleError(
            f"{folder / RUN_FILE}: hosts.{name}.files.{stem} must be [offset, length] of a member of hosts/{stem}{GZ}, not {str(where)[:80]}; refused"
        )
    return where[0], where[1]


def _past_the_end(path: Path, name: str, stem: str, offset: int, length: int, size: int) -> BundleError:
    return BundleError(f"{path}: {name}'s {stem} lies past its end ({offset:,}+{length:,} > {size:,} bytes); refused")


def _check_members_apart(folder: Path, records: Dict[str, Any]) -> None:
    """Refuse, before anything is decompressed, a member that lies past the end of its
    ``hosts/<kind>.gz`` and two host records whose members overlap: the writer appends each host's
    transcript as a member of its own, so overlapping (or shared) members only come from an
    edited run.json, which could make every host decompress one gzip bomb."""
    placed: Dict[str, List["tuple[int, int, str]"]] = {}
    for name, record in records.items():
        members = record.get("files") if isinstance(record, dict) else None
        if not isinstance(members, dict):
            continue  # refused when its transcripts are read
        for stem, where in members.items():
            if stem in STREAMS:
                offset, length = _member_place(folder, str(name), stem, where)
                placed.setdefault(stem, []).append((offset, length, str(name)))
    for stem, members in placed.items():
        members.sort()
        path = _confined(folder, f"hosts/{stem}{GZ}")
        info = os.lstat(path) if os.path.lexists(path) else None
        if info is not None and stat.S_ISREG(info.st_mode):  # others are refused when read
            for offset, length, name in members:
                if offset + length > info.st_size:
                    raise _past_the_end(path, name, stem, offset, length, info.st_size)
        for (offset, length, name), (after, _, other) in zip(members, members[1:]):
            if offset + length > after:
                raise BundleError(
                    f"{folder / RUN_FILE}: hosts.{name}.files.{stem} [{offset:,}, {length:,}] and hosts.{other}.files.{stem} "
                    f"(at {after:,}) overlap in hosts/{stem}{GZ}; refused (each host's transcript is a gzip member of its own)"
                )


def _read_member(
    folder: Path, name: str, stem: str, members: Dict[str, Any], budget: Optional[ReadBudget] = None
) -> str:
    """``name``'s ``stem`` transcript: one whole gzip member at [offset, length] of
    ``hosts/<stem>.gz``, checked like any bundle file (no link, regular, the decompressed cap,
    what ``budget`` has left)."""
    if not isinstance(members, dict):
        raise BundleError(f"{folder / RUN_FILE}: hosts.{name}.files is not a map; refused")
    where = members.get(stem)
    if where is None:
        if stem in OPTIONAL_HOST_FILES:
            return ""
        raise BundleError(f"{folder / RUN_FILE}: hosts.{name}.files has no {stem}: missing from the bundle")
    offset, length = _member_place(folder, name, stem, where)
    path = _confined(folder, f"hosts/{stem}{GZ}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise BundleError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"{path}: not a regular file; refused")
        if offset + length > info.st_size:
            raise _past_the_end(path, name, stem, offset, length, info.st_size)
        data = os.pread(fd, length, offset)
    finally:
        os.close(fd)
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    most = BUNDLE_FILE_MAX_BYTES if budget is None else min(BUNDLE_FILE_MAX_BYTES, budget.left())
    try:
        text = unpacker.decompress(data, most + 1)
    except zlib.error as exc:
        raise BundleError(f"{path}: {name}'s {stem} is not a readable gzip member: {exc}") from None
    if len(text) > BUNDLE_FILE_MAX_BYTES:
        raise BundleError(f"{path}: {name}'s {stem} is more than {BUNDLE_FILE_MAX_BYTES:,} bytes; refused")
    if budget is not None:
        budget.take(len(text), folder, f"{name}'s {stem}")
    if not unpacker.eof or unpacker.unused_data:
        raise BundleError(f"{path}: {name}'s {stem} at {offset:,} is not one whole gzip member; refused")
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{path}: {name}'s {stem} is not UTF-8 text: {exc}") from None


class _Fields:
    """Typed reads of one bundle JSON document: a value of the wrong shape (a list where an object
    belongs, text where a count does, a negative time) is a :class:`BundleError` naming the file
    and the JSON path (``run.json: hosts.node1.seconds: ...``), never a traceback later on.
    Numbers out of any range (``1e400``, a 400-digit count) are refused earlier, by
    :func:`~ascendprep.base.jsoninput.parse_json`."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def refuse(self, where: str, what: str) -> BundleError:
        return BundleError(f"{self.file}: {where}: {what}; refused" if where else f"{self.file}: {what}; refused")

    def _kind(self, value: Any) -> str:
        return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
            type(value), "a number"
        )

    def mapping(self, value: Any, where: str, optional: bool = False) -> Dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.refuse(where, f"must be an object, not {self._kind(value)}")
        return value

    def sequence(self, value: Any, where: str) -> List[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.refuse(where, f"must be a list, not {self._kind(value)}")
        return value

    def text(self, value: Any, where: str, optional: bool = False) -> Optional[str]:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.refuse(where, f"must be text, not {self._kind(value)}")
        return value

    def flag(self, value: Any, where: str, optional: bool = False) -> bool:
        if value is None and optional:
            return False
        if not isinstance(value, bool):
            raise self.refuse(where, f"must be true or false, not {self._kind(value)}")
        return value

    def count(self, value: Any, where: str, optional: bool = False) -> Optional[int]:
        if value is None and optional:
            return None
        if type(value) is not int or value < 0:
            raise self.refuse(
                where, f"must be a count (0, 1, 2, ...), not {self._kind(value) if type(value) is not int else value}"
            )
        return value

    def number(self, value: Any, where: str, what: str = "a number") -> float:
        if type(value) not in (int, float) or value < 0:
            raise self.refuse(
                where,
                f"must be {what} (0 or more), not {self._kind(value) if type(value) not in (int, float) else value}",
            )
        return float(value)

    def seconds(self, value: Any, where: str) -> float:
        return 0.0 if value is None else self.number(value, where, "a number of seconds")

    def texts(self, value: Any, where: str) -> List[str]:
        return [self.text(item, f"{where}[{index}]") or "" for index, item in enumerate(self.sequence(value, where))]


def _endpoint(fields: _Fields, value: Any, where: str) -> Endpoint:
    data = fields.mapping(value, where)
    return Endpoint(
        fields.text(data.get("node"), f"{where}.node") or "",
        fields.count(data.get("npu"), f"{where}.npu") or 0,
        fields.text(data.get("ip"), f"{where}.ip") or "",
    )


def _ping_plan(fields: _Fields, value: Any) -> Optional[PingPlan]:
    """run.json's ``pings``, each pair's ends and source checked (see :meth:`PingPlan.from_dict`)."""
    if not value:
        return None
    data = fields.mapping(value, "pings")
    pairs = []
    for index, item in enumerate(fields.sequence(data.get("pairs"), "pings.pairs")):
        where = f"pings.pairs[{index}]"
        pair = fields.mapping(item, where)
        a, b = _endpoint(fields, pair.get("a"), f"{where}.a"), _endpoint(fields, pair.get("b"), f"{where}.b")
        source = pair.get("source")
        if source not in ("a", "b", None):
            raise fields.refuse(f"{where}.source", 'must be "a", "b" or null')
        pairs.append(
            PingPair(
                a,
                b,
                {"a": a, "b": b, None: None}[source],
                fields.text(pair.get("blocked"), f"{where}.blocked", optional=True),
            )
        )
    return PingPlan(_mesh(fields, data.get("mesh"), "pings.mesh"), tuple(pairs))


def _mesh(fields: _Fields, value: Any, where: str) -> str:
    mesh = fields.text(value, where) or ""
    if mesh not in MESHES:
        raise fields.refuse(where, f"{mesh[:40]!r} is not one of {', '.join(MESHES)}")
    return mesh


def _findings(fields: _Fields, value: Any) -> List[Finding]:
    """run.json's ``allreduce_findings``: each one as :meth:`Finding.to_dict` writes it."""
    found = []
    for index, item in enumerate(fields.sequence(value, "allreduce_findings")):
        where = f"allreduce_findings[{index}]"
        data = fields.mapping(item, where)
        unknown = sorted(set(data) - {"id", "severity", "message", "fix", "node", "npu", "evidence"})
        if unknown:
            raise fields.refuse(where, f"has fields a finding does not have: {', '.join(unknown)[:120]}")
        severity = data.get("severity")
        if not isinstance(severity, str) or severity not in {s.value for s in Severity}:
            raise fields.refuse(f"{where}.severity", f"must be one of {', '.join(s.value for s in Severity)}")
        found.append(
            Finding(
                id=fields.text(data.get("id"), f"{where}.id") or "",
                severity=Severity(severity),
                message=fields.text(data.get("message"), f"{where}.message") or "",
                fix=fields.text(data.get("fix", ""), f"{where}.fix") or "",
                node=fields.text(data.get("node"), f"{where}.node", optional=True),
                npu=fields.count(data.get("npu"), f"{where}.npu", optional=True),
                evidence=fields.mapping(data.get("evidence"), f"{where}.evidence", optional=True),
            )
        )
    return found


def _check_allreduce_doc(fields: _Fields, value: Any) -> Dict[str, Any]:
    """allreduce.json: an object, and the fields reports read from it of their types (the rest
    goes to the JSON report as it is)."""
    doc = fields.mapping(value, "")
    fields.flag(doc.get("passed"), "passed", optional=True)
    verdict = fields.mapping(doc.get("verdict"), "verdict", optional=True)
    for index, row in enumerate(fields.sequence(verdict.get("sizes"), "verdict.sizes")):
        size = fields.mapping(row, f"verdict.sizes[{index}]")
        fields.count(size.get("bytes"), f"verdict.sizes[{index}].bytes", optional=True)
        if size.get("busbw_GBps") is not None:
            fields.number(size.get("busbw_GBps"), f"verdict.sizes[{index}].busbw_GBps")
    fields.count(verdict.get("world_size"), "verdict.world_size", optional=True)
    return doc


def _node_tie(fields: _Fields, value: Any) -> Optional[NodeTie]:
    """run.json's ``node_tie`` (absent in bundles of a whole run, and in older node bundles)."""
    if value is None:
        return None
    data = fields.mapping(value, "node_tie")
    return NodeTie(
        node=fields.text(data.get("node"), "node_tie.node") or "",
        hostname=fields.text(data.get("hostname"), "node_tie.hostname") or "",
        machine_id=fields.text(data.get("machine_id"), "node_tie.machine_id", optional=True),
        inventory_sha256=fields.text(data.get("inventory_sha256"), "node_tie.inventory_sha256") or "",
    )


def _bundle_from(folder: Path, run: Dict[str, Any], budget: Optional[ReadBudget] = None) -> Bundle:
    fields = _Fields(folder / RUN_FILE)
    hosts: Dict[str, HostEvidence] = {}
    execs: Dict[str, int] = {}
    version = run["schema_version"]
    records = fields.mapping(run.get("hosts"), "hosts")
    if version >= 3:
        _check_members_apart(folder, records)
    for name, value in records.items():
        if not isinstance(name, str) or not HOST_DIR_RE.match(name):
            raise BundleError(f"{folder / RUN_FILE}: host name {name!r} is not a node name; refused")
        where = f"hosts.{name}"
        record = fields.mapping(value, where)
        gathered = fields.flag(record.get("gathered"), f"{where}.gathered")
        ping = fields.mapping(record.get("ping"), f"{where}.ping", optional=True)
        ping_ran = fields.flag(ping.get("ran"), f"{where}.ping.ran", optional=True)
        hccs = fields.mapping(record.get("hccs"), f"{where}.hccs", optional=True)
        hccs_ran = fields.flag(hccs.get("ran"), f"{where}.hccs.ran", optional=True)
        gather_out = _read_host_file(folder, name, "gather.out", version, record, budget) if gathered else ""
        ping_out = _read_host_file(folder, name, "ping.out", version, record, budget) if ping_ran else ""
        hccs_out = _read_host_file(folder, name, "hccs.out", version, record, budget) if hccs_ran else ""
        hosts[name] = HostEvidence(
            node=name,
            address=fields.text(record.get("address"), f"{where}.address") or "",
            facts=parse_gather_output(gather_out) if gathered else None,
            error=fields.text(record.get("error"), f"{where}.error", optional=True),
            error_kind=fields.text(record.get("error_kind"), f"{where}.error_kind", optional=True),
            seconds=fields.seconds(record.get("seconds"), f"{where}.seconds"),
            gather_stdout=gather_out,
            gather_stderr=_read_host_file(folder, name, "gather.err", version, record, budget) if gathered else "",
            pings=tuple(parse_ping_output(ping_out)) if ping_ran else None,
            ping_error=fields.text(ping.get("error"), f"{where}.ping.error", optional=True),
            ping_stdout=ping_out,
            ping_stderr=_read_host_file(folder, name, "ping.err", version, record, budget) if ping_ran else "",
            ping_seconds=fields.seconds(ping.get("seconds"), f"{where}.ping.seconds"),
            hccs_pings=tuple(parse_hccs_output(hccs_out)) if hccs_ran else None,
            hccs_error=fields.text(hccs.get("error"), f"{where}.hccs.error", optional=True),
            hccs_stdout=hccs_out,
        )
        ssh_execs = fields.count(record.get("ssh_execs"), f"{where}.ssh_execs", optional=True)
        if ssh_execs is not None:
            execs[name] = ssh_execs
    inventory = fields.mapping(run.get("inventory"), "inventory")
    if inventory.get("copy", INVENTORY_COPY) != INVENTORY_COPY:
        raise BundleError(
            f"{folder / RUN_FILE}: the inventory copy must be {INVENTORY_COPY}, not {inventory.get('copy')!r}; refused"
        )
    text = _read_text(folder, INVENTORY_COPY, budget)
    selection = fields.mapping(run.get("selection"), "selection", optional=True)
    day = fields.text(run.get("date"), "date") or ""
    try:
        when = date.fromisoformat(day)
    except ValueError:
        raise fields.refuse("date", f"{day[:40]!r} is not a date such as 2026-01-31") from None
    bundle = Bundle(
        inventory_path=fields.text(inventory.get("path"), "inventory.path") or "",
        inventory_text=text,
        hosts=hosts,
        pings=_ping_plan(fields, run.get("pings")),
        mesh=_mesh(fields, run.get("mesh", "ring"), "mesh"),
        selection={key: fields.texts(values, f"selection.{key}") for key, values in selection.items()},
        day=when,
        created=fields.text(run.get("created", ""), "created") or "",
        ssh_execs=execs,
        allreduce_findings=_findings(fields, run.get("allreduce_findings")),
        path=folder,
        local_node=_local_node(folder, run, hosts),
        node_tie=_node_tie(fields, run.get("node_tie")),
    )
    if any(os.path.lexists(folder / name) for name in (ALLREDUCE_FILE + GZ, ALLREDUCE_FILE)):
        bundle.allreduce_doc = _check_allreduce_doc(
            _Fields(folder / ALLREDUCE_FILE), _read_json(folder, ALLREDUCE_FILE, budget)
        )
    if bundle.inventory_sha256 != inventory.get("sha256"):
        raise BundleError(f"{folder / INVENTORY_COPY}: its sha256 is not the one recorded in {RUN_FILE} (edited?)")
    return bundle


def read_saved_verdict(folder: Path) -> Any:
    """The verdict a bundle saved (``results.json``: verify's ``--format json`` document, without
    the passed results), as written then; :class:`BundleError` when it cannot be read."""
    return _read_json(folder, RESULTS_FILE)
