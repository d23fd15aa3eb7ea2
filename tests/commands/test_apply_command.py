"""``run_apply`` with the hosts replaced by recorded facts: what is refused before anything runs,
and the journal's life (written first, intent before the scripts, finished on Ctrl-C and SIGTERM,
kept when the report crashes). The same paths against real hosts: tests/e2e."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendprep.apply.script import StepResult
from ascendprep.base import exitcodes
from ascendprep.commands.apply import apply_command as apply_cli
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import ManagedFile
from ascendprep.inventory.load import load_inventory
from ascendprep.plan.changes import Change, SetSysctl, WriteFile
from ascendprep.plan.diff import diff_host
from ascendprep.plan.planfile import from_host_plans, read_plan, write_plan
from ascendprep.run import apply as apply_command
from ascendprep.run.fanout import HostOutcome
from ascendprep.run.hosts import AppliedHost, Gathered
from tests.plan.test_plan_diff import INVENTORY, converged_facts

MANAGED = ["file:/etc/ascendprep/env.sh", "file:/etc/ascendprep/set_env.sh", "file:/etc/ascendprep/rank_table.json"]
LOW_SYSCTL = {
    "net.core.somaxconn": "4096",
    "net.ipv4.tcp_max_syn_backlog": "65535",
    "net.ipv4.ip_local_reserved_ports": "60000-60031",
}


class FakeHosts:
    """Stands in for SSH: every node has ``facts``; ``on_apply`` plays the apply scripts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, facts: dict[str, Any], on_apply) -> None:
        self.facts = facts
        self.on_apply = on_apply
        self.gathered: list[str] = []
        self.applied: dict[str, list[Change]] = {}
        #: Per host, the sections of the units apply asked to re-read (None: every unit).
        self.reread: dict[str, Any] = {}

        @contextmanager
        def session(*args, **kwargs):
            yield object()

        def gather(session, inventory, progress=None, only=None, phase="verify", units=None):
            names = [n.name for n in inventory.nodes if only is None or n.name in only]
            self.gathered += names
            self.reread = {
                n: None if units is None else [u.section for u in units[n] if phase in u.phases] for n in names
            }
            return {n: HostOutcome(n, Gathered(self.facts[n], "", "", 0.1)) for n in names}

        def apply(session, changes_by_host, tools, progress=None):
            self.applied = {k: list(v) for k, v in changes_by_host.items() if v}
            return self.on_apply(self.applied)

        monkeypatch.setattr(apply_command, "open_session", session)
        monkeypatch.setattr(apply_command, "gather_facts", gather)
        monkeypatch.setattr(apply_command, "apply_changes", apply)


def all_ok(changes_by_host: dict[str, list[Change]]) -> dict[str, HostOutcome[AppliedHost]]:
    return {
        name: HostOutcome(name, AppliedHost({c.key: StepResult(c.key, 0, "ok") for c in changes}, 0, "", False))
        for name, changes in changes_by_host.items()
    }


