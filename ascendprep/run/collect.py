"""``ascendprep collect``: fetch what a diagnosis of a failed job needs from every node.

One read-only script per host, through the fan-out (:class:`~ascendprep.run.fanout.Session`:
deadline, output cap, ``forks`` hosts at a time): verify's gather script (the node's NPU state
now: link history, health codes, counters, device IPs), then the node program
:mod:`ascendprep.run.collect_node`, which prints the node's CANN logs, console logs and kernel
messages as framed base64 records. Real hosts often lack SFTP, so everything travels on the
script's stdout.

Nothing a node sends is trusted: each record's kind must be known, its name a relative path of
plain components (no absolute path, no ``..``, no control character), its content within the
per-file cap and all of a node's within the per-node cap, and its declared size consistent
with what came. A record that breaks a rule is dropped and named in the manifest. Files are
written with :class:`~ascendprep.base.outputfile.NewFiles` (never through a link, 0600) into
folders this run made (0700).

The bundle (``manifest.json``, ``nodes/<node>/{state.json,plog/,device/,console/,kernel.log}``)
is the contract ``ascendprep diagnose`` reads; docs/when-a-job-fails.md describes it.
"""

from __future__ import annotations

import base64
import binascii
import errno
import functools
import json
import os
import re
import secrets
import shlex
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ascendprep.base import exitcodes
from ascendprep.base.limits import (
    COLLECT_FILE_MAX_BYTES,
    COLLECT_KERNEL_TIMEOUT_S,
    COLLECT_MAX_ENTRIES,
    COLLECT_MAX_FILES,
    COLLECT_MAX_PATHS,
    COLLECT_NODE_MAX_BYTES,
    COLLECT_PATH_MAX_CHARS,
)
from ascendprep.base.outputfile import NewFiles, ensure_dir, make_dir, write_file
from ascendprep.base.paths import SYSCTL_KEYS
from ascendprep.base.text import markup_safe
from ascendprep.facts.blockers import job_probes
from ascendprep.facts.gather import parse_gather_output, render_gather_script
from ascendprep.facts.model import HostFacts
from ascendprep.facts.sections import new_nonce
from ascendprep.inventory.load import Inventory, load_inventory
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import CommandTimeout
from ascendprep.remote.transport import Transport
from ascendprep.report import console as report_console
from ascendprep.run.bundle import check_free_space
from ascendprep.run.common import hosts_deadline, open_session, select_nodes
from ascendprep.run.fanout import HostOutcome, Session
from ascendprep.run.node_local import local_session, machine_identity, match_node
from ascendprep.run.progress import Progress, progress_for_terminal

#: The manifest's format; ``diagnose`` reads this version.
SCHEMA_VERSION = 1
MANIFEST_KIND = "ascendprep-collect"
#: Kinds of fetched file, and the folder (or file) of the node's bundle folder each goes to.
KINDS = ("plog", "device", "console", "kernel", "state")
_FOLDER = {"plog": "plog", "device": "device", "console": "console"}
KERNEL_FILE = "kernel.log"
STATE_FILE = "state.json"
#: Components a fetched log's relative path may have (CANN's deepest is ``run/device-0/x.log``).
MAX_NAME_PARTS = 16
#: Bytes of one name component (Linux NAME_MAX).
MAX_PART_BYTES = 255
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_RELATIVE_SINCE = re.compile(r"^([0-9]{1,6})([smhd])$")
_NUMBER = re.compile(r"^[0-9]{1,20}$")
_MTIME = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,9})?$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class CollectInputError(ValueError):
    """An option value collect refuses (the message names the option and why)."""


# -- the options -----------------------------------------------------------------------------------


