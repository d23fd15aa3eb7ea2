"""``ascendprep diagnose``: the answer first, JSON with schema_version, and the exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "diagnose"))

from joblogs import console_lines, cqe_line, ranks, t, timeout_lines, write_job  # noqa: E402

from ascendprep.cli import main  # noqa: E402

JOB = ranks(4, 8)


def issue_tree(root: Path) -> Path:
    plog = {r.rank: timeout_lines(r, 32, t(40, 30 + r.rank % 20)) for r in JOB}
    plog[13] = [cqe_line(JOB[13], JOB[21], t(40, 12))] + plog[13]
    return write_job(root, JOB, plog, {r.rank: console_lines(r, t(40, 31)) for r in JOB})


def test_text_answer_names_rank_node_npu_ip_fault_fix_rule_and_evidence_first(tmp_path):
    result = CliRunner().invoke(main, ["diagnose", str(issue_tree(tmp_path))])
    assert result.exit_code == 0, result.output
    head = result.output.split("Faults found")[0]
    assert f"Root cause: rank 13, node node1, NPU 5, device IP {JOB[13].device_ip}" in head
    assert "Fault: RDMA retransmissions ran out" in head and "Fix: " in head
    assert "network.link_flaps" in head and "Decided by rule cqe-links" in head
    assert f"plog-{JOB[13].pid}_20251024111652406.log:3: [ERROR] HCCL" in head


def test_json_has_schema_version_and_the_root(tmp_path):
    result = CliRunner().invoke(main, ["diagnose", "--format", "json", str(issue_tree(tmp_path))])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["schema_version"] == 1 and doc["kind"] == "ascendprep-diagnosis" and doc["decided"] is True
    (job,) = doc["jobs"]
    assert job["root"]["rule"] == "cqe-links"
    assert job["root"]["culprits"] == [
        {"node": "node1", "log_node": "node1", "rank": 13, "device": 5, "device_ip": JOB[13].device_ip}
    ]
    assert job["fault"]["key"] == "hccl.cqe_error" and job["fault"]["verify_checks"]
    assert job["root"]["evidence"][0]["line"] == 3


def test_no_rule_decides_exit_1_and_the_suspects_are_listed(tmp_path):
    plog = {r.rank: timeout_lines(r, 32, t(40, r.rank)) for r in JOB}
    result = CliRunner().invoke(main, ["diagnose", str(write_job(tmp_path, JOB, plog))])
    assert result.exit_code == 1
    assert "No rule decided the root rank." in result.output and "Suspects: rank 0, node node0" in result.output


def test_bad_input_is_exit_2_with_a_located_error_and_no_traceback(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["diagnose", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no log diagnose can read" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["diagnose", str(tmp_path / "missing")])
    assert result.exit_code == 2


def test_terminal_control_characters_in_a_log_are_spelled_out(tmp_path):
    plog = {r.rank: timeout_lines(r, 32, t(40, 30)) for r in JOB}
    plog[13] = [
        cqe_line(JOB[13], JOB[21], t(40, 12)).replace("(40013,python)", "(40013,py\x1b]0;pwned\x07[/bold])")
    ] + plog[13]
    result = CliRunner().invoke(main, ["diagnose", str(write_job(tmp_path, JOB, plog))])
    assert result.exit_code == 0 and "\x1b" not in result.output and "\\x1b" in result.output


def test_logs_without_an_error_are_exit_1_and_say_so(tmp_path):
    result = CliRunner().invoke(main, ["diagnose", str(write_job(tmp_path, JOB, {r.rank: [] for r in JOB}))])
    assert result.exit_code == 1 and "No error in this job's logs" in result.output
    assert "Root cause" not in result.output


def test_a_missing_baseline_or_a_file_for_dir_is_bad_input(tmp_path):
    tree = issue_tree(tmp_path / "logs")
    result = CliRunner().invoke(main, ["diagnose", "--baseline", str(tmp_path / "nope.json"), str(tree)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(main, ["diagnose", str(tmp_path / "file")])
    assert result.exit_code == 2


def test_html_page_answers_first_and_escapes_the_logs(tmp_path):
    plog = {r.rank: timeout_lines(r, 32, t(40, 30)) for r in JOB}
    hostile = cqe_line(JOB[13], JOB[21], t(40, 12)).replace("(40013,python)", "(40013,<script>x</script>)")
    plog[13] = [hostile] + plog[13]
    page = tmp_path / "out" / "diagnosis.html"
    page.parent.mkdir()
    tree = write_job(tmp_path / "logs", JOB, plog)
    result = CliRunner().invoke(main, ["diagnose", "--html", str(page), str(tree)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert html.index("Root cause: rank 13, node node1, NPU 5") < html.index("Faults found")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert oct(page.stat().st_mode & 0o777) == "0o600"