@pytest.fixture()
def planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An inventory, its plan (somaxconn low and no env files on n1), and the facts that go with them."""
    monkeypatch.chdir(tmp_path)
    inventory_path = tmp_path / "inventory.yaml"
    inventory_path.write_text(yaml.safe_dump(INVENTORY))
    state = build_desired(load_inventory(inventory_path))
    absent = {path.removeprefix("file:"): ManagedFile(path.removeprefix("file:"), False) for path in MANAGED}
    facts = {
        "n1": converged_facts(state, "n1", sysctl=dict(LOW_SYSCTL), managed_files=absent),
        "n2": converged_facts(state, "n2"),
    }
    plans = [diff_host(state, name, facts[name]) for name in ("n1", "n2")]
    plan_path = tmp_path / ".ascendprep" / "plan.json"
    write_plan(from_host_plans(inventory_path, "t", plans), plan_path)
    return plan_path, inventory_path, facts


def edit_plan(plan_path: Path, edit) -> None:
    data = json.loads(plan_path.read_text())
    edit(data)
    plan_path.write_text(json.dumps(data))


def journals(plan_path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((plan_path.parent / "journal").glob("apply-*.json"))]


def _n1_change(data: dict[str, Any], kind: str, target: str) -> dict[str, Any]:
    host = next(h for h in data["hosts"] if h["node"] == "n1")
    return next(c for c in host["changes"] if (c["kind"], c["target"]) == (kind, target))


def test_a_change_turned_into_another_file_refuses_the_whole_plan(planned, monkeypatch, capsys):
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    cron = {
        "kind": "file",
        "target": "/etc/cron.d/x",
        "before": None,
        "after": "0" * 64,
        "text": "/etc/cron.d/x: create",
    }
    edit_plan(plan_path, lambda d: _n1_change(d, "sysctl", "net.core.somaxconn").update(cron))
    code = apply_command.run_apply(plan_path, False, None)
    assert code == exitcodes.FAILED
    assert hosts.applied == {}
    err = capsys.readouterr().err
    assert "holds changes that this inventory does not produce" in err
    assert "n1: file:/etc/cron.d/x: not something ascendprep manages on this host" in err
    journal = journals(plan_path)[-1]
    assert journal["status"] == "refused" and journal["hosts"] == []


def test_the_fresh_change_runs_not_the_saved_one(planned, monkeypatch):
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    [change] = [c for c in hosts.applied["n1"] if c.key == "sysctl:net.core.somaxconn"]
    assert change == SetSysctl("n1", "4096", "net.core.somaxconn", "65535")
    [env] = [c for c in hosts.applied["n1"] if c.key == "file:/etc/ascendprep/env.sh"]
    assert isinstance(env, WriteFile) and env.content and env.content.startswith("# Managed by ascendprep")


def test_a_plan_naming_a_node_outside_the_inventory_is_refused(planned, monkeypatch, capsys):
    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)

    def add_intruder(data):
        intruder = json.loads(json.dumps(data["hosts"][0]))
        intruder.update(node="evil", address="203.0.113.9")
        for change in intruder["changes"]:
            change["node"] = "evil"
        data["hosts"].append(intruder)

    edit_plan(plan_path, add_intruder)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.FAILED
    assert hosts.gathered == [] and hosts.applied == {}
    err = capsys.readouterr().err
    assert "hosts[2]: 'evil' is not a node of the inventory" in err


def test_a_plan_host_at_another_address_is_refused(planned, monkeypatch, capsys):
    plan_path, _, facts = planned
    FakeHosts(monkeypatch, facts, all_ok)
    edit_plan(plan_path, lambda d: d["hosts"][0].update(address="203.0.113.9"))
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.FAILED
    assert "n1: the plan says address '203.0.113.9', the inventory 10.0.0.11" in capsys.readouterr().err


def test_the_inventory_must_hash_to_the_plans(planned, monkeypatch, tmp_path, capsys):
    plan_path, inventory_path, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**INVENTORY, "nodes": [{"name": "x1", "host": "198.51.100.1"}]}))
    # --inventory: another file than the plan's is refused
    assert apply_command.run_apply(plan_path, False, None, inventory_path=other) == exitcodes.FAILED
    assert f"{other} is not the inventory this plan was made from" in capsys.readouterr().err
    # a plan pointed at another inventory (its hash left as it was) is refused
    edit_plan(plan_path, lambda d: d["inventory"].update(path=str(other)))
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.FAILED
    assert "changed since this plan was made" in capsys.readouterr().err
    assert hosts.gathered == []
    # --inventory naming the right file wins over the path in the plan
    assert apply_command.run_apply(plan_path, False, None, inventory_path=inventory_path) == exitcodes.OK
    assert hosts.gathered == ["n1"]


def test_the_journal_holds_the_intent_before_any_script_runs(planned, monkeypatch):
    plan_path, _, facts = planned
    seen: dict[str, Any] = {}

    def apply(changes_by_host):
        seen.update(journals(plan_path)[-1])
        return all_ok(changes_by_host)

    FakeHosts(monkeypatch, facts, apply)
    old = os.umask(0)
    try:
        assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    finally:
        os.umask(old)
    assert seen["status"] == "applying"
    assert [(h["node"], h["status"]) for h in seen["hosts"]] == [("n1", "pending")]
    assert [c["key"] for c in seen["hosts"][0]["intent"]] == ["sysctl:net.core.somaxconn", *MANAGED]
    # machine values and words, no file content: env.sh's change also names the variables it sets
    assert all(
        set(c) - {"variables"} == {"kind", "node", "target", "before", "after", "text", "key"}
        for c in seen["hosts"][0]["intent"]
    )
    assert [c["target"] for c in seen["hosts"][0]["intent"] if "variables" in c] == ["/etc/ascendprep/env.sh"]
    [path] = (plan_path.parent / "journal").glob("apply-*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    final = json.loads(path.read_text())
    assert final["status"] == "finished" and final["hosts"][0]["status"] == "done"
    assert [s["rc"] for s in final["hosts"][0]["steps"]] == [0, 0, 0, 0]
    assert stat.S_IMODE(plan_path.stat().st_mode) == 0o600 and read_plan(plan_path).applied_at


def test_a_crash_in_the_report_does_not_lose_the_journal(planned, monkeypatch):
    plan_path, _, facts = planned
    FakeHosts(monkeypatch, facts, all_ok)

    def broken_table(rows):
        raise RuntimeError("report bug")

    monkeypatch.setattr(apply_command, "apply_table", broken_table)
    with pytest.raises(RuntimeError):
        apply_command.run_apply(plan_path, False, None)
    journal = journals(plan_path)[-1]
    assert journal["status"] == "finished" and journal["hosts"][0]["status"] == "done"
    assert [s["key"] for s in journal["hosts"][0]["steps"]] == ["sysctl:net.core.somaxconn", *MANAGED]


def test_ctrl_c_while_applying_finishes_the_journal(planned, monkeypatch, capsys):
    plan_path, _, facts = planned

    def interrupted(changes_by_host):
        raise KeyboardInterrupt

    FakeHosts(monkeypatch, facts, interrupted)
    assert apply_command.run_apply(plan_path, False, None) == 130
    journal = journals(plan_path)[-1]
    assert (journal["status"], journal["detail"]) == ("interrupted", "Ctrl-C")
    assert journal["hosts"][0]["status"] == "unknown" and journal["finished_at"]
    assert "journal:" in capsys.readouterr().err


def test_sigterm_while_applying_finishes_the_journal(planned, monkeypatch):
    plan_path, _, facts = planned

    def terminated(changes_by_host):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this
        raise AssertionError("SIGTERM did not stop apply")

    FakeHosts(monkeypatch, facts, terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert apply_command.run_apply(plan_path, False, None) == 143
    assert signal.getsignal(signal.SIGTERM) is before
    journal = journals(plan_path)[-1]
    assert (journal["status"], journal["detail"]) == ("interrupted", "SIGTERM")
    assert journal["hosts"][0]["status"] == "unknown"


def test_busy_tries_and_tool_text_are_reported_as_text(planned, monkeypatch, capsys):
    plan_path, _, facts = planned

    def busy(changes_by_host):
        steps = {c.key: StepResult(c.key, 0, "ok [/home/x/ip.c:553]", 3) for c in changes_by_host["n1"]}
        return {"n1": HostOutcome("n1", AppliedHost(steps, 0, "", False))}

    FakeHosts(monkeypatch, facts, busy)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    out = capsys.readouterr().out
    assert "[/home/x/ip.c:553]" in out and "after 3 tries: hccn_tool was busy" in out
    assert journals(plan_path)[-1]["hosts"][0]["steps"][0]["tries"] == 3


def test_hosts_pattern_applies_only_the_named_hosts_of_the_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    inventory_path = tmp_path / "inventory.yaml"
    inventory_path.write_text(yaml.safe_dump(INVENTORY))
    state = build_desired(load_inventory(inventory_path))
    facts = {name: converged_facts(state, name, sysctl=dict(LOW_SYSCTL)) for name in ("n1", "n2")}
    plan_path = tmp_path / "plan.json"
    write_plan(
        from_host_plans(inventory_path, "t", [diff_host(state, name, facts[name]) for name in ("n1", "n2")]), plan_path
    )
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None, hosts_pattern="n2") == exitcodes.OK
    assert list(hosts.applied) == ["n2"] and hosts.gathered == ["n2"]
    assert "--hosts: n1 of the plan left out" in capsys.readouterr().err


def test_hosts_pattern_naming_no_node_refuses_apply(planned, monkeypatch):
    import click

    plan_path, _, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    with pytest.raises(click.BadParameter, match="names no node"):
        apply_command.run_apply(plan_path, False, None, hosts_pattern="gpu[1-4]")
    assert hosts.gathered == [] and journals(plan_path)[-1]["status"] == "refused"


# ------------------------------------------------------------------ who wrote the plan and its inventory

OTHER_UID = 65534  # nobody


def _give_away(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, OTHER_UID, OTHER_UID)


def _apply_cli(*args: str):
    from click.testing import CliRunner

    return CliRunner().invoke(apply_cli, list(args))


def test_a_plan_of_another_user_is_refused_unless_the_inventory_is_named(planned, monkeypatch):
    """Whoever wrote the plan would choose the inventory root pushes to the fleet; with
    --inventory the plan only selects and confirms what the caller's inventory produces."""
    plan_path, inventory_path, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    _give_away(plan_path)
    outcome = _apply_cli(str(plan_path))
    assert outcome.exit_code == exitcodes.INVALID, outcome.output
    assert f"{plan_path}: owned by " in outcome.output and f"(uid {OTHER_UID}), mode 0600" in outcome.output
    assert "owned by you or root" in outcome.output and "Traceback" not in outcome.output
    assert hosts.gathered == [] and journals(plan_path) == []
    outcome = _apply_cli(str(plan_path), "--inventory", str(inventory_path))
    assert outcome.exit_code == exitcodes.OK, outcome.output
    assert hosts.applied and journals(plan_path)[-1]["status"] == "finished"


