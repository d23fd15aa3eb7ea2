"""Hosts and switches that print hostile or odd text: verify and plan carry on, the terminal
shows the text escaped, and the JSON carries it exactly.

The evidence is real: the gather and ping scripts run on this machine (LocalTransport) against a
fake ``hccn_tool`` whose LLDP system name retitles and resets a terminal and whose error messages
look like rich markup; the odd sysctl values are put into a real gather transcript.
"""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner
from rich.console import Console
from verify_cluster_facts import TODAY

from ascendprep.commands.verify import verify_command
from ascendprep.desired.state import build_desired
from ascendprep.facts.gather import parse_gather_output
from ascendprep.facts.sysctl import parse_proc_value
from ascendprep.facts.text import UnexpectedOutput
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import diff_host
from ascendprep.remote.local import LocalTransport
from ascendprep.report.changes import changes_table
from ascendprep.report.verify import print_verify, verify_document
from ascendprep.run.bundle import Bundle, new_bundle_dir, write_bundle
from ascendprep.run.evidence import collect
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import host_accesses
from ascendprep.verify.checks.model import COULD_NOT_CHECK
from ascendprep.verify.checks.registry import Selection
from ascendprep.verify.checks.runner import no_errors, run_checks

#: ESC ] 0 ; title BEL (retitles the terminal) and ESC c (resets it), in a switch's system name.
SWITCH = "leaf\x1b]0;pwned\x07\x1bc"
SWITCH_SHOWN = "leaf\\x1b]0;pwned\\x07\\x1bc"
TOOL_ERROR = "Command execute failed! [/home/x/ip.c:553] [/bold]"

FAKE_HCCN_TOOL = r"""#!/bin/sh
if [ "$3" = "-lldp" ]; then
	printf 'Chassis ID TLV\n\tMAC: 3c:c7:86:1a:2b:3c\nPort ID TLV\n\tIfname: 400GE1/1/20:2\n'
	printf 'System Name TLV\n\tleaf\033]0;pwned\007\033c\nEnd of LLDPDU TLV\n'
	exit 0
fi
if [ "$3" = "-ping" ]; then
	echo "device $2 PING $6"
	for seq in 0 1 2; do echo "recv seq=$seq,time=0.050000ms"; done
	echo "3 packets transmitted, 3 received, 0.00% packet loss"
	exit 0
fi
echo "Command execute failed! [/home/x/ip.c:553] [/bold]" >&2
exit 1
"""


def _inventory_text() -> str:
    return f"""\
name: local
product: atlas-a2
npus_per_node: 2
device_network: {{subnet: 10.20.0.0/24, detect: peer}}
nodes:
  - name: node1
    host: 127.0.0.1
    cabling:
      0: {{switch: leaf-1, port: 400GE1/1/20:2}}
  - name: node2
    host: 127.0.0.2
firewall: leave
software:
  python_path: {sys.executable}
"""


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    bin_dir = tmp_path_factory.mktemp("bin")
    tool = bin_dir / "hccn_tool"
    tool.write_text(FAKE_HCCN_TOOL)
    tool.chmod(0o755)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{old_path}"
    try:
        desired = build_desired(inventory_from_text(_inventory_text()))
        accesses = host_accesses(desired.inventory)
        with Session(accesses, forks=2, transport_factory=lambda access: LocalTransport(access.name, 60)) as session:
            hosts, plan = collect(session, desired, "ring", with_pings=True)
            execs = session.exec_counts()
    finally:
        os.environ["PATH"] = old_path
    return desired, hosts, plan, execs


def _terminal(print_to) -> str:
    buffer = io.StringIO()
    print_to(Console(file=buffer, width=400, color_system=None, force_terminal=False, highlight=False))
    return buffer.getvalue()


def test_lldp_name_and_tool_messages_reach_the_terminal_escaped(collected):
    desired, hosts, plan, _ = collected
    results = run_checks(desired, hosts, plan, today=TODAY)
    lldp = next(r for r in results if r.check == "network.lldp" and r.node == "node1" and r.npu == 0)
    assert lldp.failed and SWITCH in lldp.message  # the check itself keeps the raw name
    text = _terminal(lambda console: print_verify(console, results, hosts, ["node1", "node2"]))
    assert f"cabled to {SWITCH_SHOWN} 400GE1/1/20:2" in text
    assert TOOL_ERROR in text  # markup-looking tool output printed as it is
    assert "\x1b" not in text and "\x07" not in text
    assert "verify failed" in text


