"""The evidence bundle: everything a verify run saw, saved so the verdict can be re-derived offline.

Every run writes ``.ascendprep/runs/<UTC timestamp>/``::

    run.json             what ran: inventory path + sha256, mesh, selection, ping plan, per-host
                         outcomes (error kinds, seconds, SSH execs), the date, all-reduce findings
    inventory.yaml       a copy of the inventory text as it was
    hosts/<node>/        gather.out/.err (the raw gather transcript), facts.json (parsed),
                         ping.out/.err (the raw ping transcript), when those ran
    results.json         the report verify printed with --format json
    allreduce.json       the all-reduce outcome, with --allreduce

``--from-bundle`` re-parses the raw transcripts (not facts.json, which is for people), rebuilds the
desired state from the inventory copy, and runs the checks on the recorded date: the same
evidence gives the same findings, with no SSH.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional

from ascendprep import __version__
from ascendprep.checks.context import HostEvidence
from ascendprep.checks.mesh import PingPlan
from ascendprep.findings import Finding
from ascendprep.planfile import STATE_DIR
from ascendprep.probes.gather import parse_gather_output
from ascendprep.probes.ping import parse_ping_output

BUNDLE_SCHEMA_VERSION = 1
BUNDLE_KIND = "ascendprep-verify-bundle"
RUNS_DIR = Path(STATE_DIR) / "runs"
RUN_FILE = "run.json"
INVENTORY_COPY = "inventory.yaml"
RESULTS_FILE = "results.json"
ALLREDUCE_FILE = "allreduce.json"


class BundleError(ValueError):
    """A bundle that cannot be read; the message names the file and what is wrong."""


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

    @property
    def inventory_sha256(self) -> str:
        return hashlib.sha256(self.inventory_text.encode()).hexdigest()


def _host_record(host: HostEvidence, execs: Optional[int]) -> Dict[str, Any]:
    return {
        "address": host.address,
        "gathered": host.facts is not None,
        "error": host.error,
        "error_kind": host.error_kind,
        "seconds": host.seconds,
        "ping": {"ran": host.pings is not None, "error": host.ping_error, "seconds": host.ping_seconds}
        if (host.pings is not None or host.ping_error is not None)
        else None,
        "ssh_execs": execs,
    }


def new_bundle_dir(runs_dir: Path = RUNS_DIR, now: Optional[datetime] = None) -> Path:
    """``runs_dir/<UTC timestamp>`` that does not exist yet (``-2``, ``-3``... within one second)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    candidate, count = runs_dir / stamp, 1
    while candidate.exists() or (runs_dir / f".{candidate.name}.partial").exists():
        count += 1
        candidate = runs_dir / f"{stamp}-{count}"
    return candidate


def write_bundle(bundle: Bundle, target: Path, report: Dict[str, Any]) -> Path:
    """Write ``bundle`` to ``target`` (through a hidden partial dir renamed at the end)."""
    partial = target.parent / f".{target.name}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    (partial / "hosts").mkdir(parents=True)
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
        "hosts": {name: _host_record(host, bundle.ssh_execs.get(name)) for name, host in bundle.hosts.items()},
        "allreduce_findings": [f.to_dict() for f in bundle.allreduce_findings],
    }
    _write(partial / RUN_FILE, json.dumps(run, indent=1) + "\n")
    _write(partial / INVENTORY_COPY, bundle.inventory_text)
    for name, host in bundle.hosts.items():
        folder = partial / "hosts" / name
        folder.mkdir()
        if host.facts is not None:
            _write(folder / "gather.out", host.gather_stdout)
            _write(folder / "gather.err", host.gather_stderr)
            _write(folder / "facts.json", json.dumps(host.facts.to_dict(), indent=1) + "\n")
        if host.pings is not None:
            _write(folder / "ping.out", host.ping_stdout)
            _write(folder / "ping.err", host.ping_stderr)
    _write(partial / RESULTS_FILE, json.dumps(report, indent=1) + "\n")
    if bundle.allreduce_doc is not None:
        _write(partial / ALLREDUCE_FILE, json.dumps(bundle.allreduce_doc, indent=1) + "\n")
    os.replace(partial, target)
    bundle.path = target
    return target


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError(f"{path}: missing from the bundle") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: cannot be read: {exc}") from None


