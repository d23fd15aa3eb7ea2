"""Hostile inventories and plan/bundle JSON: located errors, bounded time and memory, no markup.

Each case here was a traceback, a hang or gigabytes before the limits in yamlsource/jsoninput and
the plain-text output in report/text.py.
"""

from __future__ import annotations

import io
import json
import resource
import time

import pytest
from click.testing import CliRunner
from rich.console import Console

from ascendprep.apply.journal import ApplyJournal
from ascendprep.apply.script import StepResult
from ascendprep.base import exitcodes
from ascendprep.base.jsoninput import parse_json, read_json_file
from ascendprep.base.limits import INVENTORY_MAX_BYTES
from ascendprep.base.text import cell, markup_safe, visible
from ascendprep.base.yamlsource import InputError, parse_yaml
from ascendprep.cli import main
from ascendprep.plan.changes import SetNpuAddress, SetSysctl
from ascendprep.plan.diff import HostPlan
from ascendprep.plan.planfile import PlanFile
from ascendprep.report.changes import apply_table, changes_table
from ascendprep.run.apply import _record_results, _report
from ascendprep.run.fanout import HostOutcome
from ascendprep.run.hosts import AppliedHost

#: An OSC title change, a full terminal reset, a carriage return over the line, and markup.
HOSTILE = "leaf\x1b]0;pwned\x07\x1bc\rX[/bold][/home/x/ip.c:553]"
SHOWN = "leaf\\x1b]0;pwned\\x07\\x1bc\\x0dX[/bold][/home/x/ip.c:553]"

BILLION_LAUGHS = "".join(
    f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9 if prev else ['"lol"'] * 9) + "]\n"
    for prev, name in zip([None, "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi")
)


def _plain(renderable) -> str:
    """What a terminal would receive (no colour codes of rich's own, so any ESC is the value's)."""
    buffer = io.StringIO()
    Console(file=buffer, width=300, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue()


# -- the helper ----------------------------------------------------------------------------


def test_visible_spells_out_control_characters_and_keeps_newlines_and_tabs():
    assert visible(HOSTILE) == SHOWN
    assert visible("a\tb\nc\x00d\x9be\u202ef") == "a\tb\nc\\x00d\\x9be\\u202ef"
    assert visible(None) == "" and visible(42) == "42"
    assert visible(visible(HOSTILE)) == SHOWN  # idempotent: printing twice does not double escapes


def test_cell_and_markup_safe_show_markup_as_text():
    assert _plain(cell("[/bold]")).strip() == "[/bold]"
    assert (
        _plain(f"[red]{markup_safe('[/bold] ends with a backslash' + chr(92))}[/]").strip()
        == "[/bold] ends with a backslash\\"
    )


# -- plan and apply output ----------------------------------------------------------------


def test_plan_table_shows_hostile_host_errors_as_text():
    plans = [
        HostPlan("node1", "10.0.0.1", reachable=False, error=f"authentication failed for user [/bold] on {HOSTILE}"),
        HostPlan("node2", "10.0.0.2", reachable=True, incomplete=[f"cat /proc/sys/x: {HOSTILE}"]),
    ]
    text = _plain(changes_table(plans))
    assert f"not planned: authentication failed for user [/bold] on {SHOWN}" in text
    assert f"incomplete: cat /proc/sys/x: {SHOWN}" in text
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


def test_apply_report_with_a_tool_message_in_brackets_is_printed_and_journaled(tmp_path):
    change = SetNpuAddress("node1", {"device": "10.0.0.1/255.255.255.0", "file": None}, 0, "10.0.0.2", "255.255.255.0")
    message = "[/home/x/ip.c:553] set ip failed\x1b]0;pwned\x07"
    outcomes = {
        "node1": HostOutcome("node1", AppliedHost({"hccn.ip:0": StepResult("hccn.ip:0", 1, message)}, 1, "", False))
    }
    saved = PlanFile("inv.yaml", "0" * 64, "c", "2026-01-01T00:00:00+00:00", [])
    buffer = io.StringIO()
    out = Console(file=buffer, width=300, color_system=None, force_terminal=False)
    journal_file = ApplyJournal(tmp_path / "plan.json", "c")
    journal_file.intend({"node1": [change]}, {})
    rows, failed = _record_results(journal_file, {"node1": [change]}, outcomes)
    journal_file.finish("finished", "some changes failed")
    code = _report(out, tmp_path / "plan.json", saved, rows, failed, journal_file.path)
    text = buffer.getvalue()
    assert code == exitcodes.FAILED
    assert "[/home/x/ip.c:553] set ip failed\\x1b]0;pwned\\x07" in text and "\x1b" not in text
    journal = json.loads(journal_file.path.read_text())
    assert journal["hosts"][0]["steps"][0]["output"] == message  # the journal keeps the raw value


def test_apply_table_of_a_step_that_never_ran():
    change = SetSysctl("n[/x]", "[/bold] seen", "net.core.x", "1")  # a live value is the host's text
    text = _plain(apply_table([("n[/x]", change, None, "\x1bc")]))
    assert "n[/x]" in text and "[/bold] seen" in text and "did not run" in text and "\\x1bc" in text


def test_invalid_inventory_user_in_markup_is_a_located_error(tmp_path):
    inventory = tmp_path / "u.yaml"
    inventory.write_text(
        'name: r\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\nnodes:\n  - host: node1\nssh:\n  user: "[/bold]"\n'
    )
    result = CliRunner().invoke(main, ["plan", str(inventory), "--offline"])
    assert result.exit_code == exitcodes.INVALID, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert f"{inventory}:7: ssh.user: '[/bold]' is not a valid user name" in result.output


def test_inventory_host_with_terminal_escapes_is_shown_escaped(tmp_path):
    inventory = tmp_path / "h.yaml"
    inventory.write_text(
        'name: r\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\nnodes:\n  - host: "x\\e]0;pwned\\a\\ec\\ry"\n'
    )
    result = CliRunner().invoke(main, ["plan", str(inventory), "--offline"])
    assert result.exit_code == exitcodes.INVALID, result.output
    assert "x\\x1b]0;pwned\\x07\\x1bc\\x0dy" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output and "\r" not in result.output


def test_offline_plan_json_keeps_values_exact_and_text_shows_them(tmp_path):
    """A label with brackets is fine YAML: the text plan shows it, and no markup error stops it."""
    inventory = tmp_path / "ok.yaml"
    inventory.write_text(
        "name: r\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\n"
        "nodes:\n  - host: 10.0.0.1\n    name: n1\n    labels: {rack: '[/bold]'}\n"
    )
    text = CliRunner().invoke(main, ["plan", str(inventory), "--offline"])
    assert text.exit_code == 0, text.output
    document = CliRunner().invoke(main, ["plan", str(inventory), "--offline", "--format", "json"])
    assert json.loads(document.stdout)["nodes"][0]["labels"] == {"rack": "[/bold]"}


# -- YAML limits ---------------------------------------------------------------------------


def _located(text: str) -> str:
    with pytest.raises(InputError) as info:
        parse_yaml(text, "inv.yaml")
    (problem,) = info.value.problems
    return str(problem)


def test_billion_laughs_is_a_located_error_in_well_under_a_second():
    assert len(BILLION_LAUGHS.encode()) < 600
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    message = _located(BILLION_LAUGHS)
    assert time.monotonic() - started < 0.5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB
    assert message.startswith("inv.yaml:") and "expands to more than 1,000,000 YAML nodes" in message


def test_billion_laughs_through_the_cli(tmp_path):
    inventory = tmp_path / "bomb.yaml"
    inventory.write_text(BILLION_LAUGHS)
    started = time.monotonic()
    result = CliRunner().invoke(main, ["plan", str(inventory), "--offline"])
    assert time.monotonic() - started < 2.0  # loaded CI machines; before the caps: minutes and gigabytes
    assert result.exit_code == exitcodes.INVALID and "YAML nodes" in result.output, result.output


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("a: &a [1, *a]\n", 1, "recursive alias"),
        ("name: x\nnodes: &n\n  - host: a\n    labels: *n\n", 4, "recursive alias"),
        ("x: " + "[" * 5000 + "]" * 5000 + "\n", 1, "nested more than 64 deep"),
        ("x:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 200)), 65, "nested more than 64 deep"),
        ("name: x\nnpus_per_node: " + "9" * 5000 + "\n", 2, "a number of 5,000 digits"),
    ],
    ids=["recursive-flow", "recursive-block", "deep-flow", "deep-block", "huge-int"],
)
def test_recursion_and_depth_are_located_errors_never_recursion_errors(text, line, fragment):
    message = _located(text)
    assert message.startswith(f"inv.yaml:{line}: ") and fragment in message, message


