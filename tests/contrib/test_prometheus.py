"""``verify --format prometheus`` / ``--prometheus-file``: node_exporter textfile metrics that the
official text-format parser (``prometheus_client.parser``) reads, one series per check and NPU,
written atomically."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Dict, Tuple

import pytest
from click.testing import CliRunner

prometheus_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client is in the test extra")

from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state, with_npu  # noqa: E402

from ascendprep.base.limits import PROMETHEUS_LABEL_VALUE_CAP  # noqa: E402
from ascendprep.commands.verify import verify_command  # noqa: E402
from ascendprep.facts.model import VersionFile  # noqa: E402
from ascendprep.report.prometheus import label_value, verify_metrics, write_metrics_file  # noqa: E402
from ascendprep.run import verify as verify_flow  # noqa: E402
from ascendprep.run.bundle import Bundle  # noqa: E402
from ascendprep.verify.checks.registry import Selection  # noqa: E402
from ascendprep.verify.checks.runner import run_checks  # noqa: E402

Series = Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]


def parse(text: str) -> Series:
    """Every sample as {(name, sorted labels): value}; fails on a repeated series."""
    series: Series = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in series, f"duplicate series {key}"
            series[key] = sample.value
    return series


def value(series: Series, name: str, **labels: str) -> float:
    matches = [v for (n, ls), v in series.items() if n == name and all((k, labels[k]) in ls for k in labels)]
    assert len(matches) == 1, f"{name}{labels}: {len(matches)} series"
    return matches[0]


@pytest.fixture(scope="module")
def desired():
    return desired_state()


def _evidence(desired, facts=None):
    hosts, pings = cluster_evidence(desired, facts)
    results = run_checks(desired, hosts, pings, Selection(), TODAY)
    return hosts, pings, results


def _metrics(desired, facts=None, allreduce=None, exit_code=0) -> Series:
    hosts, _, results = _evidence(desired, facts)
    text = verify_metrics(results, hosts, list(hosts), exit_code, 1_700_000_000.0, allreduce, "0.1.0")
    return parse(text)


def test_a_link_down_is_one_zero_series_on_its_npu(desired):
    node2 = cluster_evidence(desired)[0]["node2"].facts
    series = _metrics(desired, {"node2": with_npu(node2, 3, link="DOWN")}, exit_code=1)
    assert value(series, "ascendprep_check_passed", check="network.link", node="node2", npu="3") == 0
    assert value(series, "ascendprep_check_passed", check="network.link", node="node2", npu="2") == 1
    assert value(series, "ascendprep_check_passed", check="network.link", node="node1", npu="3") == 1
    assert value(series, "ascendprep_verify_success") == 0
    assert value(series, "ascendprep_verify_exit_code") == 1
    assert value(series, "ascendprep_checks_failed", severity="error") >= 1


def test_a_healthy_cluster_has_every_check_passed(desired):
    series = _metrics(desired)
    checks = {k: v for k, v in series.items() if k[0] == "ascendprep_check_passed"}
    assert len(checks) > 8 * 4  # at least one per NPU of the four nodes
    assert set(checks.values()) == {1.0}
    assert value(series, "ascendprep_verify_success") == 1
    assert value(series, "ascendprep_node_reachable", node="node4") == 1


def test_an_unreachable_node_is_reachable_0(desired):
    series = _metrics(desired, {"node3": None}, exit_code=1)
    assert value(series, "ascendprep_node_reachable", node="node3") == 0


def test_versions_are_info_metrics_per_node(desired):
    series = _metrics(desired)
    infos = [dict(ls) for (name, ls) in series if name == "ascendprep_version_info"]
    assert {"node": "node1", "component": "driver", "version": "25.2.0"} in infos
    assert {i["node"] for i in infos} == {"node1", "node2", "node3", "node4"}


def test_hostile_version_text_is_escaped_and_capped(desired):
    node1 = cluster_evidence(desired)[0]["node1"].facts
    hostile = 'a"b\\c\nd}\x1b[31m' + "x" * 1000
    facts = replace(
        node1, versions=replace(node1.versions, driver=VersionFile("/x/version.info", {"Version": hostile}))
    )
    series = _metrics(desired, {"node1": facts}, exit_code=1)
    driver = [
        dict(ls)["version"]
        for (name, ls) in series
        if name == "ascendprep_version_info" and ("node", "node1") in ls and ("component", "driver") in ls
    ]
    assert len(driver) == 1
    assert driver[0].startswith('a"b\\c\nd}\ufffd[31m') and len(driver[0]) == PROMETHEUS_LABEL_VALUE_CAP
    assert label_value('q"') == 'q\\"'


def test_allreduce_busbw_per_size(desired):
    allreduce = {
        "passed": True,
        "verdict": {
            "world_size": 32,
            "sizes": [{"bytes": 1024, "busbw_GBps": 0.5}, {"bytes": 268435456, "busbw_GBps": 160.25}],
        },
    }
    series = _metrics(desired, allreduce=allreduce)
    assert value(series, "ascendprep_allreduce_busbw_bytes_per_second", size_bytes="268435456") == pytest.approx(
        160.25e9
    )
    assert value(series, "ascendprep_allreduce_passed") == 1
    assert value(series, "ascendprep_allreduce_world_size") == 32


def test_odd_figures_are_written_as_the_text_format_spells_them(desired):
    allreduce = {
        "passed": False,
        "verdict": {
            "sizes": [
                {"bytes": 8, "busbw_GBps": float("inf")},
                {"bytes": 16, "busbw_GBps": float("nan")},
                {"bytes": "x", "busbw_GBps": 1.0},
                {"bytes": 32, "busbw_GBps": "fast"},
            ]
        },
    }
    series = _metrics(desired, allreduce=allreduce)
    assert value(series, "ascendprep_allreduce_busbw_bytes_per_second", size_bytes="8") == float("inf")
    busbw = [ls for (name, ls) in series if name == "ascendprep_allreduce_busbw_bytes_per_second"]
    assert len(busbw) == 2  # the malformed rows are left out


def test_two_results_on_one_label_set_are_one_series_failing_if_either_failed(desired):
    hosts, _, results = _evidence(desired)
    link = next(r for r in results if r.check == "network.link" and r.node == "node1" and r.npu == 0)
    failed_twin = replace(link, status=type(link.status).FAILED)
    text = verify_metrics([link, failed_twin, link], hosts, list(hosts), 1, 0.0)
    assert value(parse(text), "ascendprep_check_passed", check="network.link", node="node1", npu="0") == 0


# --- the command ---------------------------------------------------------------------------------


def _saved(desired, tmp_path, monkeypatch, facts=None) -> Path:
    """A saved run of this evidence; the bundle reader (tested in tests/run) is replaced by one
    handing it back, since real bundles re-parse raw transcripts."""
    hosts, pings = cluster_evidence(desired, facts)
    folder = tmp_path / "runs" / "20250601T000000Z"
    folder.mkdir(parents=True)
    bundle = Bundle("/x/inventory.yaml", INVENTORY, hosts, pings, "ring", Selection().to_dict(), TODAY, path=folder)
    monkeypatch.setattr(
        verify_flow,
        "read_bundle",
        lambda path, merge=None: bundle if Path(path) == folder else pytest.fail(f"read {path}"),
    )
    return folder


@pytest.fixture
def saved_run(desired, tmp_path, monkeypatch):
    """A saved run with NPU 5 of node2 down."""
    return _saved(
        desired, tmp_path, monkeypatch, {"node2": with_npu(cluster_evidence(desired)[0]["node2"].facts, 5, link="DOWN")}
    )


def test_format_prometheus_prints_parseable_metrics(saved_run):
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved_run), "--format", "prometheus"])
    assert outcome.exit_code == 1, outcome.stderr
    series = parse(outcome.stdout)
    assert value(series, "ascendprep_check_passed", check="network.link", node="node2", npu="5") == 0
    assert value(series, "ascendprep_verify_exit_code") == 1


def test_prometheus_file_is_written_atomically_and_readable_by_node_exporter(saved_run, tmp_path):
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    target = textfile_dir / "ascendprep.prom"
    target.write_text("old\n")
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(saved_run), "--prometheus-file", str(target)])
    assert outcome.exit_code == 1, outcome.stderr
    assert "network.link" in outcome.stdout  # the text report still goes to the terminal
    assert value(parse(target.read_text()), "ascendprep_check_passed", check="network.link", node="node2", npu="5") == 0
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert sorted(p.name for p in textfile_dir.iterdir()) == ["ascendprep.prom"]  # no temp file left


def test_an_unwritable_prometheus_file_is_a_located_error_and_fails_the_run(desired, tmp_path, monkeypatch):
    healthy = _saved(desired, tmp_path, monkeypatch)
    assert CliRunner().invoke(verify_command, ["--from-bundle", str(healthy)]).exit_code == 0
    target = tmp_path / "missing-dir" / "ascendprep.prom"
    outcome = CliRunner().invoke(
        verify_command, ["--from-bundle", str(healthy), "--prometheus-file", str(target), "--format", "json"]
    )
    assert outcome.exit_code == 1
    assert "--prometheus-file" in outcome.stderr and "missing-dir" in outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert json.loads(outcome.stdout)["exit_code"] == 1  # the document says what the exit says


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "a.prom"
    target.write_text("old\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_metrics_file(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.prom"]