def parse_since(text: str, now: Optional[datetime] = None) -> datetime:
    """``--since``: ISO-8601 (``2026-11-28T10:00``; without a zone it is UTC) or an age (``90m``,
    ``2h``, ``1d``); a UTC datetime."""
    value = text.strip()
    relative = _RELATIVE_SINCE.match(value)
    if relative:
        amount = timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
        return (now or datetime.now(timezone.utc)) - amount
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise CollectInputError(
            f"--since {value[:80]!r}: give an ISO-8601 time (2026-11-28T10:00, UTC unless it says) or an age (90m, 2h, 1d)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def check_node_paths(values: Sequence[str], option: str) -> List[str]:
    """``--log-dir`` / ``--console`` values: absolute paths (globs) on the nodes, without control
    characters, at most :data:`COLLECT_MAX_PATHS` of :data:`COLLECT_PATH_MAX_CHARS` each."""
    if len(values) > COLLECT_MAX_PATHS:
        raise CollectInputError(f"{option}: at most {COLLECT_MAX_PATHS} values, not {len(values)}")
    for value in values:
        if not value.startswith("/"):
            raise CollectInputError(f"{option} {value[:80]!r}: give an absolute path on the nodes")
        if len(value) > COLLECT_PATH_MAX_CHARS:
            raise CollectInputError(f"{option}: a path of more than {COLLECT_PATH_MAX_CHARS} characters")
        if _CONTROL.search(value):
            raise CollectInputError(f"{option} {value[:80]!r}: control characters are not allowed in a path")
    return list(values)


@dataclass(frozen=True)
class Caps:
    """What one node may send (the limits of base/limits.py unless a test says otherwise)."""

    file: int = COLLECT_FILE_MAX_BYTES
    node: int = COLLECT_NODE_MAX_BYTES
    files: int = COLLECT_MAX_FILES
    entries: int = COLLECT_MAX_ENTRIES


# -- the script sent to a node ---------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def node_program() -> str:
    """The source of the node program (sent as ``python -c``), read once."""
    return (Path(__file__).parent / "collect_node.py").read_text()


def collect_config(
    nonce: str,
    since: Optional[datetime],
    log_dirs: Sequence[str],
    console_globs: Sequence[str],
    caps: Caps = Caps(),
) -> Dict[str, Any]:
    """The node program's one argument."""
    return {
        "nonce": nonce,
        "since": since.timestamp() if since is not None else None,
        "log_dirs": list(log_dirs),
        "console_globs": list(console_globs),
        "file_cap": caps.file,
        "node_cap": caps.node,
        "max_entries": caps.entries,
        "max_files": caps.files,
        "kernel_timeout": COLLECT_KERNEL_TIMEOUT_S,
    }


def render_collect_part(python_path: str, config: Dict[str, Any]) -> str:
    """The shell lines that start the node program after the gather: a begin marker, the program,
    its exit status (every value shlex-quoted; the nonce is 32 hex digits)."""
    if not re.fullmatch(r"[0-9a-f]{32}", config["nonce"]):
        raise ValueError("the collect nonce must be 32 hex digits")
    mark = f"@@collect-{config['nonce']}"
    return (
        f"printf '\\n%s begin\\n' {shlex.quote(mark)}\n"
        f"{shlex.quote(python_path)} -c {shlex.quote(node_program())} {shlex.quote(json.dumps(config))} </dev/null\n"
        f"printf '%s rc %s\\n' {shlex.quote(mark)} \"$?\"\n"
    )


# -- what a node sent ----------------------------------------------------------------------------


@dataclass
class Fetched:
    """One file as it will be stored: its path under the node's folder, its bytes, how big it was."""

    path: str
    kind: str
    data: bytes
    size: int

    @property
    def cut(self) -> bool:
        return self.size > len(self.data)


@dataclass
class NodeLogs:
    """Everything one node's records gave, and what was wrong with them."""

    files: List[Fetched] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)
    not_fetched: int = 0
    #: The node program printed its ``end`` record (else its output stopped short).
    complete: bool = False
    rc: Optional[str] = None


def split_output(stdout: str, nonce: str) -> Tuple[str, Optional[str]]:
    """The gather's transcript and the node program's records (None: the program never began)."""
    marker = f"\n@@collect-{nonce} begin\n"
    head, found, tail = stdout.partition(marker)
    return head, (tail if found else None)


