"""verify's results as Prometheus metrics: node_exporter's textfile-collector format.

A site's monitoring stack reads node health from Prometheus, not from our JSON. node_exporter's
textfile collector picks up ``*.prom`` files from a directory on each node, so ``verify --local
--prometheus-file /var/lib/node_exporter/textfile/ascendprep.prom`` after every job (a Slurm
epilog, a Kubernetes DaemonSet) turns each check into a time series an alert can watch:

- ``ascendprep_check_passed{check,node,npu,subject,severity}``: 1 passed, 0 failed, one series per
  check and node and NPU (skipped checks are left out: they are neither);
- ``ascendprep_version_info{node,component,version}`` 1: driver, firmware, CANN, torch,
  torch_npu as each node reported them (info metrics, so a skew shows in a ``count by``);
- ``ascendprep_allreduce_busbw_bytes_per_second{size_bytes}`` and ``ascendprep_allreduce_passed``
  when ``--allreduce`` ran;
- ``ascendprep_verify_success``, ``ascendprep_verify_exit_code``,
  ``ascendprep_verify_timestamp_seconds`` and ``ascendprep_node_reachable{node}``.

Everything rendered here came from a host or the inventory, so label values are escaped as
the text format requires (backslash, double quote, newline), other control characters replaced,
and cut at :data:`ascendprep.base.limits.PROMETHEUS_LABEL_VALUE_CAP`. Two results that land on the
same label set (a cluster check reporting one node twice) become one series that passes only
when both passed: node_exporter rejects a file with a duplicate series outright.

Pure except :func:`write_metrics_file`, which writes atomically (temp file in the same
directory, fsync, rename), as the textfile collector's documentation asks: it must never read
half a file. The temp file's name does not end in ``.prom``, so the collector never reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ascendprep.base.limits import PROMETHEUS_LABEL_VALUE_CAP
from ascendprep.base.outputfile import write_file
from ascendprep.verify.checks.context import HostEvidence
from ascendprep.verify.checks.model import CheckResult, Status

PREFIX = "ascendprep_"
#: Mode of the written file: node_exporter runs as its own user and must read it; it holds check
#: ids, node names and versions, nothing secret.
FILE_MODE = 0o644
#: Python packages whose versions are reported as info metrics (when the node's facts have them).
VERSION_PACKAGES = ("torch", "torch_npu")

Labels = Tuple[Tuple[str, str], ...]


def label_value(value: object) -> str:
    """``value`` as a quoted label's content: escaped, control characters replaced, capped."""
    text = str(value)
    if len(text) > PROMETHEUS_LABEL_VALUE_CAP:
        text = text[: PROMETHEUS_LABEL_VALUE_CAP - 1] + "\u2026"
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{label_value(value)}"' for name, value in labels) + "}"