def test_json_carries_the_exact_values_escaped_by_json(collected):
    desired, hosts, plan, execs = collected
    results = run_checks(desired, hosts, plan, today=TODAY)
    document = verify_document(
        inventory={"path": "x"}, results=results, hosts=hosts, ssh_execs=execs, mesh="ring", selection={}, exit_code=1
    )
    text = json.dumps(document, indent=1)
    assert "\x1b" not in text and "\\u001b]0;pwned\\u0007\\u001bc" in text
    again = json.loads(text)
    lldp = next(c for c in again["checks"] if c["check"] == "network.lldp" and c["node"] == "node1" and c["npu"] == 0)
    assert lldp["evidence"]["lldp"]["switch"] == SWITCH


def test_from_bundle_output_is_escaped_and_exit_code_unchanged(collected, tmp_path):
    desired, hosts, plan, execs = collected
    results = run_checks(desired, hosts, plan, today=TODAY)
    target = new_bundle_dir(tmp_path / "runs")
    write_bundle(
        Bundle(
            "/x/inventory.yaml", _inventory_text(), hosts, plan, "ring", Selection().to_dict(), TODAY, ssh_execs=execs
        ),
        target,
        {},
    )
    outcome = CliRunner().invoke(verify_command, ["--from-bundle", str(target)], env={"COLUMNS": "400"})
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), repr(outcome.exception)
    assert outcome.exit_code == (0 if no_errors(results) else 1) == 1
    assert SWITCH_SHOWN in outcome.stdout and "\x1b" not in outcome.stdout and "\x07" not in outcome.stdout
    as_json = CliRunner().invoke(verify_command, ["--from-bundle", str(target), "--format", "json"])
    assert as_json.exit_code == 1 and "\x1b" not in as_json.stdout
    lldp = next(
        c
        for c in json.loads(as_json.stdout)["checks"]
        if c["check"] == "network.lldp" and c["node"] == "node1" and c["npu"] == 0
    )
    assert lldp["evidence"]["lldp"]["switch"] == SWITCH


# -- odd numbers: one host's odd output never stops the others --------------------------------


def _with_section(transcript: str, begin: str, body: str) -> str:
    """``transcript`` with the stdout of the section whose begin line ends in ``begin`` replaced."""
    lines = transcript.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("@@") and line.endswith(f" begin {begin}"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("@@") and lines[i].endswith(" stderr"))
    return "\n".join(lines[: start + 1] + body.split("\n") + lines[end:])


ODD = {
    "sysctl key=net.core.somaxconn": "9" * 5000,
    "sysctl key=net.ipv4.ip_local_reserved_ports": "0-99999",
    "sysctl key=net.ipv4.tcp_max_syn_backlog": "65535\x00",
    "npus from=inventory": "0\n1\n" + "7" * 5000,
}


@pytest.fixture(scope="module")
def odd_node2(collected):
    desired, hosts, plan, execs = collected
    transcript = hosts["node2"].gather_stdout
    for begin, body in ODD.items():
        transcript = _with_section(transcript, begin, body)
    facts = parse_gather_output(transcript)
    return desired, {**hosts, "node2": replace(hosts["node2"], facts=facts, gather_stdout=transcript)}, plan


def test_odd_values_are_could_not_read_for_that_probe(odd_node2):
    _, hosts, _ = odd_node2
    facts = hosts["node2"].facts
    assert facts is not None and set(facts.npus) == {0, 1}
    assert not {"net.core.somaxconn", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_max_syn_backlog"} & set(
        facts.sysctl
    )
    messages = {e.probe: e.message for e in facts.errors}
    assert "a value of 5,001 characters" in messages["sysctl:net.core.somaxconn"]
    assert "'0-99999' is not within 1-65535" in messages["sysctl:net.ipv4.ip_local_reserved_ports"]
    assert "control character 0x00" in messages["sysctl:net.ipv4.tcp_max_syn_backlog"]
    assert "npus" in messages and "ValueError" in messages["npus"]