def stored_name(kind: str, raw: bytes) -> str:
    """Where a file the node named ``raw`` is stored in the node's folder; ValueError says why not.

    plog and device logs keep their path under the log root (``run/plog/plog-1_2.log``); a
    console log keeps its file name; the kernel messages are always ``kernel.log``.
    """
    if kind == "kernel":
        return KERNEL_FILE
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("a name that is not UTF-8") from None
    parts = name.split("/")
    if kind == "console":
        parts = parts[-1:]
    if name.startswith("/") and kind != "console":
        raise ValueError(f"an absolute path {name[:200]!r}")
    if len(parts) > MAX_NAME_PARTS:
        raise ValueError(f"a path of more than {MAX_NAME_PARTS} parts")
    for part in parts:
        if part in ("", ".", ".."):
            raise ValueError(f"a path with an empty, '.' or '..' part: {name[:200]!r}")
        if len(part.encode()) > MAX_PART_BYTES:
            raise ValueError(f"a name part of more than {MAX_PART_BYTES} bytes")
        if _CONTROL.search(part):
            raise ValueError(f"a name with control characters: {name[:200]!r}")
    return f"{_FOLDER[kind]}/{'/'.join(parts)}"


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def parse_records(text: str, nonce: str, caps: Caps = Caps()) -> NodeLogs:
    """The files in the node program's output, each checked (see the module doc). Never raises."""
    mark = f"@@collect-{nonce}"
    logs = NodeLogs()
    lines = text.split("\n")
    taken = 0
    seen: set[str] = set()
    strays = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        words = line.split(" ")
        if words[0] != mark or len(words) < 2:
            if line:
                strays += 1
            continue
        what = words[1]
        if what == "end" and len(words) == 2:
            logs.complete = True
        elif what == "rc" and len(words) == 3:
            logs.rc = words[2][:8]
        elif what == "problem" and len(words) == 3:
            logs.problems.append(_text_of(words[2]))
        elif what == "skipped" and len(words) == 4 and _NUMBER.match(words[2]):
            logs.not_fetched += int(words[2])
        elif what == "file" and len(words) == 8:
            body = lines[index] if index < len(lines) else ""
            index += 1
            problem = _take_file(logs, words[2:], body, caps, taken, seen)
            if problem is not None:
                logs.problems.append(problem)
            else:
                taken += len(logs.files[-1].data)
        else:
            strays += 1
    if strays:
        logs.problems.append(f"{strays} line(s) of the node's output were not records of collect's and were ignored")
    return logs


def _text_of(word: str) -> str:
    try:
        return _b64(word).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return "(an unreadable problem record)"


def _take_file(logs: NodeLogs, words: List[str], body: str, caps: Caps, taken: int, seen: set[str]) -> Optional[str]:
    """Check one ``file`` record and add it to ``logs``; the problem when it is refused."""
    kind, size_text, sent_text, _cut, mtime, name64 = words
    if kind not in _FOLDER and kind != "kernel":
        return f"a file of unknown kind {kind[:40]!r} was refused"
    if not (_NUMBER.match(size_text) and _NUMBER.match(sent_text) and _MTIME.match(mtime)):
        return "a file record with malformed numbers was refused"
    size, sent = int(size_text), int(sent_text)
    try:
        raw_name = _b64(name64)
    except (binascii.Error, ValueError):
        return "a file record with an unreadable name was refused"
    try:
        path = stored_name(kind, raw_name)
    except ValueError as exc:
        return f"a file was refused: {exc}"
    if sent > caps.file or taken + sent > caps.node:
        return f"{path}: refused: over the per-file cap of {caps.file} or the node cap of {caps.node} bytes"
    if len(body) > (sent + 2) // 3 * 4:
        return f"{path}: refused: more content than the {sent} bytes it declared"
    try:
        data = _b64(body)
    except (binascii.Error, ValueError):
        return f"{path}: refused: its content is not base64"
    if len(data) != sent or size < sent:
        return f"{path}: refused: it declared {sent} of {size} bytes and sent {len(data)}"
    if kind == "console" and path in seen:
        stem = path
        number = 2
        while path in seen:
            path = f"{stem}.{number}"
            number += 1
    if path in seen:
        return f"{path}: sent twice; the second copy was dropped"
    seen.add(path)
    logs.files.append(Fetched(path, kind, data, size))
    return None


# -- the bundle on disk ------------------------------------------------------------------------------


def default_out_dir(now: Optional[datetime] = None) -> Path:
    """``.ascendprep/collect/<UTC time>/``."""
    when = now or datetime.now(timezone.utc)
    return Path(".ascendprep") / "collect" / when.strftime("%Y%m%dT%H%M%SZ")


def make_out_dir(out: Path) -> None:
    """A new private folder (0700) for the bundle; its parents made as needed. An existing folder
    is refused (OSError): a collect never mixes with an earlier one."""
    ensure_dir(out.parent)
    make_dir(out)
    make_dir(out / "nodes")


