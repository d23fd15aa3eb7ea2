"""contrib/slurm/ascendprep-nodecheck.sh and the node-problem-detector plugin of
contrib/kubernetes, run for real against stand-ins of ``ascendprep`` and ``scontrol``: a failing
node is drained with its failed checks as the reason, only our own drains are resumed, a setup
error drains nothing; the NPD plugin turns the metrics file into NPD's exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
NODECHECK = CONTRIB / "slurm" / "ascendprep-nodecheck.sh"

FAKE_ASCENDPREP = """#!/bin/sh
printf '%s\\n' "$@" > "$FAKE_DIR/ascendprep.argv"
out=$(readlink /proc/$$/fd/1) err=$(readlink /proc/$$/fd/2)
printf '%s\\n%s\\n' "$out" "$err" > "$FAKE_DIR/ascendprep.fds"
stat -c %a "$(dirname "$out")" > "$FAKE_DIR/ascendprep.folder_mode"
cat "$FAKE_DIR/verify.json" 2>/dev/null
if [ -f "$FAKE_DIR/verify.err" ]; then cat "$FAKE_DIR/verify.err" >&2; else echo "some warning" >&2; fi
exit "$(cat "$FAKE_DIR/verify.rc")"
"""

FAKE_SCONTROL = """#!/bin/sh
if [ "$1" = show ]; then
  echo "NodeName=$3 Arch=aarch64 CoresPerSocket=48"
  [ -f "$FAKE_DIR/reason" ] && echo "   Reason=$(cat "$FAKE_DIR/reason") [root@2026-11-25T01:00:00]"
  exit 0
