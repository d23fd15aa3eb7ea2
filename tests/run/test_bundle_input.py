"""A bundle handed to ``--from-bundle`` is hostile input, numbers and shapes included: members
must lie apart inside their files, what is decompressed has a budget per bundle and per merge,
and a value of the wrong shape is a located error (file: JSON path: what), exit 2."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest
from click.testing import CliRunner
from verify_cluster_facts import INVENTORY, TODAY, cluster_evidence, desired_state

from ascendprep.base import exitcodes
from ascendprep.base.jsoninput import parse_json
from ascendprep.base.yamlsource import InputError
from ascendprep.commands.verify import verify_command
from ascendprep.run import bundle as bundle_module
from ascendprep.run.bundle import Bundle, BundleError, ReadBudget, new_bundle_dir, read_bundle, write_bundle
from ascendprep.verify.checks.registry import Selection

#: Written in place of ``"@TEXT"`` in a run.json: numbers json.dumps cannot write (``1e400``).
RAW = re.compile(r'"@([^"]*)"')
BIG = "1" + "0" * 400


@pytest.fixture(scope="module")
def evidence():
    desired = desired_state()
    return cluster_evidence(desired)


def _bundle(evidence, local_node=None) -> Bundle:
    hosts, plan = evidence
    hosts = {
        name: host.__class__(**{**host.__dict__, "gather_stdout": f"raw output of {name}\n"})
        for name, host in hosts.items()
    }
    if local_node is not None:
        hosts = {local_node: hosts[local_node]}
    return Bundle(
        "/x/inventory.yaml", INVENTORY, hosts, plan, "ring", Selection().to_dict(), TODAY, local_node=local_node
    )


@pytest.fixture
def saved(evidence, tmp_path):
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(_bundle(evidence), target, {"kind": "verify"})
    return target


def _run(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


def _edit_run(folder: Path, change: Callable[[dict], Any]) -> None:
    run = _run(folder)
    change(run)
    (folder / "run.json").write_text(RAW.sub(r"\1", json.dumps(run)))


def _verify(*args: str) -> Tuple[int, str]:
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", *args], env={"COLUMNS": "500"})
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), repr(outcome.exception)
    assert "Traceback" not in outcome.output
    return outcome.exit_code, " ".join(outcome.output.split())


# -- members apart, inside their files ---------------------------------------------------------


def test_host_records_sharing_one_member_are_refused_before_any_is_decompressed(saved, monkeypatch):
    members = _run(saved)["hosts"]["node1"]["files"]["gather.out"]
    _edit_run(saved, lambda run: [record["files"].update({"gather.out": members}) for record in run["hosts"].values()])
    calls: List[int] = []
    real = bundle_module.zlib.decompressobj
    monkeypatch.setattr(bundle_module.zlib, "decompressobj", lambda *a: calls.append(1) or real(*a))
    with pytest.raises(
        BundleError,
        match=r"run\.json: hosts\.node\d\.files\.gather\.out \[\d+, \d+\] and hosts\.node\d\.files\.gather\.out \(at \d+\) overlap in hosts/gather\.out\.gz; refused",
    ):
        read_bundle(saved)
    assert calls == []
    code, output = _verify(str(saved))
    assert code == exitcodes.INVALID and "overlap in hosts/gather.out.gz" in output and str(saved) in output


def test_a_member_reaching_into_the_next_is_refused(saved):
    offset, length = _run(saved)["hosts"]["node1"]["files"]["gather.out"]
    _edit_run(saved, lambda run: run["hosts"]["node1"]["files"].update({"gather.out": [offset, length + 1]}))
    with pytest.raises(BundleError, match="overlap in hosts/gather.out.gz"):
        read_bundle(saved)


# -- what may be decompressed in all -----------------------------------------------------------


def _bombs(folder: Path, size: int) -> None:
    """Every host's gather transcript made a member of its own that decompresses to ``size`` bytes."""
    stream = folder / "hosts" / "gather.out.gz"
    places = {}
    with open(stream, "ab") as out:
        for name in _run(folder)["hosts"]:
            bomb = gzip.compress(b"\0" * size)
            places[name] = [out.tell(), len(bomb)]
            out.write(bomb)
    _edit_run(
        folder,
        lambda run: [run["hosts"][name]["files"].update({"gather.out": where}) for name, where in places.items()],
    )