def read_bundle(folder: Path) -> Bundle:
    """Read a bundle written by :func:`write_bundle`; raise :class:`BundleError` naming what is wrong."""
    if not folder.is_dir():
        raise BundleError(f"{folder}: not a directory (give a folder under {RUNS_DIR})")
    run_path = folder / RUN_FILE
    try:
        run = json.loads(_read_text(run_path))
    except json.JSONDecodeError as exc:
        raise BundleError(f"{run_path}: not JSON: {exc}") from None
    if not isinstance(run, dict) or run.get("kind") != BUNDLE_KIND:
        raise BundleError(f"{run_path}: not a verify evidence bundle")
    if run.get("schema_version") != BUNDLE_SCHEMA_VERSION:
        raise BundleError(f"{run_path}: schema_version {run.get('schema_version')!r}; this ascendprep reads {BUNDLE_SCHEMA_VERSION}")
    try:
        return _bundle_from(folder, run)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"{run_path}: malformed ({type(exc).__name__}: {exc})") from None


def _bundle_from(folder: Path, run: Dict[str, Any]) -> Bundle:
    hosts: Dict[str, HostEvidence] = {}
    execs: Dict[str, int] = {}
    for name, record in run["hosts"].items():
        base = folder / "hosts" / name
        ping = record.get("ping") or {}
        gather_out = _read_text(base / "gather.out") if record["gathered"] else ""
        ping_out = _read_text(base / "ping.out") if ping.get("ran") else ""
        hosts[name] = HostEvidence(
            node=name,
            address=record["address"],
            facts=parse_gather_output(gather_out) if record["gathered"] else None,
            error=record.get("error"),
            error_kind=record.get("error_kind"),
            seconds=float(record.get("seconds") or 0.0),
            gather_stdout=gather_out,
            gather_stderr=_read_text(base / "gather.err") if record["gathered"] else "",
            pings=tuple(parse_ping_output(ping_out)) if ping.get("ran") else None,
            ping_error=ping.get("error"),
            ping_stdout=ping_out,
            ping_stderr=_read_text(base / "ping.err") if ping.get("ran") else "",
            ping_seconds=float(ping.get("seconds") or 0.0),
        )
        if record.get("ssh_execs") is not None:
            execs[name] = int(record["ssh_execs"])
    inventory = run["inventory"]
    text = _read_text(folder / inventory.get("copy", INVENTORY_COPY))
    bundle = Bundle(
        inventory_path=str(inventory["path"]),
        inventory_text=text,
        hosts=hosts,
        pings=PingPlan.from_dict(run["pings"]) if run.get("pings") else None,
        mesh=str(run.get("mesh", "ring")),
        selection={k: list(v) for k, v in (run.get("selection") or {}).items()},
        day=date.fromisoformat(run["date"]),
        created=str(run.get("created", "")),
        ssh_execs=execs,
        allreduce_findings=[Finding.from_dict(f) for f in run.get("allreduce_findings") or []],
        path=folder,
    )
    allreduce = folder / ALLREDUCE_FILE
    if allreduce.exists():
        try:
            bundle.allreduce_doc = json.loads(_read_text(allreduce))
        except json.JSONDecodeError as exc:
            raise BundleError(f"{allreduce}: not JSON: {exc}") from None
    if bundle.inventory_sha256 != inventory.get("sha256"):
        raise BundleError(f"{folder / INVENTORY_COPY}: its sha256 is not the one recorded in {RUN_FILE} (edited?)")
    return bundle