fi
printf '%s\\n' "$@" >> "$FAKE_DIR/scontrol.calls"
echo -- >> "$FAKE_DIR/scontrol.calls"
"""


@pytest.fixture
def node(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ascendprep", FAKE_ASCENDPREP), ("scontrol", FAKE_SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def run_check(node: Path, rc: int, findings=(), reason=None, report=True, stderr=None, **env: str):
    """Run the node check with verify answering ``rc`` and a JSON report of ``findings`` (none
    with ``report=False``: verify printed nothing), ``stderr`` its error output."""
    (node / "verify.rc").write_text(str(rc))
    if report:
        (node / "verify.json").write_text(
            json.dumps({"kind": "verify", "schema_version": 1, "exit_code": rc, "findings": list(findings)})
        )
    if stderr is not None:
        (node / "verify.err").write_text(stderr)
    if reason is not None:
        (node / "reason").write_text(reason)
    environment = {
        "PATH": f"{node / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "FAKE_DIR": str(node),
        "SLURMD_NODENAME": "a2n07",
        "ASCENDPREP_NODECHECK_CONFIG": str(node / "absent"),
        "TMPDIR": str(node),
        **env,
    }
    done = subprocess.run(["bash", str(NODECHECK)], capture_output=True, text=True, env=environment, timeout=60)
    calls_file = node / "scontrol.calls"
    calls = (
        [c.strip().splitlines() for c in calls_file.read_text().split("--\n") if c.strip()]
        if calls_file.exists()
        else []
    )
    argv = (node / "ascendprep.argv").read_text().splitlines()
    return done, calls, argv


def finding(check: str, npu=None, severity="error"):
    return {"id": check, "severity": severity, "message": "m", "fix": "f", "node": "a2n07", "npu": npu, "evidence": {}}


def test_a_failing_node_is_drained_with_the_failed_checks_as_reason(node):
    done, calls, argv = run_check(
        node,
        1,
        [
            finding("network.link", 3),
            finding("network.link", 3),
            finding("npu.health", 0),
            finding("optics.rx_power", 2, severity="warning"),
        ],
    )
    assert done.returncode == 1
    assert calls == [
        ["update", "NodeName=a2n07", "State=DRAIN", "Reason=ascendprep: network.link[npu 3], npu.health[npu 0]"]
    ]
    assert argv[:5] == ["verify", "/etc/ascendprep/inventory.yaml", "--local", "--format", "json"]
    assert not list(node.glob("ascendprep-nodecheck.*")), "temp files left behind"


def test_a_passing_node_drained_by_us_is_resumed(node):
    done, calls, _ = run_check(node, 0, reason="ascendprep: network.link[npu 3]")
    assert done.returncode == 0
    assert calls == [["update", "NodeName=a2n07", "State=RESUME"]]


def test_an_operator_drain_is_never_lifted(node):
    done, calls, _ = run_check(node, 0, reason="bad DIMM, ticket 4711")
    assert done.returncode == 0 and calls == []


def test_a_setup_error_drains_nothing_and_says_why(node):
    done, calls, _ = run_check(node, 2)
    assert done.returncode == 0 and calls == []
    assert "could not run (exit 2)" in done.stderr and "some warning" in done.stderr


CRASH = 'Traceback (most recent call last):\n  File "ascendprep/cli.py", line 1\nMemoryError\n'


@pytest.mark.parametrize(
    "case, kwargs, said",
    [
        ("a crash", dict(report=False, stderr=CRASH), "printed no verify report"),
        (
            "a usage error with exit 1",
            dict(report=False, stderr="Error: No such option: --bundle-dirr\n"),
            "printed no verify report",
        ),
        (
            "a metrics folder that is missing",
            dict(
                findings=[finding("optics.rx_power", 2, severity="warning")],
                stderr="error: --prometheus-file /var/lib/node_exporter/textfile/a.prom: No such file or directory\n",
            ),
            "names no failed check of error severity",
        ),
    ],
)
def test_exit_1_without_a_failed_error_check_drains_nothing_and_is_logged(node, case, kwargs, said):
    """verify's exit 1 means "a check of error severity failed" only when its report says so:
    a crash, a usage error or a result it could not write must not drain the node (nor fail a
    prolog, which would drain it too), but must be said."""
    done, calls, _ = run_check(node, 1, **kwargs)
    assert calls == [], case
    assert done.returncode == 0, case
    assert "nothing drained" in done.stderr and said in done.stderr, done.stderr
    assert (kwargs["stderr"].splitlines()[-1]) in done.stderr


def test_verify_output_goes_to_a_private_folder_that_is_removed(node):
    """The report and verify's error output are written inside a folder of our own (mktemp -d,
    0700), never at a name beside another file that someone could plant a link at beforehand."""
    node.chmod(0o1777)  # TMPDIR as /tmp is: anyone may create names in it
    done, calls, _ = run_check(node, 1, [finding("network.link", 3)])
    assert done.returncode == 1 and len(calls) == 1
    targets = [Path(line) for line in (node / "ascendprep.fds").read_text().splitlines()]
    assert len(targets) == 2 and targets[0] != targets[1]
    assert (node / "ascendprep.folder_mode").read_text().strip() == "700"
    for target in targets:
        folder = target.parent
        assert folder != node and folder.parent == node, target
        assert folder.name.startswith("ascendprep-nodecheck.")
    assert not list(node.glob("ascendprep-nodecheck.*")), "temp files left behind"


#: mktemp, then what someone watching a shared TMPDIR does with a name they see appear there: a
#: link to a file of root's at every name derived from it, before the check opens that name.
FAKE_MKTEMP = """#!/bin/sh
name=$({real} "$@") || exit
for suffix in .err .out .json .log .stderr .tmp; do ln -s "$VICTIM" "$name$suffix"; done
echo "$name"
"""


def test_verify_output_is_not_written_through_a_link_planted_beside_the_temp_name(node, tmp_path):
    """The node check runs as root: a link at a name it writes, planted in a shared TMPDIR by
    anyone who saw the temp name appear, would let them append verify's output to any file."""
    node.chmod(0o1777)
    (node / "bin" / "mktemp").write_text(FAKE_MKTEMP.format(real=shutil.which("mktemp")))
    (node / "bin" / "mktemp").chmod(0o755)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    done, calls, _ = run_check(node, 1, [finding("network.link", 3)], VICTIM=str(victim))
    assert done.returncode == 1 and len(calls) == 1, done.stderr
    assert victim.read_text() == "untouched\n"