def test_many_small_bombs_stop_at_the_bundles_budget_naming_it(saved, monkeypatch):
    monkeypatch.setattr(bundle_module, "BUNDLE_FILE_MAX_BYTES", 100_000)
    monkeypatch.setattr(bundle_module, "BUNDLE_READ_MAX_BYTES", 250_000)
    _bombs(saved, 90_000)  # each under the per-file cap, four of them over the budget
    with pytest.raises(
        BundleError,
        match=rf"^{re.escape(str(saved))}: its files decompress to more than 250,000 bytes in all \(node\d's gather\.out passes that\); refused",
    ):
        read_bundle(saved)
    code, output = _verify(str(saved))
    assert code == exitcodes.INVALID and f"{saved}: its files decompress to more than 250,000 bytes in all" in output


def test_the_budget_leaves_an_honest_bundle_alone(saved):
    budget = ReadBudget(bundle_module.BUNDLE_READ_MAX_BYTES)
    bundle = read_bundle(saved, budget)
    assert bundle.hosts["node2"].gather_stdout == "raw output of node2\n"
    assert 0 < budget.used < 1_000_000 and budget.bundles == 1


def test_node_bundles_together_stop_at_the_merges_budget(evidence, tmp_path, monkeypatch):
    folders = []
    for name in ("node1", "node2", "node3"):
        folder = tmp_path / name
        write_bundle(_bundle(evidence, local_node=name), folder, {"kind": "verify"})
        folders.append(folder)
    merge = ReadBudget(10**9)
    sizes = []
    for folder in folders:
        before = merge.used
        read_bundle(folder, merge)
        sizes.append(merge.used - before)
    limit = max(sizes) + min(sizes) // 2  # each alone fits, two do not
    monkeypatch.setattr(bundle_module, "BUNDLE_READ_MAX_BYTES", limit)
    for folder in folders:
        read_bundle(folder)  # alone: within its own budget
    code, output = _verify(*map(str, folders))
    assert code == exitcodes.INVALID, output
    assert f"{folders[1]}: the 2 bundles read so far decompress to more than {limit:,} bytes in all" in output


# -- numbers and shapes in the JSON ------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "where", "what"),
    [
        (
            lambda run: run["hosts"]["node1"].update(seconds="@1e400"),
            "hosts.node1.seconds",
            "the number 1e400 is beyond a double's range",
        ),
        (
            lambda run: run["hosts"]["node1"].update(ssh_execs="@" + BIG),
            "hosts.node1.ssh_execs",
            "the number 10000000000000000000… (401 characters) is more than 24 digits",
        ),
        (
            lambda run: run["pings"]["pairs"][0]["a"].update(npu="@-1e999"),
            "pings.pairs[0].a.npu",
            "the number -1e999 is beyond a double's range",
        ),
        (lambda run: run["hosts"]["node1"].update(ping=[1]), "hosts.node1.ping", "must be an object, not a list"),
        (lambda run: run.update(hosts=[1]), "hosts", "must be an object, not a list"),
        (
            lambda run: run["hosts"]["node2"].update(gathered="yes"),
            "hosts.node2.gathered",
            "must be true or false, not text",
        ),
        (
            lambda run: run["hosts"]["node1"].update(ssh_execs=-3),
            "hosts.node1.ssh_execs",
            "must be a count (0, 1, 2, ...), not -3",
        ),
        (
            lambda run: run["hosts"]["node1"].update(seconds=-1.5),
            "hosts.node1.seconds",
            "must be a number of seconds (0 or more), not -1.5",
        ),
        (
            lambda run: run["pings"]["pairs"][0]["a"].update(npu="3"),
            "pings.pairs[0].a.npu",
            "must be a count (0, 1, 2, ...), not text",
        ),
        (lambda run: run["pings"].update(pairs={"a": 1}), "pings.pairs", "must be a list, not an object"),
        (
            lambda run: run["pings"]["pairs"][0].update(source=["a"]),
            "pings.pairs[0].source",
            'must be "a", "b" or null',
        ),
        (
            lambda run: run.update(selection={"only": [{"check": "x"}]}),
            "selection.only[0]",
            "must be text, not an object",
        ),
        (lambda run: run.update(mesh="star"), "mesh", "'star' is not one of ring, full"),
        (lambda run: run.update(date="2026-13-01"), "date", "'2026-13-01' is not a date such as 2026-01-31"),
        (
            lambda run: run.update(allreduce_findings=[{"id": "x", "severity": ["error"], "message": "m"}]),
            "allreduce_findings[0].severity",
            "must be one of error, warning, info",
        ),
        (
            lambda run: run.update(
                allreduce_findings=[{"id": "x", "severity": "error", "message": "m", "code": "rm -rf"}]
            ),
            "allreduce_findings[0]",
            "has fields a finding does not have: code",
        ),
    ],
)
def test_crafted_numbers_and_shapes_in_run_json_are_located_errors(saved, change, where, what):
    _edit_run(saved, change)
    code, output = _verify(str(saved))
    assert code == exitcodes.INVALID, output
    assert f"{saved / 'run.json'}: {where}: {what}" in output