def _number(value: float) -> str:
    if value != value:  # NaN
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class _Family:
    """One metric family: its HELP and TYPE lines and its samples, kept in first-seen order."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name = PREFIX + name
        self.kind = kind
        self.help_text = help_text
        self.samples: Dict[Labels, float] = {}

    def set(self, labels: Labels, value: float, combine_min: bool = False) -> None:
        if combine_min and labels in self.samples:
            value = min(value, self.samples[labels])
        self.samples[labels] = value

    def render(self) -> List[str]:
        help_text = self.help_text.replace("\\", "\\\\").replace("\n", "\\n")
        lines = [f"# HELP {self.name} {help_text}", f"# TYPE {self.name} {self.kind}"]
        lines += [f"{self.name}{_labels(labels)} {_number(value)}" for labels, value in self.samples.items()]
        return lines


def _check_labels(result: CheckResult) -> Labels:
    labels: List[Tuple[str, str]] = [("check", result.check)]
    if result.node is not None:
        labels.append(("node", result.node))
    if result.npu is not None:
        labels.append(("npu", str(result.npu)))
    if result.subject:
        labels.append(("subject", result.subject))
    labels.append(("severity", result.severity.value))
    return tuple(labels)


def _versions(host: HostEvidence) -> List[Tuple[str, str]]:
    """(component, version) pairs this node reported; unknown ones are left out."""
    facts = host.facts
    if facts is None:
        return []
    found = [
        ("driver", facts.versions.driver_version),
        ("firmware", facts.versions.firmware_version),
        ("cann", facts.versions.cann_version),
    ]
    packages: Mapping[str, Optional[str]] = facts.python.packages if facts.python is not None else {}
    found += [(name, packages.get(name)) for name in VERSION_PACKAGES]
    return [(component, version) for component, version in found if version]


def verify_metrics(
    results: Sequence[CheckResult],
    hosts: Mapping[str, HostEvidence],
    node_order: Sequence[str],
    exit_code: int,
    timestamp: float,
    allreduce: Optional[Dict[str, Any]] = None,
    ascendprep_version: str = "",
) -> str:
    """The whole textfile: every family, each series once, ending in a newline."""
    checks = _Family(
        "check_passed", "gauge", "1 when the ascendprep verify check passed on this node/NPU, 0 when it failed."
    )
    for result in results:
        if result.status is Status.SKIPPED:
            continue
        checks.set(_check_labels(result), 1.0 if result.status is Status.PASSED else 0.0, combine_min=True)

    failed = _Family("checks_failed", "gauge", "Failed ascendprep verify checks, by severity.")
    for severity in ("error", "warning"):
        failed.set(
            (("severity", severity),), float(sum(1 for r in results if r.failed and r.severity.value == severity))
        )

    reachable = _Family("node_reachable", "gauge", "1 when ascendprep could read the node's facts.")
    versions = _Family("version_info", "gauge", "Software versions a node reported (always 1).")
    for name in node_order:
        host = hosts.get(name)
        if host is None:
            continue
        reachable.set((("node", name),), 1.0 if host.facts is not None else 0.0)
        for component, version in _versions(host):
            versions.set((("node", name), ("component", component), ("version", version)), 1.0)

    success = _Family("verify_success", "gauge", "1 when ascendprep verify found nothing at error severity (exit 0).")
    success.set((), 1.0 if exit_code == 0 else 0.0)
    code = _Family("verify_exit_code", "gauge", "Exit code of the last ascendprep verify.")
    code.set((), float(exit_code))
    when = _Family("verify_timestamp_seconds", "gauge", "Unix time the metrics were written.")
    when.set((), float(timestamp))
    build = _Family("build_info", "gauge", "The ascendprep that wrote these metrics (always 1).")
    build.set((("version", ascendprep_version),), 1.0)

    families = [checks, failed, reachable, versions, success, code, when, build]
    families += _allreduce_families(allreduce)
    lines: List[str] = []
    for family in families:
        if family.samples:
            lines += family.render()
    return "\n".join(lines) + "\n"


def _allreduce_families(allreduce: Optional[Dict[str, Any]]) -> List[_Family]:
    """The all-reduce's verdict and bus bandwidth per message size (from its JSON document)."""
    if not allreduce:
        return []
    passed = _Family("allreduce_passed", "gauge", "1 when the all-reduce across the nodes passed.")
    passed.set((), 1.0 if allreduce.get("passed") else 0.0)
    families = [passed]
    verdict = allreduce.get("verdict") or {}
    busbw = _Family(
        "allreduce_busbw_bytes_per_second",
        "gauge",
        "All-reduce bus bandwidth per message size (nccl-tests' busbw), bytes per second.",
    )
    for row in verdict.get("sizes") or ():
        size, value = row.get("bytes"), row.get("busbw_GBps")
        if isinstance(size, int) and isinstance(value, (int, float)):
            busbw.set((("size_bytes", str(size)),), float(value) * 1e9)
    families.append(busbw)
    if isinstance(verdict.get("world_size"), int):
        ranks = _Family("allreduce_world_size", "gauge", "Ranks in the all-reduce.")
        ranks.set((), float(verdict["world_size"]))
        families.append(ranks)
    return families


def write_metrics_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode :data:`FILE_MODE` (``ascendprep.base.outputfile``:
    temp file in the same folder, no link followed, fsync, rename).

    Raises OSError (the caller reports it with the path); no temp file is left behind.
    """
    write_file(path, text, FILE_MODE)
