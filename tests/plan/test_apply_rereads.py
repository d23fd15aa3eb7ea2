"""Apply re-reads only what its planned changes depend on: the areas (NPUs, kernel settings,
managed files, firewall) of each host's changes, judged against the plan's ``before`` values."""

from __future__ import annotations

import dataclasses

import pytest

from ascendprep.base import exitcodes
from ascendprep.base.paths import SYSCTL_FILE
from ascendprep.facts.model import NpuFacts
from ascendprep.facts.units import by_section
from ascendprep.plan.changes import DisableFirewall, SetNpuTls, SetSysctl, WriteFile
from ascendprep.plan.diff import AREAS, area_of
from ascendprep.plan.reads import AREA_SECTIONS, units_for_areas
from ascendprep.run import apply as apply_command
from tests.commands.test_apply_command import FakeHosts, all_ok, planned  # noqa: F401 (fixture)


def test_every_change_kind_has_an_area_and_every_area_names_real_units():
    assert area_of(SetNpuTls("n1", None, 3, 0)) == "npu"
    assert area_of(SetSysctl("n1", "1", "net.core.somaxconn", "2")) == "sysctl"
    assert area_of(WriteFile("n1", None, SYSCTL_FILE, "0" * 64)) == "sysctl"  # persisted with the values
    assert area_of(WriteFile("n1", None, "/etc/ascendprep/env.sh", "0" * 64)) == "files"
    assert area_of(DisableFirewall("n1", "active", "ufw")) == "firewall"
    assert set(AREA_SECTIONS) == set(AREAS)
    table = by_section()
    assert all(section in table for sections in AREA_SECTIONS.values() for section in sections)
    assert [u.section for u in units_for_areas({"sysctl"})] == ["settings", "sysctl", "file.sysctl"]
    with pytest.raises(ValueError, match="unknown diff areas: npus"):
        units_for_areas({"npus"})


def test_apply_re_reads_only_the_areas_of_the_planned_changes(planned, monkeypatch):
    plan_path, _, facts = planned  # n1: a low sysctl and missing managed files; n2: converged
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    assert hosts.gathered == ["n1"]  # n2 has nothing planned: not contacted
    sections = hosts.reread["n1"]
    assert sections == ["settings", "sysctl", "file.sysctl", "managed", "file.env"]
    assert not [s for s in sections if s.startswith(("hccn.", "npu", "firewall.", "version."))]


def test_a_drift_outside_the_planned_areas_does_not_make_the_plan_stale(planned, monkeypatch):
    plan_path, _, facts = planned
    moved = dict(facts["n1"].npus)
    moved[0] = NpuFacts(devid=0, ip="10.99.0.1", netmask="255.255.255.0")  # changed after planning
    facts["n1"] = dataclasses.replace(facts["n1"], npus=moved)
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.OK
    assert {c.key for c in hosts.applied["n1"]} >= {"sysctl:net.core.somaxconn", "file:/etc/ascendprep/env.sh"}
    assert not [c for c in hosts.applied["n1"] if area_of(c) == "npu"]  # nothing the user did not see


def test_a_drift_inside_a_planned_area_still_makes_the_plan_stale(planned, monkeypatch, capsys):
    plan_path, _, facts = planned
    facts["n1"].sysctl["net.core.somaxconn"] = "8192"  # was 4096 at planning
    hosts = FakeHosts(monkeypatch, facts, all_ok)
    assert apply_command.run_apply(plan_path, False, None) == exitcodes.FAILED
    assert hosts.applied == {}
    assert "n1: sysctl:net.core.somaxconn: was 4096 at planning, is now 8192" in capsys.readouterr().err