def test_plan_marks_the_odd_host_incomplete_and_plans_the_others(odd_node2):
    desired, hosts, _ = odd_node2
    plans = [diff_host(desired, name, hosts[name].facts) for name in ("node1", "node2")]
    assert not any("could not be read" in reason for reason in plans[0].incomplete)
    assert any(c.key.startswith("sysctl:") or c.key.startswith("file:") for c in plans[0].changes)
    assert any(
        "sysctl" in reason and "could not be read" in reason and "net.core.somaxconn" in reason
        for reason in plans[1].incomplete
    )
    assert not any(c.key.startswith("sysctl:net.") for c in plans[1].changes)
    text = _terminal(lambda console: console.print(changes_table(plans)))
    assert "incomplete: sysctl" in text


def test_verify_says_could_not_check_for_the_odd_host_only(odd_node2, collected):
    desired, hosts, plan = odd_node2
    results = run_checks(desired, hosts, plan, today=TODAY)
    baseline = run_checks(desired, collected[1], plan, today=TODAY)
    node1 = [r for r in results if r.node == "node1"]
    assert node1 == [r for r in baseline if r.node == "node1"]
    minimum = {r.subject: r for r in results if r.node == "node2" and r.check == "sysctl.minimum"}
    assert (
        minimum["net.core.somaxconn"].message.startswith(COULD_NOT_CHECK)
        and "5,001 characters" in minimum["net.core.somaxconn"].message
    )
    ports = next(r for r in results if r.node == "node2" and r.check == "sysctl.reserved_ports")
    assert ports.message.startswith(COULD_NOT_CHECK) and "'0-99999' is not within 1-65535" in ports.message


@pytest.mark.parametrize(
    "text, key, fragment",
    [
        ("x" * 5000, "", "a value of 5,000 characters"),
        ("1" * 25, "", "a number of 25 digits"),
        ("4096\x1b[2J", "", "control character 0x1b"),
        ("60000-60031,70000", "net.ipv4.ip_local_reserved_ports", "not within 1-65535"),
        ("abc", "net.ipv4.ip_local_reserved_ports", "not a list of reserved ports"),
    ],
)
def test_parse_proc_value_refuses_what_the_kernel_never_prints(text, key, fragment):
    with pytest.raises(UnexpectedOutput, match=fragment):
        parse_proc_value(text, key)


def test_parse_proc_value_keeps_real_values():
    assert parse_proc_value("4096\t131072\t6291456\n") == "4096 131072 6291456"
    assert parse_proc_value("\n", "net.ipv4.ip_local_reserved_ports") == ""
    assert parse_proc_value("8080,60000-60031\n", "net.ipv4.ip_local_reserved_ports") == "8080,60000-60031"
    assert parse_proc_value("18446744073709551615\n") == "18446744073709551615"


def test_junit_stays_well_formed_xml_with_the_name_spelled_out(collected):
    import xml.etree.ElementTree as ET

    from ascendprep.report.junit import render_junit

    desired, hosts, plan, _ = collected
    results = run_checks(desired, hosts, plan, today=TODAY)
    root = ET.fromstring(render_junit(results, ["node1", "node2"], desired.inventory.name))
    failure = root.find("testsuite[@name='node1']/testcase[@name='network.lldp[npu 0]']/failure")
    assert failure is not None and SWITCH_SHOWN in (failure.get("message") or "")


def test_a_huge_ping_summary_fails_that_pair_only(collected):
    from ascendprep.facts.ping import parse_ping_output

    _, hosts, _, _ = collected
    transcript = hosts["node1"].ping_stdout
    begin = next(line.split(" begin ", 1)[1] for line in transcript.split("\n") if " begin ping " in line)
    odd = _with_section(transcript, begin, f"{'9' * 5000} packets transmitted, 3 received, 0.00% packet loss")
    results = parse_ping_output(odd)
    assert len(results) == 2 and not results[0].ok and results[1].ok
    assert "no ping summary" in (results[0].error or "")


def test_a_deeply_nested_python_probe_answer_is_that_probe_s_error(collected):
    _, hosts, _, _ = collected
    transcript = _with_section(hosts["node2"].gather_stdout, "python", "[" * 100_000 + "]" * 100_000)
    facts = parse_gather_output(transcript)
    assert facts.python is None and any(e.probe == "python" for e in facts.errors)
    assert facts.hostname is not None  # the rest of the host was read