def test_the_inventory_a_plan_names_is_held_to_the_same_rule(planned, monkeypatch):
    plan_path, inventory_path, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    _give_away(inventory_path)
    outcome = _apply_cli(str(plan_path))
    assert outcome.exit_code == exitcodes.INVALID, outcome.output
    assert f"{inventory_path}: owned by " in outcome.output and "--inventory" in outcome.output
    assert hosts.gathered == [] and journals(plan_path)[-1]["status"] == "refused"
    # named by the caller, the same file is the caller's choice
    assert _apply_cli(str(plan_path), "--inventory", str(inventory_path)).exit_code == exitcodes.OK


def test_the_plans_inventory_in_a_folder_others_can_write_is_refused(planned, monkeypatch, tmp_path):
    plan_path, inventory_path, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    shared = tmp_path / "shared"
    shared.mkdir()
    moved = shared / "inventory.yaml"
    inventory_path.rename(moved)
    edit_plan(plan_path, lambda d: d["inventory"].update(path=str(moved)))
    shared.chmod(0o777)
    outcome = _apply_cli(str(plan_path))
    assert outcome.exit_code == exitcodes.INVALID, outcome.output
    assert f"its folder {shared} is writable by its group and all users without the sticky bit" in outcome.output
    assert hosts.gathered == []


def test_a_journal_folder_of_another_user_is_refused_even_with_the_inventory_named(planned, monkeypatch):
    plan_path, inventory_path, facts = planned
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    journal_dir = plan_path.parent / "journal"
    journal_dir.mkdir(mode=0o700)
    _give_away(journal_dir)
    outcome = _apply_cli(str(plan_path), "--inventory", str(inventory_path))
    assert outcome.exit_code == exitcodes.INVALID, outcome.output
    assert f"{journal_dir}: owned by " in outcome.output and "journal folder" in outcome.output
    assert hosts.gathered == [] and list(journal_dir.iterdir()) == []
