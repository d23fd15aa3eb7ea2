"""The live progress line: counts, remaining and an ETA on a terminal; nothing at all elsewhere."""

from __future__ import annotations

import io
import json

from click.testing import CliRunner
from rich.console import Console

from ascendprep.run.progress import Progress, progress_for_terminal


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_counts_remaining_hosts_and_shows_an_eta() -> None:
    screen = io.StringIO()
    progress = Progress("reading hosts", Console(file=screen, force_terminal=True, width=160))
    progress.start(10)
    for name in ("n1", "n2", "n3"):
        progress.host_started(name)
    progress.host_finished("n1", ok=True)
    progress.host_finished("n2", ok=False)
    assert progress.summary() == "1 done · 1 failed · 1 in flight · 7 remaining"
    progress._bar.refresh()
    progress.stop()
    drawn = screen.getvalue()
    assert "reading hosts" in drawn and "7 remaining" in drawn and "ETA" in drawn


def test_a_terminal_gets_a_progress_line(monkeypatch) -> None:
    monkeypatch.delenv("TERM", raising=False)
    assert isinstance(progress_for_terminal("reading hosts", _Tty()), Progress)


def test_no_line_off_a_terminal_even_with_force_color(monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert progress_for_terminal("reading hosts", io.StringIO()) is None


def test_a_plan_into_a_pipe_prints_no_progress(tmp_path, monkeypatch) -> None:
    from ascendprep.commands.plan import plan_command

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FORCE_COLOR", "1")
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(
        "name: x\nproduct: atlas-a2\ndevice_network: {subnet: 10.20.0.0/24}\n"
        "ssh: {port: 1, connect_timeout: 3, known_hosts: known_hosts}\nnodes: [{name: 'n[1-3]', host: '127.0.0.[1-3]'}]\n"
    )
    outcome = CliRunner().invoke(plan_command, [str(inventory), "--format", "json"])
    assert outcome.exit_code == 1
    assert len(json.loads(outcome.stdout)["hosts"]) == 3
    assert "remaining" not in outcome.stderr and "ETA" not in outcome.stderr and "\x1b" not in outcome.stderr