def write_node(out: Path, node: str, logs: Optional[NodeLogs], facts: Optional[HostFacts]) -> List[Dict[str, Any]]:
    """Write one node's files under ``out/nodes/<node>/``; the manifest's ``files`` of it.

    A file that cannot be stored (a name that clashes with a folder of another file) is named in
    ``logs.problems`` and left out; the others are stored. A node whose files do not fit on the
    disk is not stored at all (OSError, ENOSPC): the node is failed, the others go on.
    """
    needed = sum(len(f.data) for f in logs.files) if logs is not None else 0
    disk = check_free_space(out, needed)
    if not disk.write:
        raise OSError(errno.ENOSPC, f"{node}'s logs were not stored: {disk.warning}")
    folder = out / "nodes" / node
    make_dir(folder)
    entries: List[Dict[str, Any]] = []
    writer = NewFiles()
    if facts is not None:
        state = facts.to_json()
        writer.write(folder / STATE_FILE, state)
        entries.append({"path": STATE_FILE, "bytes": len(state), "cut": False, "kind": "state"})
    if logs is None:
        return entries
    made = {folder}
    for fetched in logs.files:
        target = folder / fetched.path
        try:
            for parent in reversed(target.relative_to(folder).parents[:-1]):
                where = folder / parent
                if where not in made:
                    make_dir(where)
                    made.add(where)
            writer.write(target, fetched.data)
        except OSError as exc:
            logs.problems.append(f"{fetched.path}: not stored: {exc.strerror or exc}")
            continue
        entries.append({"path": fetched.path, "bytes": len(fetched.data), "cut": fetched.cut, "kind": fetched.kind})
    return entries


def manifest(
    created: datetime,
    since: Optional[datetime],
    log_dirs: Sequence[str],
    console_globs: Sequence[str],
    nodes: Dict[str, Dict[str, Any]],
) -> Dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": MANIFEST_KIND,
        "created": created.isoformat(),
        "since": since.isoformat() if since is not None else None,
        "log_dirs": list(log_dirs),
        "console_globs": list(console_globs),
        "nodes": nodes,
    }


# -- the flow --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectRequest:
    """What to fetch: the options of ``collect`` once checked."""

    since: Optional[datetime]
    log_dirs: Tuple[str, ...]
    console_globs: Tuple[str, ...]
    out: Path
    caps: Caps = Caps()


@dataclass(frozen=True)
class NodeResult:
    """One node's entry of the manifest (written by the worker that read it)."""

    entry: Dict[str, Any]


def collect_hosts(
    session: Session, inventory: Inventory, request: CollectRequest, progress: Optional[Progress] = None
) -> Dict[str, Dict[str, Any]]:
    """Run the collect script on every host of ``session`` and store what each sent, as it comes
    (at most ``forks`` nodes' logs are held at once); the manifest's ``nodes``."""
    npus_of = {node.name: node.npus for node in inventory.nodes}
    host_of = {node.name: node.host for node in inventory.nodes}
    python_path = inventory.model.software.python_path
    sysctl_keys = tuple(dict.fromkeys([*SYSCTL_KEYS, *inventory.model.sysctl]))
    probes = job_probes(inventory)

    def job(transport: Transport, access: HostAccess) -> NodeResult:
        nonce = secrets.token_hex(16)
        gather = render_gather_script(
            npus=npus_of[access.name],
            python_path=python_path,
            sysctl_keys=sysctl_keys,
            job_probes=probes,
            nonce=new_nonce(),
        )
        config = collect_config(nonce, request.since, request.log_dirs, request.console_globs, request.caps)
        result = transport.run_script(gather + "\n" + render_collect_part(python_path, config))
        head, records = split_output(result.stdout, nonce)
        facts = parse_gather_output(head) if head.strip() else None
        logs = parse_records(records, nonce, request.caps) if records is not None else None
        error = None
        if result.timed_out:
            error = f"{access.name}: timed out after {result.seconds:.0f}s; what came before is kept"
        elif logs is None:
            error = f"{access.name}: the collect program did not start (exit {result.rc}): {_last_line(result.stderr)}"
        elif not logs.complete:
            error = f"{access.name}: the collect program stopped early (exit {logs.rc}): {_last_line(result.stderr)}"
        if session.deadline is not None and session.deadline.passed:
            # the node is reported as timed out: nothing of it lands in the bundle after that
            raise CommandTimeout(access.name, f"{access.name}: its logs came after the deadline and were dropped")
        files = write_node(request.out, access.name, logs, facts)
        return NodeResult(
            {
                "status": "ok" if logs is not None and logs.complete else "failed",
                "error": error,
                "host": host_of[access.name],
                "files": files,
                "problems": logs.problems if logs is not None else [],
                "not_fetched": logs.not_fetched if logs is not None else 0,
            }
        )

    outcomes = session.run(job, progress, step="collecting logs")
    return {name: node_entry(name, host_of[name], outcome) for name, outcome in outcomes.items()}