def test_options_are_passed_through_and_drain_can_be_off(node):
    done, calls, argv = run_check(
        node,
        1,
        [finding("sysctl.value")],
        ASCENDPREP_DRAIN="0",
        ASCENDPREP_NODE="n7",
        ASCENDPREP_TEXTFILE="/var/lib/node_exporter/textfile/ascendprep.prom",
        ASCENDPREP_BUNDLE_DIR="/var/lib/ascendprep/bundle",
        ASCENDPREP_INVENTORY="/srv/inv.yaml",
    )
    assert done.returncode == 1 and calls == []
    assert argv == [
        "verify",
        "/srv/inv.yaml",
        "--local",
        "--format",
        "json",
        "--timeout",
        "120",
        "--node",
        "n7",
        "--prometheus-file",
        "/var/lib/node_exporter/textfile/ascendprep.prom",
        "--bundle-dir",
        "/var/lib/ascendprep/bundle",
    ]


def test_hostile_finding_text_cannot_break_the_reason(node):
    done, calls, _ = run_check(node, 1, [finding('x" State=RESUME Reason="\n\x1b[0m')])
    assert done.returncode == 1
    (call,) = calls
    assert call[:3] == ["update", "NodeName=a2n07", "State=DRAIN"] and len(call) == 4
    assert '"' not in call[3] and "\x1b" not in call[3]


# --- the node-problem-detector plugin ----------------------------------------------------------


def _npd_script(tmp_path: Path) -> Path:
    documents = yaml.safe_load_all((CONTRIB / "kubernetes" / "node-problem-detector.yaml").read_text())
    (config,) = [d for d in documents if d and d["kind"] == "ConfigMap"]
    script = tmp_path / "ascendprep-check.sh"
    script.write_text(config["data"]["ascendprep-check.sh"])
    return script


def _metrics(passed: bool) -> str:
    from verify_cluster_facts import TODAY, cluster_evidence, desired_state, with_npu

    from ascendprep.report.prometheus import verify_metrics
    from ascendprep.verify.checks.registry import Selection
    from ascendprep.verify.checks.runner import run_checks

    desired = desired_state()
    facts = None if passed else {"node2": with_npu(cluster_evidence(desired)[0]["node2"].facts, 3, link="DOWN")}
    hosts, pings = cluster_evidence(desired, facts)
    results = run_checks(desired, hosts, pings, Selection(), TODAY)
    return verify_metrics(results, hosts, list(hosts), 0 if passed else 1, time.time())


@pytest.mark.parametrize(
    "passed, code, said", [(True, 0, "ascendprep checks pass"), (False, 1, "failed: network.link")]
)
def test_npd_plugin_reads_the_metrics_file(tmp_path, passed, code, said):
    prom = tmp_path / "ascendprep.prom"
    prom.write_text(_metrics(passed))
    done = subprocess.run(
        ["sh", str(_npd_script(tmp_path))],
        capture_output=True,
        text=True,
        env={**os.environ, "ASCENDPREP_PROM": str(prom)},
    )
    assert done.returncode == code and done.stdout.startswith(said)
    assert len(done.stdout.rstrip("\n")) <= 80


def test_npd_plugin_says_unknown_for_a_missing_or_stale_result(tmp_path):
    script = _npd_script(tmp_path)
    prom = tmp_path / "ascendprep.prom"
    missing = subprocess.run(
        ["sh", str(script)], capture_output=True, text=True, env={**os.environ, "ASCENDPREP_PROM": str(prom)}
    )
    assert missing.returncode == 2 and "no ascendprep result" in missing.stdout
    prom.write_text(_metrics(True))
    old = time.time() - 3600
    os.utime(prom, (old, old))
    stale = subprocess.run(
        ["sh", str(script)], capture_output=True, text=True, env={**os.environ, "ASCENDPREP_PROM": str(prom)}
    )
    assert stale.returncode == 2 and "old" in stale.stdout