@pytest.mark.parametrize(
    ("doc", "where", "what"),
    [
        ('[{"passed": true}]', "", "must be an object, not a list"),
        ('{"passed": "yes"}', "passed: ", "must be true or false, not text"),
        ('{"verdict": {"sizes": {"8": 1.0}}}', "verdict.sizes: ", "must be a list, not an object"),
        (
            '{"verdict": {"sizes": [{"bytes": 8, "busbw_GBps": "fast"}]}}',
            "verdict.sizes[0].busbw_GBps: ",
            "must be a number (0 or more), not text",
        ),
        (
            '{"verdict": {"sizes": [{"bytes": 8, "busbw_GBps": 1e400}]}}',
            "verdict.sizes[0].busbw_GBps: ",
            "the number 1e400 is beyond a double's range",
        ),
        (
            '{"verdict": {"rank_times": {"bytes": 8, "median_us": 1.0, "ranks": [[0, "<b>n</b>", "slow"]]}}}',
            "verdict.rank_times.ranks[0][2]: ",
            "must be a number (0 or more), not text",
        ),
        (
            '{"verdict": {"rank_times": {"bytes": 8, "median_us": 1.0, "ranks": [[0, "n"]]}}}',
            "verdict.rank_times.ranks[0]: ",
            "must be [rank, node, time_us]",
        ),
        (
            '{"verdict": {"world_size": ' + BIG + "}}",
            "verdict.world_size: ",
            "the number 10000000000000000000… (401 characters) is more than 24 digits",
        ),
    ],
)
def test_crafted_allreduce_json_is_a_located_error_for_every_format(saved, doc, where, what):
    (saved / "allreduce.json.gz").write_bytes(gzip.compress(doc.encode()))
    for extra in ([], ["--format", "prometheus"], ["--format", "json"]):
        code, output = _verify(str(saved), *extra)
        assert code == exitcodes.INVALID, (extra, output)
        assert f"{saved / 'allreduce.json'}: {where}{what}" in output, (extra, output)


def test_json_read_back_refuses_numbers_no_document_holds_naming_their_path():
    with pytest.raises(InputError) as caught:
        parse_json('{"hosts": {"n1": {"seconds": [0, 1e400]}}}', "run.json")
    assert [str(p) for p in caught.value.problems] == [
        "run.json: hosts.n1.seconds[1]: the number 1e400 is beyond a double's range (it reads as infinity); refused"
    ]
    with pytest.raises(InputError, match="more than 24 digits"):
        parse_json('{"count": -' + BIG + "}", "plan.json")
    assert parse_json('{"a": 18446744073709551615, "b": 1.5e300, "c": -2}', "x.json") == {
        "a": 2**64 - 1,
        "b": 1.5e300,
        "c": -2,
    }