def test_ordinary_anchors_still_work():
    document = parse_yaml("base: &b {rack: r1}\nnodes:\n  - labels: *b\n  - labels: *b\n", "inv.yaml")
    assert document.data["nodes"][1]["labels"] == {"rack": "r1"}


def test_an_oversized_inventory_is_refused_before_parsing(tmp_path):
    inventory = tmp_path / "big.yaml"
    inventory.write_bytes(b"# " + b"x" * INVENTORY_MAX_BYTES + b"\n")
    result = CliRunner().invoke(main, ["plan", str(inventory), "--offline"])
    assert result.exit_code == exitcodes.INVALID and "larger than" in result.output, result.output


# -- JSON limits (plan files, bundles) -----------------------------------------------------


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than 64 deep"),
        ("[" * 100 + "]" * 100, "nested more than 64 deep"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": ' + "9" * 5000 + "}", "not JSON that can be read"),
        ('{"a": 1,\n "b": }', "not JSON"),
    ],
    ids=["very-deep", "deep", "nan", "huge-int", "syntax"],
)
def test_parse_json_refuses_with_the_file_named(text, fragment):
    with pytest.raises(InputError) as info:
        parse_json(text, "run.json")
    assert str(info.value).startswith("run.json") and fragment in str(info.value)


def test_read_json_file_stops_at_its_size_cap(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"pad": "x" * 2000}))
    with pytest.raises(InputError, match="larger than 1,000 bytes"):
        read_json_file(path, max_bytes=1000)
    assert read_json_file(path)["pad"] == "x" * 2000


def test_apply_with_a_deeply_nested_plan_file_is_a_located_error(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(main, ["apply", str(plan)])
    assert result.exit_code == exitcodes.INVALID, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert f"{plan}: collections nested more than 64 deep; refused" in result.output
    missing = CliRunner().invoke(main, ["apply", str(tmp_path / "none.json")])
    assert missing.exit_code == exitcodes.INVALID and "run 'ascendprep plan INVENTORY' first" in missing.output


def test_lab_messages_show_names_escaped():
    from ascendprep.lab.cli import lab_group

    for args in (["fault", "n1", "link-down", "--name", "x\x1b]0;t\x07"], ["status", "--name", "x\x1b]0;t\x07"]):
        result = CliRunner().invoke(lab_group, args)
        assert result.exit_code == exitcodes.FAILED, result.output
        assert "lab 'x\\x1b]0;t\\x07' is not up" in result.output and "\x1b" not in result.output


def test_a_megabyte_message_is_cut_on_the_terminal_only():
    message = "x" * 1_000_000
    shown = visible(message)
    assert shown.startswith("x" * 4096) and shown.endswith("… (995,904 more characters)") and len(shown) < 5000
