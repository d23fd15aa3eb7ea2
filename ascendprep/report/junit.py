"""JUnit XML for CI systems: a testsuite per node, one for the cluster (and one for the all-reduce).

Each check result is a testcase (``network.link[npu 3]``). Mapping, chosen so that a CI's red/green
agrees with verify's exit code:

* failed at error severity → ``<failure message=… type=check id>`` whose text is the fix and the
  evidence as JSON;
* failed at warning severity → a passing testcase whose ``<system-out>`` starts ``WARNING:`` (the
  exit code is 0 for warnings, so the CI should not turn red either);
* skipped → ``<skipped message=reason>``.

Whatever a host said, the file parses: characters XML 1.0 cannot hold (C0 controls but tab,
newline and CR; lone surrogates; U+FFFE and U+FFFF) are spelled out as ``\\ufffe``-style
escapes in the finished document, wherever they came from (a message, evidence, a name).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Sequence

from ascendprep.base.findings import Finding, Severity
from ascendprep.base.text import visible
from ascendprep.verify.checks.model import CheckResult, Status

CLUSTER_SUITE = "cluster"
#: The evidence in a failure's text is kept whole (it is JSON, already bounded by the run).
_WHOLE = 1 << 62
ALLREDUCE_SUITE = "allreduce"
#: What XML 1.0 forbids (its ``Char`` production: tab, newline, CR, U+0020-U+D7FF, U+E000-U+FFFD
#: and U+10000 on are allowed); a CI's parser rejects the whole file over one of them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _spelled(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold spelled out (``\\x01``, ``\\ufffe``)."""
    return _NOT_XML.sub(_spelled, text)


def _details(fix: str, evidence: Dict[str, object]) -> str:
    lines = []
    if fix:
        lines.append(f"fix: {fix}")
    lines.append("evidence: " + json.dumps(evidence, indent=1, sort_keys=True, default=str))
    return "\n".join(lines)


def _testcase(
    suite: ET.Element,
    classname: str,
    name: str,
    status: Status,
    severity: Severity,
    message: str,
    fix: str,
    evidence: Dict[str, object],
) -> None:
    # XML 1.0 cannot hold most control characters (a CI's parser rejects the whole file), and CI
    # pages show this text to people: host and tool text is spelled out as in the terminal.
    name, message, fix = visible(name), visible(message), visible(fix)
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    if status is Status.SKIPPED:
        ET.SubElement(case, "skipped", message=message)
    elif status is Status.FAILED and severity is Severity.ERROR:
        failure = ET.SubElement(case, "failure", message=message, type=name.split("[", 1)[0])
        failure.text = visible(_details(fix, evidence), limit=_WHOLE)
    elif status is Status.FAILED:
        out = ET.SubElement(case, "system-out")
        out.text = visible(f"WARNING: {message}\n{_details(fix, evidence)}", limit=_WHOLE)


def _suite_attrs(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", "0")
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", "0")


def render_junit(
    results: Sequence[CheckResult],
    node_order: Sequence[str],
    cluster_name: str,
    allreduce: Optional[Sequence[Finding]] = None,
) -> str:
    """The XML document. ``allreduce``: None when no all-reduce ran, else its findings (may be empty)."""
    root = ET.Element("testsuites", name=f"ascendprep verify {cluster_name}")
    suites: Dict[str, ET.Element] = {}
    for name in list(node_order) + [CLUSTER_SUITE]:
        suites[name] = ET.SubElement(root, "testsuite", name=name)
    for result in results:
        suite_name = CLUSTER_SUITE if result.check.startswith("cluster.") or result.node not in suites else result.node
        assert suite_name is not None
        _testcase(
            suites[suite_name],
            f"ascendprep.verify.{suite_name}",
            result.label,
            result.status,
            result.severity,
            result.message,
            result.fix,
            result.evidence,
        )
    if allreduce is not None:
        suite = ET.SubElement(root, "testsuite", name=ALLREDUCE_SUITE)
        suites[ALLREDUCE_SUITE] = suite
        if not allreduce:
            _testcase(suite, "ascendprep.verify.allreduce", "allreduce", Status.PASSED, Severity.ERROR, "", "", {})
        for finding in allreduce:
            where = [part for part in (finding.node, None if finding.npu is None else f"npu {finding.npu}") if part]
            name = f"{finding.id}[{', '.join(where)}]" if where else finding.id
            _testcase(
                suite,
                "ascendprep.verify.allreduce",
                name,
                Status.FAILED,
                finding.severity,
                finding.message,
                finding.fix,
                finding.evidence,
            )
    totals: List[int] = [0, 0, 0]
    for suite in suites.values():
        _suite_attrs(suite)
        totals[0] += int(suite.get("tests", "0"))
        totals[1] += int(suite.get("failures", "0"))
        totals[2] += int(suite.get("skipped", "0"))
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", "0")
    root.set("skipped", str(totals[2]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml_safe(ET.tostring(root, encoding="unicode")) + "\n"
