"""``diagnose --baseline``: the root rank's NPU already failed a check in the verify run before the
job, or drifted since (the collected NPU state against the baseline's facts)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, healthy_facts, with_npu

sys.path.insert(0, str(Path(__file__).parents[1] / "diagnose"))

from joblogs import Rank, t, timeout_lines, write_job  # noqa: E402

from ascendprep.cli import main  # noqa: E402
from ascendprep.diagnose.baseline import note_for  # noqa: E402
from ascendprep.diagnose.model import Culprit  # noqa: E402
from ascendprep.run.bundle import Bundle, new_bundle_dir, write_bundle  # noqa: E402
from ascendprep.verify.checks.registry import Selection  # noqa: E402
from ascendprep.verify.checks.runner import run_checks  # noqa: E402

# The inventory's nodes node1..node4, 8 NPUs each; rank 11 (node2, NPU 3) never reports.
JOB = [Rank(n * 8 + d, f"node{n + 1}", d, 50000 + n * 8 + d, f"10.231.0.{11 + n}") for n in range(4) for d in range(8)]


def verify_bundle(tmp_path: Path, facts=None) -> Path:
    desired = desired_state()
    hosts, plan = cluster_evidence(desired, facts)
    target = new_bundle_dir(tmp_path / "runs")
    bundle = Bundle("/x/inventory.yaml", INVENTORY, hosts, plan, "ring", Selection().to_dict(), TODAY)
    # As verify saves it: its --format json verdict (findings), and the facts of the hosts with one.
    results = run_checks(desired, hosts, plan, today=TODAY)
    report = {
        "kind": "verify",
        "hosts": {name: {} for name in hosts},
        "findings": [r.finding().to_dict() for r in results if r.failed],
    }
    write_bundle(bundle, target, report, results=results)
    return target


def job_tree(root: Path, state=None) -> Path:
    plog = {r.rank: timeout_lines(r, 32, t(40, 30)) for r in JOB if r.rank != 11}
    plog[11] = []
    write_job(root, JOB, plog)
    for node, facts in (state or {}).items():
        (root / node / "state.json").write_text(json.dumps(facts.to_dict()))
    return root


def diagnose_json(*args: str) -> list:
    result = CliRunner().invoke(main, ["diagnose", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["jobs"]


def test_a_finding_the_baseline_had_on_the_root_npu_is_named(tmp_path):
    desired = desired_state()
    down = with_npu(healthy_facts(desired, "node2"), 3, link="DOWN")
    baseline = verify_bundle(tmp_path, {"node2": down})
    (job,) = diagnose_json("--baseline", str(baseline), str(job_tree(tmp_path / "logs")))
    assert [(c["node"], c["device"]) for c in job["root"]["culprits"]] == [("node2", 3)]
    (note,) = job["baseline"]
    assert note["in_baseline"] and "network.link" in {f["id"] for f in note["findings"]}


def test_an_npu_that_passed_then_and_is_down_now_drifted():
    desired = desired_state()
    then = healthy_facts(desired, "node2")
    now = with_npu(then, 3, link="DOWN", link_stat=replace(then.npus[3].link_stat, down_count=3))
    culprit = Culprit(node="node2", rank=11, device=3)
    note = note_for(culprit, [], ["node2"], {"node2": then}, {"node2": now})
    assert note is not None and note.compared and note.findings == ()
    assert note.drift == ("link UP -> DOWN", "link down count 0 -> 3")
    assert "drifted since: link UP -> DOWN" in note.sentence()
    same = note_for(culprit, [], ["node2"], {"node2": then}, {"node2": then})
    assert same is not None and same.drift == () and "no drift" in same.sentence()
    assert "not in the baseline" in note_for(culprit, [], ["node9"], {}, {}).sentence()


def test_the_verify_json_output_is_a_baseline_too_and_a_wrong_file_is_bad_input(tmp_path):
    doc = {"schema_version": 1, "kind": "verify", "hosts": {"node2": {}},
           "findings": [{"id": "network.link_flaps", "severity": "warning", "message": "NPU 3 flapped 4 times",
                         "fix": "", "node": "node2", "npu": 3, "evidence": {}}]}  # fmt: skip
    (tmp_path / "verify.json").write_text(json.dumps(doc))
    (job,) = diagnose_json("--baseline", str(tmp_path / "verify.json"), str(job_tree(tmp_path / "logs")))
    assert job["baseline"][0]["findings"][0]["id"] == "network.link_flaps"
    (tmp_path / "other.json").write_text('{"kind": "plan"}')
    result = CliRunner().invoke(main, ["diagnose", "--baseline", str(tmp_path / "other.json"), str(tmp_path / "logs")])
    assert result.exit_code == 2 and "not the --format json output of ascendprep verify" in result.output