def node_entry(name: str, host: str, outcome: HostOutcome[NodeResult]) -> Dict[str, Any]:
    """The manifest's entry of a node: its job's, or a failed one naming why it could not be read."""
    if outcome.ok and outcome.value is not None:
        return outcome.value.entry
    return {
        "status": "failed",
        "error": outcome.error or "not read",
        "host": host,
        "files": [],
        "problems": [],
        "not_fetched": 0,
    }


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def write_manifest(
    out: Path, request: CollectRequest, created: datetime, nodes: Dict[str, Dict[str, Any]]
) -> Dict[str, Any]:
    """Write ``manifest.json`` (last: a bundle without it did not finish); the document."""
    document = manifest(created, request.since, request.log_dirs, request.console_globs, nodes)
    write_file(out / "manifest.json", json.dumps(document, indent=2, sort_keys=False) + "\n")
    return document


def summary_lines(out: Path, nodes: Dict[str, Dict[str, Any]]) -> List[str]:
    """What the terminal shows: one line per node, then where the bundle is (rich markup, safe)."""
    lines = []
    for name, entry in nodes.items():
        files = [f for f in entry["files"] if f["kind"] != "state"]
        size = sum(f["bytes"] for f in files)
        cut = sum(1 for f in files if f["cut"])
        state = "NPU state" if any(f["kind"] == "state" for f in entry["files"]) else "no NPU state"
        if entry["status"] == "ok":
            line = f"[green]ok[/]     {markup_safe(name)}: {len(files)} files, {size:,} bytes ({cut} cut), {state}"
        else:
            line = f"[red]failed[/] {markup_safe(name)}: {markup_safe(entry['error'])}"
            if files:
                line += f" ({len(files)} files kept)"
        if entry.get("not_fetched"):
            line += f"; {entry['not_fetched']} older files not fetched (node cap)"
        lines.append(line)
        for problem in entry.get("problems", [])[:5]:
            lines.append(f"         [yellow]{markup_safe(problem)}[/]")
    lines.append(f"bundle: {markup_safe(os.fspath(out))}")
    return lines


def exit_code(nodes: Dict[str, Dict[str, Any]]) -> int:
    """0 when every node was read whole, 1 when one failed."""
    return exitcodes.OK if all(entry["status"] == "ok" for entry in nodes.values()) else exitcodes.FAILED


def run_collect(
    inventory_path: Path,
    request: CollectRequest,
    *,
    local: bool = False,
    node: Optional[str] = None,
    accept_new_host_keys: bool = False,
    forks: Optional[int] = None,
    sudo_password: Optional[Any] = None,
    timeout: Optional[float] = None,
    hosts_pattern: Optional[str] = None,
    output_format: str = "text",
) -> int:
    """``collect``: every selected node over SSH, or (``local``) this machine only; the exit code.

    ``output_format`` json prints the manifest (with ``schema_version``) and the bundle's path on
    stdout instead of the summary.

    Raises InputError for a bad inventory, click's usage errors for ``--hosts``/``--node``, and
    OSError when the output folder cannot be made (before any host is contacted).
    """
    inventory = load_inventory(inventory_path)
    created = datetime.now(timezone.utc)
    if local:
        chosen = [match_node(inventory, machine_identity(), node)]
    else:
        chosen = select_nodes(inventory, hosts_pattern)
    make_out_dir(request.out)
    deadline = hosts_deadline(inventory, timeout, forks, 1, hosts=len(chosen))
    progress = progress_for_terminal("collecting logs")
    if local:
        with local_session(inventory, chosen[0], deadline) as session:
            nodes = collect_hosts(session, inventory, request, progress)
    else:
        with open_session(inventory, accept_new_host_keys, forks, sudo_password, deadline, chosen) as session:
            nodes = collect_hosts(session, inventory, request, progress)
    document = write_manifest(request.out, request, created, nodes)
    if output_format == "json":
        sys.stdout.write(json.dumps({**document, "bundle": os.fspath(request.out)}, indent=2) + "\n")
        return exit_code(nodes)
    out = report_console()
    for line in summary_lines(request.out, nodes):
        out.print(line, soft_wrap=True)
    return exit_code(nodes)
